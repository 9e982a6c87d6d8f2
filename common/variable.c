/*
 * Variable handles: each operation is one RPC to the variable's ps. Used by
 * the coordinator and by step functions on workers. Thread-safe: the only
 * mutable state is the last error, under the handle's lock.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "common/variable_impl.h"

int
pasci_variable_new(pasco_variable **out, const char *name, int32_t ps_task,
    pasco_dtype dtype, int32_t rank, const int64_t *shape,
    pasci_rpc_client *client, int64_t timeout_ms)
{
	pasco_variable *v = calloc(1, sizeof(*v));
	*out              = NULL;
	if (v == NULL || (v->name = pasci_strdup(name)) == NULL) {
		free(v);
		return PASCO_ENOMEM;
	}
	v->ps_task = ps_task;
	v->dtype   = dtype;
	v->rank    = rank;
	for (int32_t i = 0; i < rank; i++) {
		v->shape[i] = shape[i];
	}
	v->client     = client;
	v->timeout_ms = timeout_ms;
	pthread_mutex_init(&v->mu, NULL);
	*out = v;
	return PASCO_OK;
}

void
pasco_variable_free(pasco_variable *v)
{
	if (v == NULL) {
		return;
	}
	pthread_mutex_destroy(&v->mu);
	free(v->name);
	free(v);
}

void
pasci_variable_set_error(pasco_variable *v, const char *msg)
{
	pthread_mutex_lock(&v->mu);
	pasci_fmt(v->error, sizeof(v->error), "%s", msg);
	pthread_mutex_unlock(&v->mu);
}

/* One call to the ps; on success *reply is filled when reply != NULL. */
static int
variable_call(pasco_variable *v, pasci_wire_builder *b, pasci_wire_msg *reply)
{
	char err[512];
	int  rv;

	b->hdr.name = v->name;
	rv          = pasci_rpc_call(
	             v->client, b, v->timeout_ms, reply, err, sizeof(err));
	pasci_wire_builder_fini(b);
	if (rv != 0) {
		char msg[700];
		pasci_fmt(msg, sizeof(msg), "variable '%s' on ps %d: %s",
		    v->name, v->ps_task, err);
		pasci_variable_set_error(v, msg);
	}
	return rv;
}

int
pasco_variable_read(pasco_variable *v, pasco_tensor **out)
{
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	int                rv;

	*out = NULL;
	pasci_wire_builder_init(&b, PASCO__WIRE__METHOD__VAR_READ);
	if ((rv = variable_call(v, &b, &reply)) != 0) {
		return rv;
	}
	if (reply.ntensors != 1) {
		pasci_variable_set_error(
		    v, "ps answered a read without a value");
		pasci_wire_msg_fini(&reply);
		return PASCO_EPROTO;
	}
	*out = pasco_tensor_hold(reply.tensors[0]);
	pasci_wire_msg_fini(&reply);
	return PASCO_OK;
}

static int
variable_update(
    pasco_variable *v, Pasco__Wire__Method m, double lr, const pasco_tensor *t)
{
	pasci_wire_builder b;
	if (t == NULL) {
		pasci_variable_set_error(v, "the update tensor is NULL");
		return PASCO_EINVAL;
	}
	pasci_wire_builder_init(&b, m);
	b.hdr.learning_rate = lr;
	pasci_wire_add_tensor(&b, t, NULL);
	return variable_call(v, &b, NULL);
}

int
pasco_variable_assign(pasco_variable *v, const pasco_tensor *value)
{
	return variable_update(v, PASCO__WIRE__METHOD__VAR_ASSIGN, 0, value);
}

int
pasco_variable_assign_add(pasco_variable *v, const pasco_tensor *delta)
{
	return variable_update(
	    v, PASCO__WIRE__METHOD__VAR_ASSIGN_ADD, 0, delta);
}

int
pasco_variable_apply_sgd(
    pasco_variable *v, double learning_rate, const pasco_tensor *grad)
{
	return variable_update(
	    v, PASCO__WIRE__METHOD__VAR_APPLY_SGD, learning_rate, grad);
}

const char *
pasco_variable_name(const pasco_variable *v)
{
	return v->name;
}

int32_t
pasco_variable_ps_task(const pasco_variable *v)
{
	return v->ps_task;
}

pasco_dtype
pasco_variable_dtype(const pasco_variable *v)
{
	return v->dtype;
}

int32_t
pasco_variable_rank(const pasco_variable *v)
{
	return v->rank;
}

const int64_t *
pasco_variable_shape(const pasco_variable *v)
{
	return v->shape;
}

const char *
pasco_variable_error(const pasco_variable *v)
{
	return v->error;
}
