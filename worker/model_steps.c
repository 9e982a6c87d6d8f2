/*
 * The library's own step functions for compiled models (model.h), found
 * by the registry under names no PASCO_FUNCTION can take:
 *   pasco.model_train     model args, iterator[, global step]: one
 *                         training step on the iterator's next batch;
 *                         returns [loss, the batch's metric counts...]
 *                         (f64 [1 + state_len]; [loss] without
 *                         metrics), which the chief totals per epoch.
 *   pasco.model_train_batch  model args, dataset names[, global step]:
 *                         the same on the first element of the dataset
 *                         named on line r of the names (one per line)
 *                         for call r of a packed closure (built for
 *                         worker 0 of 1): the batch
 *                         the chief named for this step (exact epochs,
 *                         pasco_model_fit_options.step_dataset), the
 *                         same on any worker that runs it.
 *   pasco.model_evaluate  model args, factory, shard, shards: the whole
 *                         shard; returns [loss sum, examples, counts...].
 *   pasco.model_predict   model args, factory, dir, format, shard,
 *                         shards: the shard's outputs into one CSV or
 *                         TFRecord file, written to a temporary name and
 *                         renamed; returns its rows.
 *   pasco.dataset_check   factory, shard, shards: the shard's dataset
 *                         built and freed (fit's validation data checked
 *                         at its start).
 *   pasco.graph_step      a traced step: worker/graph_step.c.
 * A shard's dataset is the factory's, called with worker_index = shard
 * and num_workers = shards. Run by the worker's handler threads, each
 * call with its own model copy and tapes.
 */
#include "graph_step.h"
#include "model_impl.h"
#include "pasco/example.h"
#include "pasco/function.h"
#include "pasco/server.h"
#include "pasco/tfrecord.h"
#include "registry.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME_MAX_BYTES 4096

/* Argument i, a u8 tensor, as a string into buf. */
static int
string_arg(pasco_call *call, size_t i, char *buf, size_t len)
{
	const pasco_tensor *t;
	int                 rv = pasco_call_tensor(call, i, &t);
	if (rv != 0) {
		return rv;
	}
	if (t->dtype != PASCO_U8 || t->rank != 1 || (size_t) t->count >= len) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "argument %zu is not a string (u8 [n], n < %zu)", i, len);
	}
	memcpy(buf, t->data, (size_t) t->count);
	buf[t->count] = 0;
	return PASCO_OK;
}

static int
i64_arg(pasco_call *call, size_t i, int64_t *v)
{
	const pasco_tensor *t;
	int                 rv = pasco_call_tensor(call, i, &t);
	if (rv == 0) {
		*v = (int64_t) pasco_tensor_get(t, 0);
	}
	return rv;
}

static int
return_f64(pasco_call *call, size_t n, const double *v)
{
	pasco_tensor *t;
	int           rv = pasco_tensor_from(
	              &t, PASCO_F64, 1, (int64_t[]){(int64_t) n}, v, n * sizeof(double));
	if (rv != 0) {
		return pasco_call_fail(call, rv, "out of memory");
	}
	pasco_call_return(call, pasco_value_tensor(t));
	return PASCO_OK;
}

/* A tape seed for a training step: the model's seed, this worker and a
 * count of this process's steps, so dropout masks differ step to step. */
static uint64_t
step_seed(const pasco_model *m, pasco_call *call)
{
	static atomic_uint_fast64_t steps;
	uint64_t                    z = m->seed ^
	             ((uint64_t) pasco_call_worker_index(call) << 40) ^
	             (atomic_fetch_add(&steps, 1) * 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	return (z ^ (z >> 27)) * 0x94d049bb133111ebull;
}

/* The dataset named at argument k (a u8 string), built whole (worker 0
 * of 1) into *ds, the caller's. */
static int named_dataset(pasco_call *call, size_t k, pasco_dataset **ds);

/* One training step of model m on the next batch of the iterator at
 * argument k (named: of the dataset named there); *loss and counts (may
 * be NULL) get its results. */
static int
train_once(pasco_call *call, const pasco_model *m, size_t k, bool named,
    const pasco_optimizer *opt, double *loss, double *counts)
{
	const pasco_tensor **in = pasci_calloc(m->ninputs, sizeof(*in));
	const pasco_tensor  *y, *sw;
	pasco_dataset       *it = NULL;
	pasco_value         *e  = NULL;
	pasco_tape          *tp;
	int                  rv;

	if (in == NULL || pasco_tape_alloc(&tp, true, step_seed(m, call))) {
		free(in);
		return pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
	}
	rv = named ? named_dataset(call, k, &it)
	           : pasco_call_iterator(call, k, &it);
	if (rv == 0 && (rv = pasco_dataset_next(it, &e)) != 0) {
		pasco_call_fail(call, rv, "training data: %s",
		    rv == PASCO_EOUTOFRANGE
		        ? named ? "the step's dataset is empty"
		                : "the dataset ended (repeat it)"
		        : pasco_dataset_last_error());
	} else if (rv == 0 &&
	           (rv = pasci_model_element(m, e, true, in, &y, &sw)) != 0) {
		pasco_call_fail(call, rv, "%s", pasco_model_last_error());
	} else if (rv == 0 && (rv = pasci_model_train_batch(m, tp, in, y, sw,
	                           opt, loss, counts)) != 0) {
		pasco_call_fail(call, rv, "%s", pasco_tape_message(tp));
	}
	pasco_tape_free(tp);
	pasco_value_free(e);
	if (named) {
		pasco_dataset_free(it);
	}
	free(in);
	return rv;
}

/* Whether call has the argument a step of m takes after its k model
 * arguments and the iterator: the global step, as compiled. A step
 * scheduled by hand without it is told what it is and where it comes
 * from, not that argument k + 1 was "requested as a variable". */
static int
train_args_check(pasco_call *call, const pasco_model *m, size_t k)
{
	size_t n = pasco_call_arg_count(call);
	if (m->compile.global_step && n <= k + 1) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "pasco.model_train: the model is compiled with a global "
		    "step, which the step takes after the iterator (argument "
		    "%zu; the strategy's global step variable); it got %zu "
		    "arguments",
		    k + 1, n);
	}
	return PASCO_OK;
}

static int
train_step(pasco_call *call, bool named)
{
	pasco_model    *m;
	pasco_optimizer opt;
	double         *res = NULL; /* loss, then the metrics' counts */
	size_t          k;
	int             rv;

	if ((rv = pasco_model_from_call(call, 0, &m)) != 0) {
		return rv;
	}
	k   = pasco_model_num_args(m);
	opt = m->compile.opt;
	if ((rv = train_args_check(call, m, k)) != 0) {
		goto done;
	}
	if (m->compile.global_step &&
	    (rv = pasco_call_variable(call, k + 1, &opt.iterations)) != 0) {
		goto done;
	}
	if ((res = pasci_calloc(1 + m->compile.state_len, sizeof(double))) ==
	    NULL) {
		rv = pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
		goto done;
	}
	if ((rv = train_once(call, m, k, named, &opt, &res[0],
	         m->compile.nmetrics > 0 ? res + 1 : NULL)) == 0) {
		rv = return_f64(call, 1 + m->compile.state_len, res);
	}
done:
	free(res);
	pasco_model_free(m);
	return rv;
}

static int
model_train(pasco_call *call)
{
	return train_step(call, false);
}

static int
model_train_batch(pasco_call *call)
{
	return train_step(call, true);
}

/* The dataset of shard (shard, shards) of the factory named at argument
 * k: the factory called with worker_index shard of num_workers shards. */
static int
shard_dataset(pasco_call *call, size_t k, pasco_dataset **ds)
{
	char    name[NAME_MAX_BYTES];
	int64_t shard, shards;
	size_t  n = pasco_call_arg_count(call);
	int     rv;
	if ((rv = string_arg(call, k, name, sizeof(name))) != 0 ||
	    (rv = i64_arg(call, n - 2, &shard)) != 0 ||
	    (rv = i64_arg(call, n - 1, &shards)) != 0) {
		return rv;
	}
	if (!pasci_dataset_known(name)) {
		return pasco_call_fail(call, PASCO_ENOTFOUND,
		    "no dataset factory '%s' on this worker", name);
	}
	pasco_dataset_context ctx = {
	    .worker_index = (int32_t) shard, .num_workers = (int32_t) shards};
	ctx.argv = pasco_program_args(&ctx.argc);
	if ((rv = pasci_dataset_build(name, &ctx, ds)) != 0) {
		return pasco_call_fail(call, rv,
		    "dataset '%.96s%s', shard %lld: %s", name,
		    strlen(name) > 96 ? "..." : "", (long long) shard,
		    pasco_dataset_last_error());
	}
	if (pasco_dataset_is_infinite(*ds)) { /* Keras refuses it too */
		pasco_dataset_free(*ds);
		*ds = NULL;
		return pasco_call_fail(call, PASCO_EINVAL,
		    "dataset '%.96s%s', shard %lld, repeats forever, and "
		    "evaluate and predict read each shard to its end: give "
		    "them a dataset that ends (read once: num_epochs 1 in C, "
		    "repeat=1 or none in Python; or a take)",
		    name, strlen(name) > 96 ? "..." : "", (long long) shard);
	}
	return PASCO_OK;
}

/* Line r of the u8 string tensor at argument i (lines split by '\n')
 * into buf. */
static int
line_arg(pasco_call *call, size_t i, uint32_t r, char *buf, size_t len)
{
	const pasco_tensor *t;
	const char         *at, *end, *nl;
	int                 rv = pasco_call_tensor(call, i, &t);
	if (rv != 0) {
		return rv;
	}
	if (t->dtype != PASCO_U8 || t->rank != 1) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "argument %zu is not a string (u8 [n])", i);
	}
	at  = t->data;
	end = at + t->count;
	for (uint32_t k = 0; k < r && at < end; k++) {
		nl = memchr(at, '\n', (size_t) (end - at));
		at = nl != NULL ? nl + 1 : end;
	}
	nl = at < end ? memchr(at, '\n', (size_t) (end - at)) : NULL;
	if (nl == NULL) {
		nl = end;
	}
	if (at >= end || (size_t) (nl - at) >= len) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "argument %zu has no line %u of less than %zu bytes (the "
		    "closure's step datasets, one per call)",
		    i, (unsigned) r, len);
	}
	memcpy(buf, at, (size_t) (nl - at));
	buf[nl - at] = 0;
	return PASCO_OK;
}

/* Call r of a closure reads the dataset named on line r: the chief names
 * one per step of the closure (coordinator/model_fit.c). */
static int
named_dataset(pasco_call *call, size_t k, pasco_dataset **ds)
{
	char name[NAME_MAX_BYTES];
	int  rv;
	*ds = NULL;
	if ((rv = line_arg(call, k, pasco_call_repetition(call), name,
	         sizeof(name))) != 0) {
		return rv;
	}
	if (!pasci_dataset_known(name)) {
		return pasco_call_fail(call, PASCO_ENOTFOUND,
		    "no dataset factory '%s' on this worker", name);
	}
	pasco_dataset_context ctx = {.worker_index = 0, .num_workers = 1};
	ctx.argv                  = pasco_program_args(&ctx.argc);
	if ((rv = pasci_dataset_build(name, &ctx, ds)) != 0) {
		return pasco_call_fail(call, rv,
		    "the step's dataset '%.96s%s': %s", name,
		    strlen(name) > 96 ? "..." : "",
		    pasco_dataset_last_error());
	}
	return PASCO_OK;
}

/* Runs fn on every batch of the shard's dataset: fn gets the inputs,
 * targets and sample weights (NULL: none) of each, on a tape of its own
 * (not training). */
typedef int (*batch_fn)(void *arg, const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *in, const pasco_tensor *y,
    const pasco_tensor *sw);

static int
each_batch(pasco_call *call, const pasco_model *m, size_t k, bool need_y,
    batch_fn fn, void *arg)
{
	const pasco_tensor **in = pasci_calloc(m->ninputs, sizeof(*in));
	const pasco_tensor  *y, *sw;
	pasco_dataset       *ds = NULL;
	pasco_value         *e  = NULL;
	pasco_tape          *tp;
	bool                 from_data = false;
	int                  rv;

	if (in == NULL) {
		return pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
	}
	rv = shard_dataset(call, k, &ds);
	while (rv == 0) {
		if ((rv = pasco_dataset_next(ds, &e)) != 0) {
			from_data = true;
		} else if (pasco_call_is_cancelled(call)) {
			rv = pasco_call_fail(
			    call, PASCO_ECANCELLED, "cancelled");
		} else if ((rv = pasci_model_element(
		                m, e, need_y, in, &y, &sw)) != 0) {
			pasco_call_fail(
			    call, rv, "%s", pasco_model_last_error());
		} else if ((rv = pasco_tape_alloc(&tp, false, 0)) == 0) {
			if ((rv = fn(arg, m, tp, in, y, sw)) != 0) {
				pasco_call_fail(call, rv, "%s",
				    pasco_tape_message(tp)[0]
				        ? pasco_tape_message(tp)
				        : pasco_model_last_error());
			}
			pasco_tape_free(tp);
		}
		pasco_value_free(e);
		e = NULL;
	}
	if (from_data && rv == PASCO_EOUTOFRANGE) {
		rv = PASCO_OK;
	} else if (from_data) {
		pasco_call_fail(
		    call, rv, "data: %s", pasco_dataset_last_error());
	}
	pasco_dataset_free(ds);
	free(in);
	return rv;
}

static int
eval_batch(void *arg, const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *in, const pasco_tensor *y,
    const pasco_tensor *sw)
{
	return pasci_model_eval_batch(m, tp, in, y, sw, arg);
}

static int
model_evaluate(pasco_call *call)
{
	pasco_model *m;
	double      *sums;
	int          rv;
	if ((rv = pasco_model_from_call(call, 0, &m)) != 0) {
		return rv;
	}
	if ((sums = pasci_calloc(2 + m->compile.state_len, sizeof(double))) ==
	    NULL) {
		rv = pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
	} else if ((rv = each_batch(call, m, pasco_model_num_args(m), true,
	                eval_batch, sums)) == 0) {
		rv = return_f64(call, 2 + m->compile.state_len, sums);
	}
	free(sums);
	pasco_model_free(m);
	return rv;
}

/* A shard's predictions file: CSV through f, written to tmp and renamed
 * to path by predict_close; or TFRecord through w, whose close does the
 * same. One of f and w is set. */
typedef struct predict_out {
	FILE                  *f;
	pasco_tfrecord_writer *w;
	int64_t                rows;
	char                   path[NAME_MAX_BYTES + 64];
	char                   tmp[NAME_MAX_BYTES + 128];
} predict_out;

static int
csv_rows(predict_out *o, const pasco_tensor *t, int64_t n, int64_t w)
{
	for (int64_t i = 0; i < n; i++) {
		for (int64_t j = 0; j < w; j++) {
			fprintf(o->f, "%s%.9g", j > 0 ? "," : "",
			    pasco_tensor_get(t, i * w + j));
		}
		fputc('\n', o->f);
	}
	return ferror(o->f) ? PASCO_EIO : PASCO_OK;
}

/* A record per example: an Example of one float_list feature, "output",
 * its row of t. */
static int
tfrecord_rows(predict_out *o, const pasco_tensor *t, int64_t n, int64_t w)
{
	pasco_tensor *row;
	pasco_value  *ex;
	int           rv = pasco_tensor_alloc(&row, PASCO_F32, 1, &w);
	if (rv != 0) {
		return rv;
	}
	if ((ex = pasco_value_dict(1, "output", pasco_value_tensor(row))) ==
	    NULL) {
		return PASCO_ENOMEM;
	}
	for (int64_t i = 0; rv == 0 && i < n; i++) {
		void  *buf;
		size_t len;
		for (int64_t j = 0; j < w; j++) {
			((float *) row->data)[j] =
			    (float) pasco_tensor_get(t, i * w + j);
		}
		if ((rv = pasco_example_encode(ex, &buf, &len)) == 0) {
			rv = pasco_tfrecord_write(o->w, buf, len);
			free(buf);
		}
	}
	pasco_value_free(ex);
	return rv;
}

static int
predict_batch(void *arg, const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *in, const pasco_tensor *y,
    const pasco_tensor *sw)
{
	predict_out        *o    = arg;
	pasco_tape_var     *vars = pasci_calloc(m->nvars + 1, sizeof(*vars));
	pasco_tnode        *out  = pasco_model_call(m, tp, in, vars);
	const pasco_tensor *t    = out != NULL ? pasco_tnode_value(out) : NULL;
	int                 rv;
	(void) y;
	(void) sw;
	free(vars);
	if (t == NULL) {
		return pasco_tape_error(tp) != 0 ? pasco_tape_error(tp)
		                                 : PASCO_ENOMEM;
	}
	int64_t n = t->shape[0], w = t->count / (n > 0 ? n : 1);
	rv = o->w != NULL ? tfrecord_rows(o, t, n, w) : csv_rows(o, t, n, w);
	o->rows += rv == 0 ? n : 0;
	return rv;
}

/* The header of a predictions file: output, or output_0, output_1, ... */
static void
write_header(FILE *f, int64_t width)
{
	if (width == 1) {
		fputs("output\n", f);
		return;
	}
	for (int64_t j = 0; j < width; j++) {
		fprintf(f, "%soutput_%lld", j > 0 ? "," : "", (long long) j);
	}
	fputc('\n', f);
}

/* Starts shard's file of shards in dir, in format (pasco_predict_format). */
static int
predict_open(pasco_call *call, predict_out *o, const char *dir,
    const int64_t where[2], int64_t format, int64_t width)
{
	bool tfr = format == PASCO_PREDICT_TFRECORD;
	if (!tfr && format != PASCO_PREDICT_CSV) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "predict: format %lld is unknown", (long long) format);
	}
	snprintf(o->path, sizeof(o->path),
	    "%s/predictions-%05lld-of-%05lld.%s", dir, (long long) where[0],
	    (long long) where[1], tfr ? "tfrecord" : "csv");
	if (tfr) {
		return pasco_tfrecord_writer_open(&o->w, o->path) != 0
		           ? pasco_call_fail(
		                 call, PASCO_ENOMEM, "out of memory")
		           : PASCO_OK;
	}
	snprintf(o->tmp, sizeof(o->tmp), "%s.tmp-%d-%p", o->path,
	    (int) getpid(), (void *) call);
	if ((o->f = fopen(o->tmp, "w")) == NULL) {
		return pasco_call_fail(call, PASCO_EIO,
		    "predict: cannot write %s: %s", o->tmp, strerror(errno));
	}
	write_header(o->f, width);
	return PASCO_OK;
}

/* Puts the file in place when rv is 0 (all its rows written), or drops
 * it. Returns rv, or the failure to write. */
static int
predict_close(pasco_call *call, predict_out *o, int rv)
{
	if (o->w != NULL && rv != 0) {
		pasco_tfrecord_writer_discard(o->w);
	} else if (o->w != NULL &&
	           (rv = pasco_tfrecord_writer_close(o->w)) != 0) {
		rv = pasco_call_fail(
		    call, rv, "predict: %s", pasco_tfrecord_last_error());
	}
	if (o->f == NULL) {
		return rv;
	}
	if (fclose(o->f) != 0 && rv == 0) {
		rv = pasco_call_fail(
		    call, PASCO_EIO, "predict: writing %s failed", o->tmp);
	}
	if (rv == 0 && rename(o->tmp, o->path) != 0) {
		rv = pasco_call_fail(call, PASCO_EIO,
		    "predict: renaming %s: %s", o->path, strerror(errno));
	}
	if (rv != 0) {
		unlink(o->tmp);
	}
	return rv;
}

static int
model_predict(pasco_call *call)
{
	char         dir[NAME_MAX_BYTES];
	predict_out  o = {0};
	pasco_model *m;
	int64_t      where[2], format;
	size_t       n = pasco_call_arg_count(call), k;
	int          rv;

	if ((rv = pasco_model_from_call(call, 0, &m)) != 0) {
		return rv;
	}
	k = pasco_model_num_args(m);
	if ((rv = string_arg(call, k + 1, dir, sizeof(dir))) != 0 ||
	    (rv = i64_arg(call, k + 2, &format)) != 0 ||
	    (rv = i64_arg(call, n - 2, &where[0])) != 0 ||
	    (rv = i64_arg(call, n - 1, &where[1])) != 0 ||
	    (rv = predict_open(call, &o, dir, where, format,
	         pasco_model_output_width(m))) != 0) {
		goto done;
	}
	rv = each_batch(call, m, k, false, predict_batch, &o);
	if ((rv = predict_close(call, &o, rv)) == 0) {
		double rows = (double) o.rows;
		rv          = return_f64(call, 1, &rows);
	}
done:
	pasco_model_free(m);
	return rv;
}

/* pasco.dataset_check (factory, shard, shards): builds the shard's dataset
 * and frees it: fit's check, at its start, that its validation data can be
 * read (a missing file), as Keras checks its data before the first epoch
 * instead of after it. */
static int
dataset_check(pasco_call *call)
{
	pasco_dataset *ds   = NULL;
	double         zero = 0;
	int            rv   = shard_dataset(call, 0, &ds);
	pasco_dataset_free(ds);
	return rv != 0 ? rv : return_f64(call, 1, &zero);
}

pasco_function
pasci_model_function_find(const char *name)
{
	static const struct {
		const char    *name;
		pasco_function fn;
	} builtins[] = {
	    {"pasco.model_train", model_train},
	    {"pasco.model_train_batch", model_train_batch},
	    {"pasco.model_evaluate", model_evaluate},
	    {"pasco.model_predict", model_predict},
	    {"pasco.dataset_check", dataset_check},
	    {"pasco.graph_step", pasci_graph_step},
	};
	for (size_t i = 0; i < sizeof(builtins) / sizeof(*builtins); i++) {
		if (strcmp(name, builtins[i].name) == 0) {
			return builtins[i].fn;
		}
	}
	return NULL;
}
