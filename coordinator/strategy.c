/*
 * The strategy: connections to every ps and worker, and variable creation,
 * round-robin over ps tasks in creation order (TensorFlow's
 * _create_variable_round_robin: the counter advances once per variable).
 * A directory of created variables makes re-creation idempotent and keeps a
 * name on the ps it was first placed on. The lock guards the counter, the
 * directory and the attached coordinator; RPCs run without it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "common/variable_impl.h"
#include "coordinator/internal.h"

static void
strategy_worker_state(void *arg, bool up, uint64_t incarnation)
{
	worker_link       *link = arg;
	pasco_coordinator *c;
	pthread_mutex_lock(&link->s->mu);
	c = link->s->coord;
	if (c != NULL) {
		/* Under the strategy lock so the coordinator cannot detach and
		 * be freed meanwhile; the callee takes only the queue lock. */
		pasci_coordinator_worker_state(
		    c, link->index, up, incarnation);
	}
	pthread_mutex_unlock(&link->s->mu);
}

static int
strategy_connect(pasco_strategy *s, const pasco_cluster *cluster)
{
	int rv;
	for (size_t i = 0; i < s->nps; i++) {
		rv = pasci_rpc_client_open(&s->ps[i],
		    pasco_cluster_url(cluster, PASCO_ROLE_PS, i), NULL, NULL);
		if (rv != 0) {
			return rv;
		}
	}
	for (size_t i = 0; i < s->nworkers; i++) {
		s->links[i] = (worker_link){s, i};
		rv          = pasci_rpc_client_open(&s->workers[i],
		             pasco_cluster_url(cluster, PASCO_ROLE_WORKER, i),
		             strategy_worker_state, &s->links[i]);
		if (rv != 0) {
			return rv;
		}
	}
	return PASCO_OK;
}

static int
strategy_wait(pasco_strategy *s, int64_t timeout_ms)
{
	int64_t deadline = pasci_now_ms() + timeout_ms;
	for (size_t i = 0; i < s->nps + s->nworkers; i++) {
		bool              is_ps = i < s->nps;
		pasci_rpc_client *cl =
		    is_ps ? s->ps[i] : s->workers[i - s->nps];
		int64_t left = deadline - pasci_now_ms();
		if (pasci_rpc_client_wait_up(cl, left > 0 ? left : 1) != 0) {
			pasci_fmt(s->error, sizeof(s->error),
			    "%s %zu at %s did "
			    "not answer within %lld ms",
			    is_ps ? "ps" : "worker", is_ps ? i : i - s->nps,
			    pasci_rpc_client_url(cl), (long long) timeout_ms);
			return PASCO_ETIMEDOUT;
		}
	}
	return PASCO_OK;
}

int
pasco_strategy_create(pasco_strategy **out, const pasco_cluster *cluster,
    const pasco_strategy_options *opts)
{
	pasco_strategy *s;
	char            err[512];
	int             rv;

	*out = NULL;
	if (cluster == NULL ||
	    pasco_cluster_validate(cluster, err, sizeof(err)) != 0) {
		pasci_log(PASCI_LOG_ERROR, "invalid cluster: %s",
		    cluster == NULL ? "NULL" : err);
		return PASCO_EINVAL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->nps             = pasco_cluster_count(cluster, PASCO_ROLE_PS);
	s->nworkers        = pasco_cluster_count(cluster, PASCO_ROLE_WORKER);
	s->call_timeout_ms = opts != NULL && opts->call_timeout_ms > 0
	                         ? opts->call_timeout_ms
	                         : 60000;
	s->ps              = calloc(s->nps, sizeof(*s->ps));
	s->workers         = calloc(s->nworkers, sizeof(*s->workers));
	s->links           = calloc(s->nworkers, sizeof(*s->links));
	rv                 = PASCO_ENOMEM;
	if (s->ps != NULL && s->workers != NULL && s->links != NULL &&
	    (rv = strategy_connect(s, cluster)) == 0) {
		rv = strategy_wait(
		    s, opts != NULL && opts->connect_timeout_ms > 0
		           ? opts->connect_timeout_ms
		           : 60000);
	}
	if (rv != 0) {
		pasci_log(PASCI_LOG_ERROR, "%s",
		    s->error[0] ? s->error : "cannot connect to the cluster");
		pasco_strategy_destroy(s);
		return rv;
	}
	*out = s;
	return PASCO_OK;
}

const char *
pasco_strategy_error(const pasco_strategy *s)
{
	return s->error;
}

size_t
pasco_strategy_num_ps(const pasco_strategy *s)
{
	return s->nps;
}

size_t
pasco_strategy_num_workers(const pasco_strategy *s)
{
	return s->nworkers;
}

void
pasco_strategy_destroy(pasco_strategy *s)
{
	if (s == NULL) {
		return;
	}
	for (size_t i = 0; s->workers != NULL && i < s->nworkers; i++) {
		pasci_rpc_client_close(s->workers[i]);
	}
	for (size_t i = 0; s->ps != NULL && i < s->nps; i++) {
		pasci_rpc_client_close(s->ps[i]);
	}
	while (s->vars != NULL) {
		var_entry *v = s->vars;
		s->vars      = v->next;
		pasco_tensor_release(v->spec);
		free(v->name);
		free(v);
	}
	free(s->ps);
	free(s->workers);
	free(s->links);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Picks the ps for name: where it already is, or the next in turn. */
static int
strategy_place(pasco_strategy *s, const char *name, const pasco_tensor *init,
    int32_t *task, bool *known)
{
	char have[64], want[64];
	pthread_mutex_lock(&s->mu);
	for (var_entry *v = s->vars; v != NULL; v = v->next) {
		if (strcmp(v->name, name) == 0) {
			bool same = pasco_tensor_same_spec(v->spec, init);
			*task     = v->ps_task;
			*known    = true;
			if (!same) {
				pasci_fmt(s->error, sizeof(s->error),
				    "variable "
				    "'%s' already exists as %s; cannot create "
				    "it "
				    "as %s",
				    name,
				    pasco_tensor_spec_string(v->spec->dtype,
				        v->spec->rank, v->spec->shape, have,
				        sizeof(have)),
				    pasco_tensor_spec_string(init->dtype,
				        init->rank, init->shape, want,
				        sizeof(want)));
			}
			pthread_mutex_unlock(&s->mu);
			return same ? PASCO_OK : PASCO_EEXIST;
		}
	}
	*known = false;
	*task  = (int32_t) (s->var_count++ % s->nps);
	pthread_mutex_unlock(&s->mu);
	return PASCO_OK;
}

static void
strategy_remember(pasco_strategy *s, const char *name, int32_t task,
    const pasco_tensor *init)
{
	var_entry *v = calloc(1, sizeof(*v));
	if (v == NULL || (v->name = pasci_strdup(name)) == NULL ||
	    pasco_tensor_alloc(
	        &v->spec, init->dtype, init->rank, init->shape) != 0) {
		if (v != NULL) {
			free(v->name);
		}
		free(v);
		return; /* only idempotence checks are lost */
	}
	v->ps_task = task;
	pthread_mutex_lock(&s->mu);
	v->next = s->vars;
	s->vars = v;
	pthread_mutex_unlock(&s->mu);
}

int
pasco_variable_create(pasco_variable **out, pasco_strategy *s,
    const char *name, const pasco_tensor *initial_value)
{
	pasci_wire_builder b;
	int32_t            task;
	bool               known;
	char               err[512];
	int                rv;

	*out = NULL;
	if (name == NULL || *name == 0 || initial_value == NULL) {
		pasci_fmt(s->error, sizeof(s->error),
		    "a variable needs a name "
		    "and an initial value");
		return PASCO_EINVAL;
	}
	if ((rv = strategy_place(s, name, initial_value, &task, &known)) !=
	    0) {
		return rv;
	}
	pasci_wire_builder_init(&b, PASCO__WIRE__METHOD__VAR_CREATE);
	b.hdr.name = (char *) name;
	pasci_wire_add_tensor(&b, initial_value, NULL);
	rv = pasci_rpc_call(
	    s->ps[task], &b, s->call_timeout_ms, NULL, err, sizeof(err));
	pasci_wire_builder_fini(&b);
	if (rv != 0) {
		pthread_mutex_lock(&s->mu);
		pasci_fmt(s->error, sizeof(s->error),
		    "creating '%s' on ps %d: "
		    "%s",
		    name, task, err);
		pthread_mutex_unlock(&s->mu);
		return rv;
	}
	if (!known) {
		strategy_remember(s, name, task, initial_value);
	}
	return pasci_variable_new(out, name, task, initial_value->dtype,
	    initial_value->rank, initial_value->shape, s->ps[task],
	    s->call_timeout_ms);
}
