/*
 * The ps server: answers variable RPCs from the store. Runs on the RPC
 * server's handler threads; all shared state is in the store.
 */
#include "ps_server.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "address.h"
#include "budget.h"
#include "bulk.h"
#include "checkpoint_shard.h"
#include "fileio.h"
#include "pasco/initializer.h"
#include "ps_dynamic.h"
#include "store.h"
#include "tensor_impl.h"
#include "tls.h"
#include "util.h"

struct ps_server {
	pasci_rpc_server  *rpc;
	pasci_bulk_server *bulk; /* NULL when not on TCP */
	ps_store          *store;
	pasci_dyn_set     *dyn;   /* dynamic embedding tables */
	char ckpt_root[PATH_MAX]; /* resolved; "" refuses checkpoints */
	int  ckpt_fd; /* ckpt_root opened once, or -1: every write walks
	               * from it, never resolving the root's path again */
	size_t       max_var_bytes; /* PASCO_MAX_VARIABLE_MB; read only */
	pasci_budget budget; /* PASCO_MAX_PS_MB: what the store and dyn hold */
};

/*
 * Request handlers, one per method, all of the type ps_method_fn and all
 * dispatched through ps_methods[] by ps_handle. Each runs on an RPC handler
 * thread with no lock held (the store takes its own) and returns the reply,
 * which the RPC server sends and frees; NULL (only when encoding the reply
 * failed) drops the request and the caller times out.
 */
typedef nng_msg *(*ps_method_fn)(ps_server *ps, const pasci_wire_msg *req);

typedef struct ps_method {
	const char  *name; /* the operation, as error replies name it */
	ps_method_fn handle;
} ps_method;

static const char *ps_method_name(pasci_method m);

/* The reply to a store call: its status, with err as the detail. */
static nng_msg *
status_reply(int rv, const char *err)
{
	return pasci_wire_status_reply(rv, "%s", err);
}

/* An EINVAL reply unless req carries exactly one tensor, else NULL. */
static nng_msg *
check_one_tensor(const pasci_wire_msg *req)
{
	if (req->ntensors == 1) {
		return NULL;
	}
	return pasci_wire_status_reply(PASCO_EINVAL,
	    "%s of '%s' needs exactly one tensor, got %zu",
	    ps_method_name(req->hdr->method), req->hdr->name, req->ntensors);
}

typedef struct read_ctx {
	nng_msg *reply;
} read_ctx;

/* Encodes the value under the variable's lock: one copy, no torn read. */
static int
encode_value(void *arg, const pasco_tensor *value)
{
	read_ctx          *r = arg;
	pasci_wire_builder b;
	int                rv;
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
	pasci_wire_add_tensor(&b, value, NULL);
	rv = pasci_wire_encode(&b, &r->reply);
	pasci_wire_builder_fini(&b);
	return rv;
}

static nng_msg *
ps_read(ps_server *ps, const pasci_wire_msg *req)
{
	read_ctx r = {NULL};
	char     err[512];
	int      rv = pasci_store_var_with(
	         ps->store, req->hdr->name, encode_value, &r, err, sizeof(err));
	if (rv != 0) {
		return status_reply(rv, err);
	}
	return r.reply;
}

static nng_msg *
ps_gather(ps_server *ps, const pasci_wire_msg *req)
{
	read_ctx r = {NULL};
	char     err[512];
	int      rv;
	if (req->ntensors != 1) {
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "gather from '%s' "
		    "needs one tensor of row ids",
		    req->hdr->name);
	}
	rv = pasci_store_var_gather(ps->store, req->hdr->name, req->tensors[0],
	    encode_value, &r, err, sizeof(err));
	return rv != 0 ? status_reply(rv, err) : r.reply;
}

/* VAR_CREATE from an initializer: the shard's values computed here (the
 * spec was checked and admitted by ps_create), charged to the budget
 * before they are allocated. */
static int
create_from_init(ps_server *ps, const pasci_wire_msg *req, size_t nbytes,
    char *err, size_t errlen)
{
	const pasci_wire_init *w    = req->hdr->init;
	const pasci_wire_spec *spec = req->hdr->spec;
	pasco_tensor          *t;
	int                    rv;

	if ((rv = pasci_store_charge(
	         ps->store, req->hdr->name, nbytes, err, errlen)) != 0) {
		return rv;
	}
	if ((rv = pasco_tensor_alloc(
	         &t, spec->dtype, spec->rank, spec->shape)) != 0) {
		pasci_fmt(err, errlen, "out of memory creating '%s'",
		    req->hdr->name);
	} else if ((rv = pasco_initializer_fill(&w->init, t, spec->rank,
	                w->full_shape, w->row_offset)) != 0) {
		pasci_fmt(err, errlen,
		    "create '%s': the initializer (kind %d) "
		    "does not fit the shard",
		    req->hdr->name, (int) w->init.kind);
	} else { /* the charge is the variable's now, or given back */
		rv = pasci_store_var_adopt_constrained(
		    ps->store, req->hdr->name, t, &w->constraint, err, errlen);
		pasco_tensor_release(t);
		return rv;
	}
	pasco_tensor_release(t);
	pasci_budget_release(
	    &ps->budget, pasci_store_cost(req->hdr->name, nbytes));
	return rv;
}

/* Whether a create of name as spec may go on, before any memory is taken
 * for it: PASCO_OK with *exists when name already has this spec (nothing
 * to do); PASCO_EEXIST for another spec; PASCO_EINVAL when the variable
 * is over this ps's limit. */
static int
create_admits(ps_server *ps, const char *name, const pasci_wire_spec *spec,
    bool *exists, size_t *nbytes_out, char *err, size_t errlen)
{
	int64_t count;
	size_t  nbytes = 0;
	char    what[64];
	int     rv = pasci_store_var_exists(ps->store, name, spec->dtype,
	        spec->rank, spec->shape, exists, err, errlen);
	if (rv != 0 || *exists) {
		return rv;
	}
	pasci_tensor_check_spec(
	    spec->dtype, spec->rank, spec->shape, &count, &nbytes);
	*nbytes_out = nbytes;
	if (nbytes > ps->max_var_bytes) {
		pasci_fmt(err, errlen,
		    "create '%s': %s is %zu bytes, over this ps's limit of "
		    "%zu MB per variable (PASCO_MAX_VARIABLE_MB; partition "
		    "the variable or raise the limit)",
		    name,
		    pasco_tensor_spec_string(spec->dtype, spec->rank,
		        spec->shape, what, sizeof(what)),
		    nbytes, ps->max_var_bytes >> 20);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

/* VAR_CREATE: from an initializer (no tensor) or from one initial value.
 * The name is looked up and the size checked before anything is
 * allocated: an existing name costs nothing, a huge spec is refused. */
static nng_msg *
ps_create(ps_server *ps, const pasci_wire_msg *req)
{
	char            err[512] = "";
	bool            from_init, exists = false;
	pasci_wire_spec spec;
	size_t          nbytes = 0;
	nng_msg        *bad;
	int             rv;

	if ((from_init = req->hdr->init != NULL && req->ntensors == 0)) {
		if (pasci_wire_spec_check(req->hdr->spec) != 0 ||
		    req->hdr->init->full_rank != req->hdr->spec->rank) {
			return pasci_wire_status_reply(PASCO_EINVAL,
			    "create '%s': invalid spec for an initializer",
			    req->hdr->name);
		}
		spec = *req->hdr->spec;
	} else if ((bad = check_one_tensor(req)) != NULL) {
		return bad;
	} else {
		spec.dtype = req->tensors[0]->dtype;
		spec.rank  = req->tensors[0]->rank;
		memcpy(spec.shape, req->tensors[0]->shape, sizeof(spec.shape));
	}
	rv = create_admits(
	    ps, req->hdr->name, &spec, &exists, &nbytes, err, sizeof(err));
	if (rv != 0 || exists) {
		return status_reply(rv, err);
	}
	rv = from_init ? create_from_init(ps, req, nbytes, err, sizeof(err))
	               : pasci_store_var_create(ps->store, req->hdr->name,
	                     req->tensors[0], err, sizeof(err));
	return status_reply(rv, err);
}

static nng_msg *
update_with(ps_server *ps, const pasci_wire_msg *req, ps_update op)
{
	char     err[512] = "";
	nng_msg *bad;
	int      rv;
	if ((bad = check_one_tensor(req)) != NULL) {
		return bad;
	}
	rv = pasci_store_var_update(
	    ps->store, req->hdr->name, op, req->tensors[0], err, sizeof(err));
	return status_reply(rv, err);
}

static nng_msg *
ps_assign(ps_server *ps, const pasci_wire_msg *req)
{
	return update_with(ps, req, PS_ASSIGN);
}

static nng_msg *
ps_assign_add(ps_server *ps, const pasci_wire_msg *req)
{
	return update_with(ps, req, PS_ASSIGN_ADD);
}

static nng_msg *
ps_apply(ps_server *ps, const pasci_wire_msg *req)
{
	char     err[512] = "";
	nng_msg *bad;
	int      rv;
	if ((bad = check_one_tensor(req)) != NULL) {
		return bad;
	}
	if (req->hdr->opt == NULL) {
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "apply to '%s' without an optimizer", req->hdr->name);
	}
	rv = pasci_store_var_apply_at(ps->store, req->hdr->name, req->hdr->opt,
	    req->tensors[0], req->hdr->step, req->hdr->sync, err, sizeof(err));
	return status_reply(rv, err);
}

static nng_msg *
ps_apply_sparse(ps_server *ps, const pasci_wire_msg *req)
{
	char err[512] = "";
	int  rv;
	if (req->ntensors != 2 || req->hdr->opt == NULL) {
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "a sparse apply to '%s' needs ids, rows and an optimizer",
		    req->hdr->name);
	}
	rv = pasci_store_var_apply_sparse_at(ps->store, req->hdr->name,
	    req->hdr->opt, req->tensors[0], req->tensors[1], req->hdr->step,
	    req->hdr->sync, err, sizeof(err));
	return status_reply(rv, err);
}

/* A reply of method m carrying only step and sync. */
static nng_msg *
step_reply(pasci_method m, int64_t step, const pasci_wire_sync *sync)
{
	pasci_wire_builder b;
	nng_msg           *reply;
	pasci_wire_builder_init(&b, m);
	b.hdr.step = step;
	b.hdr.sync = sync;
	if (pasci_wire_encode(&b, &reply) != 0) {
		reply = NULL;
	}
	pasci_wire_builder_fini(&b);
	return reply;
}

static nng_msg *
ps_fetch_add(ps_server *ps, const pasci_wire_msg *req)
{
	char            err[512] = "";
	pasci_wire_sync out      = {0};
	int64_t         value    = 0;
	int rv = pasci_store_var_fetch_add(ps->store, req->hdr->name,
	    req->hdr->step, req->hdr->sync, &value, &out.dropped, err,
	    sizeof(err));
	if (rv != 0) {
		return status_reply(rv, err);
	}
	return step_reply(PASCI_METHOD_VAR_FETCH_ADD, value, &out);
}

static nng_msg *
ps_sync_flush(ps_server *ps, const pasci_wire_msg *req)
{
	char    err[512] = "";
	int64_t n        = 0;
	int     rv = pasci_store_sync_flush(ps->store, &n, err, sizeof(err));
	(void) req;
	if (rv != 0) {
		return status_reply(rv, err);
	}
	return step_reply(PASCI_METHOD_SYNC_FLUSH, n, NULL);
}

static nng_msg *
ps_scatter_add(ps_server *ps, const pasci_wire_msg *req)
{
	char err[512] = "";
	int  rv;
	if (req->ntensors != 2) {
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "scatter_add to '%s' needs ids and rows", req->hdr->name);
	}
	rv = pasci_store_var_scatter_add(ps->store, req->hdr->name,
	    req->tensors[0], req->tensors[1], req->hdr->scale, err,
	    sizeof(err));
	return status_reply(rv, err);
}

static nng_msg *
ps_set_slots(ps_server *ps, const pasci_wire_msg *req)
{
	char err[512] = "";
	int  rv       = pasci_store_set_slots(ps->store, req->hdr->name,
            req->hdr->opt != NULL ? (pasco_optimizer_kind) req->hdr->opt->kind
	                                 : 0,
	           req->hdr->step, req->tensors, req->ntensors, err, sizeof(err));
	return status_reply(rv, err);
}

static nng_msg *
ps_save(ps_server *ps, const pasci_wire_msg *req)
{
	pasci_wire_builder b;
	nng_msg           *reply;
	char              *json = NULL, err[512];
	const char        *rel  = NULL;
	int                rv   = pasci_checkpoint_path_check(
	                     ps->ckpt_root, req->hdr->name, &rel, err, sizeof(err));
	if (rv == 0) {
		rv = pasci_checkpoint_shard_save(ps->store, ps->dyn,
		    ps->ckpt_fd, ps->ckpt_root, rel, &json, err, sizeof(err));
	}
	if (rv != 0) {
		return status_reply(rv, err);
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_CKPT_SAVE);
	b.hdr.json = json;
	if (pasci_wire_encode(&b, &reply) != 0) {
		reply = NULL;
	}
	pasci_wire_builder_fini(&b);
	free(json);
	return reply;
}

/* The methods a ps serves by number (VAR_MULTI, dynamic tables': see
 * ps_handle); test_ps_server.c checks them against net/wire.c. */
static const ps_method ps_methods[PASCI_METHOD_COUNT] = {
    [PASCI_METHOD_VAR_CREATE]       = {"create", ps_create},
    [PASCI_METHOD_VAR_READ]         = {"read", ps_read},
    [PASCI_METHOD_VAR_ASSIGN]       = {"assign", ps_assign},
    [PASCI_METHOD_VAR_ASSIGN_ADD]   = {"assign_add", ps_assign_add},
    [PASCI_METHOD_VAR_GATHER]       = {"gather", ps_gather},
    [PASCI_METHOD_VAR_SCATTER_ADD]  = {"scatter_add", ps_scatter_add},
    [PASCI_METHOD_VAR_APPLY]        = {"apply", ps_apply},
    [PASCI_METHOD_VAR_APPLY_SPARSE] = {"apply_sparse", ps_apply_sparse},
    [PASCI_METHOD_CKPT_SAVE]        = {"checkpoint save", ps_save},
    [PASCI_METHOD_VAR_SET_SLOTS]    = {"set_slots", ps_set_slots},
    [PASCI_METHOD_VAR_FETCH_ADD]    = {"fetch_add", ps_fetch_add},
    [PASCI_METHOD_SYNC_FLUSH]       = {"sync flush", ps_sync_flush},
};

#define PS_NMETHODS (sizeof(ps_methods) / sizeof(ps_methods[0]))

/* m's entry, or NULL for a method a ps does not serve (any number a
 * request may carry: the decoder does not range-check it). */
static const ps_method *
ps_method_of(pasci_method m)
{
	if ((int) m < 0 || (size_t) m >= PS_NMETHODS ||
	    ps_methods[m].handle == NULL) {
		return NULL;
	}
	return &ps_methods[m];
}

static const char *
ps_method_name(pasci_method m)
{
	const ps_method *e = ps_method_of(m);
	return e != NULL ? e->name : "an unknown method";
}

/* The most bytes the replies of one VAR_MULTI's parts take together: a
 * request is answered whole, so its replies are all held at once. Parts
 * past it are refused, saying so (client/requests.c keeps its requests
 * far under it). */
static size_t multi_floor = (size_t) 512 << 20; /* tests lower it */

void
pasci_ps_set_multi_floor(size_t bytes)
{
	multi_floor = bytes;
}

static size_t
multi_reply_max(const ps_server *ps)
{
	return ps->max_var_bytes > multi_floor ? ps->max_var_bytes
	                                       : multi_floor;
}

/* A read: a view of the value's buffer, taken under its lock (ps/store.c:
 * a write while the view is out goes to a copy), sent from its memory. */
static int
view_value(void *arg, const pasco_tensor *value)
{
	return pasci_tensor_view((pasco_tensor **) arg, value->dtype,
	    value->rank, value->shape, value->data, value->storage);
}

/* A read part's reply into b, as one message sent from two buffers: its
 * header, built here, and the value's own memory (pasci_wire_add_joined).
 * PASCO_EOUTOFRANGE, nothing added, when it would take more than room
 * bytes (*total gets how many it takes). */
static int
add_read_part(
    pasci_wire_builder *b, pasco_tensor *value, size_t room, size_t *total)
{
	pasci_wire_builder part;
	pasco_storage     *st;
	pasco_tensor      *head = NULL;
	uint8_t           *bytes;
	size_t             hlen;
	int                rv;
	pasci_wire_builder_init(&part, PASCI_METHOD_VAR_READ);
	pasci_wire_add_tensor(&part, value, NULL);
	rv = pasci_wire_encode_head(&part, 0, &bytes, &hlen, total);
	pasci_wire_builder_fini(&part);
	if (rv != 0) {
		return rv;
	}
	if (*total > room) {
		free(bytes);
		return PASCO_EOUTOFRANGE;
	}
	if ((st = pasci_storage_new(free, bytes)) == NULL) {
		free(bytes);
		return PASCO_ENOMEM;
	}
	rv = pasci_tensor_view(
	    &head, PASCO_U8, 1, (int64_t[]){(int64_t) hlen}, bytes, st);
	pasci_storage_release(st);
	if (rv == 0) {
		pasci_wire_add_joined(b, head, value);
	}
	pasco_tensor_release(head);
	return rv != 0 ? rv : b->oom ? PASCO_ENOMEM : PASCO_OK;
}

static nng_msg *ps_handle(void *arg, const pasci_wire_msg *req);

/* What part's reply takes at least, known before it runs: a gather's rows
 * (the ids asked for times a row's bytes), so that one past the room is
 * refused before it makes rows or copies them; 0 for the rest (a status
 * or a step, or a read, checked before anything is copied). */
static size_t
part_reply_floor(ps_server *ps, const pasci_wire_msg *part)
{
	pasci_dyn_table *t;
	size_t           row, n;
	if (part->hdr->method != PASCI_METHOD_VAR_GATHER ||
	    part->ntensors != 1) {
		return 0;
	}
	t   = pasci_dyn_find(ps->dyn, part->hdr->name);
	row = t != NULL
	          ? (size_t) pasci_dyn_config_of(t)->dim * sizeof(float)
	          : pasci_store_var_row_bytes(ps->store, part->hdr->name);
	n   = (size_t) part->tensors[0]->count;
	return row > 0 && n > SIZE_MAX / row ? SIZE_MAX : n * row;
}

/* Part k of a VAR_MULTI request answered: its whole reply added to b,
 * taking at most *room bytes (*room shrinks by them); a part whose reply
 * would take more is answered with an error instead, before it runs when
 * its size is known from the request (part_reply_floor). A read's value
 * is not copied (add_read_part). */
static int
multi_part(ps_server *ps, const pasci_wire_msg *req, size_t k,
    pasci_wire_builder *b, size_t *room)
{
	pasci_wire_msg part;
	pasco_tensor  *value    = NULL, *t;
	char           err[512] = "";
	nng_msg       *reply    = NULL;
	size_t         took     = 0;
	int            rv;
	if ((rv = pasci_wire_msg_part(req, k, &part, err, sizeof(err))) != 0) {
		reply = pasci_wire_status_reply(rv, "part %zu: %s", k, err);
	} else if (part_reply_floor(ps, &part) > *room) {
		rv = PASCO_EOUTOFRANGE;
	} else if (part.hdr->method == PASCI_METHOD_VAR_READ &&
	           pasci_dyn_find(ps->dyn, part.hdr->name) == NULL) {
		rv = pasci_store_var_with(ps->store, part.hdr->name,
		    view_value, &value, err, sizeof(err));
		if (rv == 0) {
			rv = add_read_part(b, value, *room, &took);
		}
		pasco_tensor_release(value);
	} else {
		reply = ps_handle(ps, &part);
	}
	pasci_wire_msg_fini(&part);
	if (rv == PASCO_EOUTOFRANGE ||
	    (reply != NULL && nng_msg_len(reply) > *room)) {
		if (reply != NULL) { /* a gather's rows, say */
			nng_msg_free(reply);
		}
		reply = pasci_wire_status_reply(PASCO_EINVAL,
		    "part %zu: the replies of one request's parts would pass "
		    "%zu bytes; send fewer of them together",
		    k, multi_reply_max(ps));
	} else if (rv != 0 && reply == NULL) {
		reply = pasci_wire_status_reply(rv, "%s", err);
	} else if (rv == 0 && reply == NULL) { /* the read part is in b */
		*room -= took;
		return PASCO_OK;
	}
	if (reply == NULL || pasci_wire_msg_view(reply, &t) != 0) {
		return PASCO_ENOMEM;
	}
	*room -= t->nbytes < *room ? t->nbytes : *room;
	pasci_wire_add_tensor(b, t, NULL);
	pasco_tensor_release(t);
	return PASCO_OK;
}

/* VAR_MULTI: each part run in order as a request of its own (one that
 * fails answers with its status; the others still run), the reply's
 * tensors their whole replies, into b. */
static int
ps_multi(ps_server *ps, const pasci_wire_msg *req, pasci_wire_builder *b)
{
	int    rv   = PASCO_OK;
	size_t room = multi_reply_max(ps);
	for (size_t k = 0; k < req->hdr->nparts && rv == 0; k++) {
		rv = multi_part(ps, req, k, b, &room);
	}
	return rv == 0 && b->oom ? PASCO_ENOMEM : rv;
}

/* The RPC server's handler (and the bulk server's, but for reads and
 * VAR_MULTI): a method a ps does not serve is answered PASCO_EINVAL,
 * naming its number. */
static nng_msg *
ps_handle(void *arg, const pasci_wire_msg *req)
{
	const ps_method *e  = ps_method_of(req->hdr->method);
	ps_server       *ps = arg;
	nng_msg         *dyn;
	if (req->hdr->method != PASCI_METHOD_VAR_MULTI &&
	    (dyn = pasci_ps_dynamic(
	         ps->dyn, ps->store, req, ps->max_var_bytes)) != NULL) {
		return dyn;
	}
	if (req->hdr->method == PASCI_METHOD_VAR_MULTI &&
	    req->hdr->nparts > 0) { /* over nng: the parts copied in */
		pasci_wire_builder b;
		nng_msg           *reply = NULL;
		int                rv;
		pasci_wire_builder_init(&b, PASCI_METHOD_VAR_MULTI);
		if ((rv = ps_multi(arg, req, &b)) != 0 ||
		    (rv = pasci_wire_encode(&b, &reply)) != 0) {
			reply = pasci_wire_status_reply(rv, "out of memory");
		}
		pasci_wire_builder_fini(&b);
		return reply;
	}
	if (e == NULL) {
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "a ps does not serve method %d", (int) req->hdr->method);
	}
	return e->handle(arg, req);
}

/* Requests over bulk connections: reads answered from a view of the
 * value, sent straight from its memory; everything else as over nng. */
static nng_msg *
ps_bulk_handle(void *arg, const pasci_wire_msg *req, pasci_wire_builder *b)
{
	ps_server    *ps   = arg;
	pasco_tensor *snap = NULL;
	char          err[512];
	int           rv;
	if (req->hdr->method == PASCI_METHOD_VAR_MULTI &&
	    req->hdr->nparts > 0) {
		return (rv = ps_multi(ps, req, b)) == 0
		           ? NULL
		           : pasci_wire_status_reply(rv, "out of memory");
	}
	if (req->hdr->method != PASCI_METHOD_VAR_READ ||
	    pasci_dyn_find(ps->dyn, req->hdr->name) != NULL) {
		return ps_handle(ps, req);
	}
	if ((rv = pasci_store_var_with(ps->store, req->hdr->name, view_value,
	         &snap, err, sizeof(err))) != 0) {
		return pasci_wire_status_reply(rv, "%s", err);
	}
	pasci_wire_add_tensor(b, snap, NULL);
	pasco_tensor_release(snap);
	return NULL;
}

/* The operator's checkpoint root (PASCO_CHECKPOINT_DIR), created if need
 * be, resolved and opened; "" when none is given (checkpoints are
 * refused). */
static int
checkpoint_root(ps_server *ps)
{
	const char *dir      = getenv("PASCO_CHECKPOINT_DIR");
	char        err[512] = "";
	ps->ckpt_fd          = -1;
	if (dir == NULL || *dir == 0) {
		return PASCO_OK;
	}
	if (pasci_make_dirs(dir, err, sizeof(err)) != 0 ||
	    realpath(dir, ps->ckpt_root) == NULL ||
	    pasci_dir_open(ps->ckpt_root, &ps->ckpt_fd, err, sizeof(err)) !=
	        0) {
		ps->ckpt_root[0] = 0;
		pasci_log(PASCI_LOG_ERROR,
		    "the checkpoint root PASCO_CHECKPOINT_DIR=%s cannot be "
		    "used: "
		    "%s",
		    dir, err[0] != 0 ? err : strerror(errno));
		return PASCO_EIO;
	}
	return PASCO_OK;
}

static void
ps_root_close(ps_server *ps)
{
	if (ps->ckpt_fd >= 0) {
		close(ps->ckpt_fd);
	}
}

/* A ps with its limits read from the environment, its store and its
 * dynamic tables, and no endpoints. */
static int
ps_new(ps_server **out)
{
	ps_server *ps = pasci_calloc(1, sizeof(*ps));
	int        rv;
	*out = ps;
	if (ps == NULL) {
		return PASCO_ENOMEM;
	}
	ps->max_var_bytes = pasci_ps_max_variable_bytes();
	ps->ckpt_fd       = -1;
	pasci_budget_init(&ps->budget, pasci_ps_budget_bytes());
	if ((rv = pasci_store_create_with(&ps->store, &ps->budget)) != 0 ||
	    (rv = pasci_dyn_set_create_with(
	         &ps->dyn, &ps->budget, ps->max_var_bytes)) != 0) {
		pasci_store_destroy(ps->store);
		free(ps);
		*out = NULL;
	}
	return rv;
}

int
pasci_ps_server_start(
    ps_server **out, const char *url, int nthreads, const pasci_key *key)
{
	ps_server *ps;
	uint64_t   incarnation = pasci_random_u64();
	char       host[256], port[16];
	int        rv;

	*out = NULL;
	if ((rv = ps_new(&ps)) != 0) {
		return rv;
	}
	if ((rv = checkpoint_root(ps)) != 0) {
		pasci_store_destroy(ps->store);
		pasci_dyn_set_destroy(ps->dyn);
		ps_root_close(ps);
		free(ps);
		return rv;
	}
	/* Variable requests go over a TCP connection of their own (bulk.h),
	 * on the interfaces the RPC listens on, or from this host over a
	 * Unix socket with shared memory; HELLO replies advertise the port
	 * alone, which a client reaches at the host it reached us at, and
	 * the Unix socket's name. Without it nng carries everything, as it
	 * does under TLS: the bulk port is plain TCP, so a tls+tcp ps opens
	 * none and advertises nothing. */
	if (pasci_tls_url(url)) {
		pasci_log(PASCI_LOG_INFO,
		    "ps at %s: TLS, so no bulk port; nng carries every tensor",
		    url);
	} else if (pasci_url_split(
	               url, host, sizeof(host), port, sizeof(port)) == 0 &&
	           pasci_bulk_server_open(&ps->bulk, host, incarnation,
	               ps_bulk_handle, ps, key) != 0) {
		pasci_log(PASCI_LOG_WARN,
		    "ps at %s: no bulk transfers, nng carries every tensor",
		    url);
	}
	rv = pasci_rpc_server_open_with(&ps->rpc, url, nthreads, "pasco-ps",
	    ps_handle, ps, incarnation,
	    ps->bulk != NULL ? pasci_bulk_server_advert(ps->bulk) : NULL, key);
	if (rv != 0) {
		pasci_bulk_server_close(ps->bulk);
		pasci_store_destroy(ps->store);
		pasci_dyn_set_destroy(ps->dyn);
		ps_root_close(ps);
		free(ps);
		return rv;
	}
	*out = ps;
	return PASCO_OK;
}

int
pasci_ps_server_create_local(ps_server **out)
{
	return ps_new(out);
}

const pasci_budget *
pasci_ps_server_budget(const ps_server *ps)
{
	return &ps->budget;
}

nng_msg *
pasci_ps_server_handle(ps_server *ps, const pasci_wire_msg *req)
{
	return ps_handle(ps, req);
}

uint64_t
pasci_ps_server_incarnation(const ps_server *ps)
{
	return pasci_rpc_server_incarnation(ps->rpc);
}

void
pasci_ps_server_stop(ps_server *ps)
{
	if (ps == NULL) {
		return;
	}
	pasci_rpc_server_close(ps->rpc);
	pasci_bulk_server_close(ps->bulk);
	pasci_store_destroy(ps->store);
	pasci_dyn_set_destroy(ps->dyn);
	ps_root_close(ps);
	free(ps);
}

const pasci_rpc_server *
pasci_ps_server_rpc(const ps_server *ps)
{
	return ps->rpc;
}
