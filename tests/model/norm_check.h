/* What the tests of the normalization layers share
 * (test_batch_norm.c, test_layer_norm.c): their numpy references
 * (tests/model/norm_numpy.py, PASCO_NORM_NUMPY) run on tensors, a
 * layer's forward pass on a tape with its input and variables watched,
 * and the comparison of values. */
#ifndef PASCO_TEST_NORM_CHECK_H
#define PASCO_TEST_NORM_CHECK_H

#include "model_impl.h"
#include "tape_check.h"
#include "tape_impl.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

/* /usr/bin/python3 norm_numpy.py MODE FILE ARGS on the values of
 * ts[0..n) as f64: want numbers into out. */
static inline void
numpy_ref(const char *mode, const char *args, size_t n,
    pasco_tensor *const *ts, double *out, size_t want)
{
	char   dir[] = "/tmp/pasco_bn_XXXXXX", path[64], cmd[512];
	FILE  *f;
	size_t got = 0;
	int    st  = -1;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/in", dir);
	cr_assert_not_null(f = fopen(path, "wb"));
	for (size_t k = 0; k < n; k++) {
		for (int64_t i = 0; i < ts[k]->count; i++) {
			double v = pasco_tensor_get(ts[k], i);
			fwrite(&v, 8, 1, f);
		}
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s %s %s",
	    PASCO_NORM_NUMPY, mode, path, args);
	/* read everything, clean up, then judge */
	if ((f = popen(cmd, "r")) != NULL) {
		while (got < want && fscanf(f, "%lf", &out[got]) == 1) {
			got++;
		}
		st = pclose(f);
	}
	unlink(path);
	rmdir(dir);
	cr_assert(st == 0 && got == want,
	    "python3 with numpy (python3-numpy) gave %zu of %zu numbers, "
	    "status %d: %s",
	    got, want, st, cmd);
}

/* got[0..n) (a tensor's elements) against want within rel (relative to
 * the largest |want|, at least 1). */
static inline void
near_all(const char *what, const pasco_tensor *got, const double *want,
    int64_t n, double rel)
{
	double scale = 1;
	cr_assert_eq(got->count, n, "%s: %lld values, want %lld", what,
	    (long long) got->count, (long long) n);
	for (int64_t i = 0; i < n; i++) {
		scale = fmax(scale, fabs(want[i]));
	}
	for (int64_t i = 0; i < n; i++) {
		double g = pasco_tensor_get(got, i);
		cr_assert(fabs(g - want[i]) <= rel * scale,
		    "%s[%lld]: %.12g, numpy %.12g", what, (long long) i, g,
		    want[i]);
	}
}

/* Layer 0 of m (a Sequential model of one layer) on x, its variables
 * vars[0..nv) watched (f64 tensors, any values), x watched too, on a
 * fresh tape (training or not): the loss sum(y * r) with r tape_check's
 * weighted() weights; *y gets the output node, nodes the watched ones
 * (x first). */
static inline pasco_tnode *
norm_forward(pasco_tape **tp, bool training, const pasco_model *m,
    pasco_tensor *x, size_t nv, pasco_tensor *const *vars, pasco_tnode **nodes,
    pasco_tnode **y)
{
	const pasco_tensor *in[1] = {x};
	pasco_tnode        *feats[1];
	PASCO_PASS(pasco_tape_alloc(tp, training, 7));
	nodes[0] = feats[0] = pasco_tape_watch(*tp, x);
	for (size_t k = 0; k < nv; k++) {
		nodes[k + 1] = pasco_tape_watch(*tp, vars[k]);
	}
	*y = pasci_model_forward(m, *tp, in, feats, nodes + 1);
	cr_assert_not_null(*y, "%s", pasco_tape_message(*tp));
	return weighted(*tp, *y);
}

/* The number of updates recorded on tp. */
static inline size_t
updates_on(pasco_tape *tp)
{
	size_t n = 0;
	for (pasci_tape_update *u = pasci_tape_step_of(tp)->updates; u != NULL;
	     u                    = u->next) {
		n++;
	}
	return n;
}

/* A BatchNormalization whose config field is value must be refused with
 * a message that says says (and build no model). */
static inline void
bn_refused(const char *field, const char *value, const char *says)
{
	char         json[1024];
	pasco_model *m = NULL;
	snprintf(json, sizeof(json),
	    "{\"class_name\": \"Sequential\", \"config\": {\"inputs\": "
	    "[{\"name\": \"x\", \"width\": 4}], \"layers\": [{\"class_name\": "
	    "\"BatchNormalization\", \"config\": {\"name\": \"bn\", \"%s\": "
	    "%s}}]}}",
	    field, value);
	PASCO_FAIL(pasco_model_from_json(json, &m), PASCO_EINVAL);
	cr_assert_null(m);
	cr_assert(strstr(pasco_model_last_error(), says) != NULL,
	    "%s = %s: '%s' does not say '%s'", field, value,
	    pasco_model_last_error(), says);
}

#endif
