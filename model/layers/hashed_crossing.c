/*
 * Keras's HashedCrossing(num_bins, output_mode="int"): its two inputs
 * crossed element by element into a bin of [0, num_bins): XXH64 of the
 * two keys (strings' fingerprints, integers' decimal texts'
 * fingerprints, as Hashing takes them) modulo num_bins (layers.h,
 * "Preprocessing"). Its descriptor (layer_desc.h). Stateless: any
 * thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "pasco/hash.h"
#include "prep.h"

int
pasco_layer_hashed_crossing(
    pasco_layer *out, int64_t num_bins, pasco_output_mode mode)
{
	pasco_prep *p = pasci_prep_alloc(PASCO_LAYER_HASHED_CROSSING);
	if (p == NULL) {
		return pasci_prep_drop(out, NULL,
		    pasci_model_fail(PASCO_ENOMEM, "out of memory"));
	}
	p->num_bins = num_bins;
	p->mode     = mode;
	return pasci_prep_made(out, PASCO_LAYER_HASHED_CROSSING, p);
}

static int
hashed_crossing_check(
    const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	const pasco_prep *p = pasci_prep_of(l);
	if (p->num_bins < 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: num_bins must be >= 1, got %lld", l->name,
		    (long long) p->num_bins);
	}
	if (p->mode != PASCO_OUTPUT_INT && p->mode != PASCO_OUTPUT_ONE_HOT) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: output_mode must be \"int\" or \"one_hot\", got %s",
		    l->name,
		    pasco_output_mode_name(p->mode) != NULL
		        ? pasco_output_mode_name(p->mode)
		        : "an unknown mode");
	}
	if (l->ninputs > 2) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a HashedCrossing crosses exactly two inputs, got %zu",
		    l->name, l->ninputs);
	}
	if (widths[0] != widths[1] ||
	    (p->mode == PASCO_OUTPUT_ONE_HOT && widths[0] != 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: its two inputs must have one width%s, got %lld and "
		    "%lld",
		    l->name, p->mode == PASCO_OUTPUT_ONE_HOT ? ", 1" : "",
		    (long long) widths[0], (long long) widths[1]);
	}
	*out = p->mode == PASCO_OUTPUT_INT ? widths[0] : p->num_bins;
	return PASCO_OK;
}

static int
hashed_crossing_prep(pasci_prep_call *c)
{
	for (int64_t e = 0; e < c->in[0]->count; e++) {
		int64_t k[2] = {pasci_prep_key_at(c->in[0], c->strings[0], e),
		    pasci_prep_key_at(c->in[1], c->strings[1], e)};
		unsigned char b[16];
		for (int j = 0; j < 16; j++) {
			b[j] = (unsigned char) ((uint64_t) k[j / 8] >>
			                        (8 * (j % 8)));
		}
		c->idx[e] = (int64_t) (pasco_hash64(b, 16, 0) %
		                       (uint64_t) c->p->num_bins);
	}
	return PASCO_OK;
}

static int64_t
hashed_crossing_depth(const pasco_layer *l)
{
	return pasci_prep_of(l)->num_bins;
}

static bool
hashed_crossing_write(cJSON *c, const pasco_layer *l)
{
	const pasco_prep *p = pasci_prep_of(l);
	return cJSON_AddNumberToObject(c, "num_bins", (double) p->num_bins) &&
	       pasci_prep_write_mode(c, p);
}

static int
hashed_crossing_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	if ((l->prep = pasci_prep_alloc(l->kind)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	return pasci_json_size(
	           c, "num_bins", &l->prep->num_bins, 1, PASCI_MAX_IDS, at) ||
	               pasci_prep_read_mode(c, l->prep, at)
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

const pasci_layer_desc pasci_layer_hashed_crossing_desc = {
    .kind       = PASCO_LAYER_HASHED_CROSSING,
    .class_name = "HashedCrossing",
    .prefix     = "hashed_crossing",
    .keys       = {"name", "num_bins", "output_mode", "sparse"},
    .args       = {"num_bins"},
    .min_inputs = 2,
    .check      = hashed_crossing_check,
    .call       = pasci_prep_layer_call,
    .hold       = pasci_prep_hold,
    .release    = pasci_prep_release,
    .bytes      = pasci_prep_bytes,
    .write      = hashed_crossing_write,
    .read       = hashed_crossing_read,
    .prep       = hashed_crossing_prep,
    .prep_depth = hashed_crossing_depth,
};
