/* A files dataset's map (worker/dataset_map.c), the part of a Python
 * chief's Dataset.map the workers run: a good map gives the mapped
 * element (a StringLookup model's ids, an op on a float, a [batch, 1]
 * feature read as [batch]); every bad map is refused when it is parsed,
 * with a message naming what is wrong, and a batch that does not fit the
 * map fails its run with a message: never a crash. */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_map.h"
#include "pasco/hash.h"
#include "registry.h"

TestSuite(dataset_map, .timeout = 20);

/* A StringLookup model over a string input of width 2. */
#define LOOKUP                                                                \
	"{\"class_name\":\"Functional\",\"config\":{\"name\":\"stage\","      \
	"\"inputs\":[{\"name\":\"w\",\"width\":2,\"ids\":true,"               \
	"\"dtype\":\"string\"}],\"layers\":[{\"class_name\":"                 \
	"\"StringLookup\","                                                   \
	"\"config\":{\"name\":\"lookup\",\"num_oov_indices\":1,"              \
	"\"mask_token\":null,\"vocabulary\":[\"a\",\"b\",\"c\"]},"            \
	"\"inbound_nodes\":[\"w\"]}]}}"

#define INPUTS                                                                \
	"\"inputs\":[[\"w\"],[\"f\"]],"                                       \
	"\"graph\":{\"inputs\":[{\"shape\":[-1,2],\"dtype\":\"int64\"},"      \
	"{\"shape\":[-1],\"dtype\":\"float32\"}],"

#define INPUT_NODES                                                           \
	"{\"op\":\"input\",\"index\":0,\"shape\":[-1,2],\"dtype\":\"int64\"}" \
	","                                                                   \
	"{\"op\":\"input\",\"index\":1,\"shape\":[-1],\"dtype\":\"float32\"}" \
	","

#define GOOD                                                                  \
	"{" INPUTS "\"nodes\":[" INPUT_NODES                                  \
	"{\"op\":\"model\",\"in\":[0],\"arg\":0,\"shape\":[-1,2],"            \
	"\"dtype\":\"int64\"},"                                               \
	"{\"op\":\"constant\",\"value\":2,\"shape\":[],\"dtype\":"            \
	"\"float32\"},"                                                       \
	"{\"op\":\"multiply\",\"in\":[1,3],\"shape\":[-1],"                   \
	"\"dtype\":\"float32\"}],\"outputs\":[2,4]},"                         \
	"\"models\":[" LOOKUP "],\"element\":[{\"ids\":0},1]}"

static pasci_dataset_map *
parse_ok(const char *json)
{
	cJSON             *j = cJSON_Parse(json);
	pasci_dataset_map *m = NULL;
	int                rv;
	cr_assert_not_null(j, "test JSON: %s", json);
	rv = pasci_dataset_map_parse(j, &m);
	cJSON_Delete(j);
	cr_assert_eq(
	    rv, 0, "%s: %s", pasco_strerror(rv), pasco_dataset_last_error());
	return m;
}

/* The batch {"w": the fingerprints of words [n, 2], "f": f [n, 1]}. */
static pasco_value *
batch(const char *const *words, const float *f, int64_t n, int64_t width)
{
	pasco_tensor *w = NULL, *x = NULL;
	cr_assert_eq(
	    pasco_tensor_alloc(&w, PASCO_I64, 2, (int64_t[]){n, width}), 0);
	cr_assert_eq(
	    pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){n, 1}), 0);
	for (int64_t i = 0; i < n * width; i++) {
		((int64_t *) w->data)[i] =
		    pasco_hash_key(words[i], strlen(words[i]));
	}
	memcpy(x->data, f, (size_t) n * sizeof(float));
	return pasco_value_dict(
	    2, "w", pasco_value_tensor(w), "f", pasco_value_tensor(x));
}

Test(dataset_map, runs_lookup_models_and_ops)
{
	static const char *const words[] = {"a", "c", "zz", "b", "b", "a"};
	const float              f[]     = {1.5f, -2, 4};
	pasci_dataset_map       *m       = parse_ok(GOOD);
	pasco_value             *in = batch(words, f, 3, 2), *out = NULL;
	const pasco_tensor      *ids, *g;
	const int64_t            want[] = {1, 3, 0, 2, 2, 1}; /* 0: OOV */

	cr_assert_eq(pasci_dataset_map_run(m, in, &out), 0, "%s",
	    pasco_dataset_last_error());
	cr_assert_eq(pasco_value_kind_of(out), PASCO_VALUE_LIST);
	cr_assert_eq(pasco_value_size(out), 2);
	ids = pasco_value_as_tensor(
	    pasco_value_get(pasco_value_item(out, 0), "ids"));
	cr_assert_not_null(ids);
	cr_assert_eq(ids->dtype, PASCO_I64);
	cr_assert_eq(ids->rank, 2);
	for (int k = 0; k < 6; k++) {
		cr_assert_eq(
		    ((int64_t *) ids->data)[k], want[k], "ids[%d]", k);
	}
	g = pasco_value_as_tensor(pasco_value_item(out, 1));
	cr_assert_eq(g->dtype, PASCO_F32);
	cr_assert_eq(g->rank, 1, "a [batch, 1] feature traced as [batch]");
	cr_assert_eq(g->shape[0], 3);
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(((float *) g->data)[k], 2 * f[k]);
	}
	pasco_value_free(out);
	pasco_value_free(in);
	pasci_dataset_map_free(m);
}

/* A batch that does not fit the map fails its run, naming why. */
Test(dataset_map, refuses_a_batch_that_does_not_fit)
{
	static const char *const words[] = {"a", "b", "c", "a", "b", "c"};
	const float              f[]     = {1, 2};
	pasci_dataset_map       *m       = parse_ok(GOOD);
	pasco_value             *wide = batch(words, f, 2, 3), *out = NULL;
	pasco_value *missing = pasco_value_dict(1, "f", pasco_value_none());

	cr_assert_eq(pasci_dataset_map_run(m, wide, &out), PASCO_EINVAL);
	cr_assert_null(out);
	cr_assert(strstr(pasco_dataset_last_error(), "dataset map") != NULL,
	    "%s", pasco_dataset_last_error());
	cr_assert_eq(pasci_dataset_map_run(m, missing, &out), PASCO_EINVAL);
	cr_assert_str_eq(pasco_dataset_last_error(),
	    "dataset map: inputs[0]: the element read has no tensor at "
	    "[\"w\"]");
	pasco_value_free(wide);
	pasco_value_free(missing);
	pasci_dataset_map_free(m);
}

static void
refused(const char *json, const char *want)
{
	cJSON             *j = cJSON_Parse(json);
	pasci_dataset_map *m = (pasci_dataset_map *) 1;
	cr_assert_not_null(j, "test JSON: %s", json);
	cr_assert_eq(pasci_dataset_map_parse(j, &m), PASCO_EINVAL, "%s", json);
	cr_assert_null(m);
	cr_assert(strstr(pasco_dataset_last_error(), want) != NULL,
	    "%s: got '%s', want '%s'", json, pasco_dataset_last_error(), want);
	cJSON_Delete(j);
}

#define MODEL_NODE(in, arg)                                                   \
	"{\"op\":\"model\",\"in\":[" in "],\"arg\":" arg                      \
	",\"shape\":[-1,2],\"dtype\":\"int64\"}"
#define ONE(nodes, models, element)                                           \
	"{" INPUTS "\"nodes\":[" INPUT_NODES nodes "],\"outputs\":[2]},"      \
	"\"models\":[" models "],\"element\":" element "}"

Test(dataset_map, refuses_bad_maps_naming_what_is_wrong)
{
	refused("[1]", "dataset map: the map is not an object");
	refused("{\"graph\":{},\"extra\":1}",
	    "dataset map: unknown field 'extra'");
	refused(ONE(MODEL_NODE("0", "0"), "3", "0"),
	    "dataset map: models[0]: not a model config (an object)");
	refused(
	    ONE(MODEL_NODE("0", "0"),
	        "{\"class_name\":\"Functional\",\"config\":{\"name\":\"d\","
	        "\"inputs\":[{\"name\":\"w\",\"width\":2,\"ids\":false}],"
	        "\"layers\":[{\"class_name\":\"Dense\",\"config\":{"
	        "\"name\":\"dense\",\"units\":2},\"inbound_nodes\":[\"w\"]}]}"
	        "}",
	        "0"),
	    "dataset map: models[0]: layer 'dense' is not a preprocessing "
	    "layer (a map runs preprocessing layers and ops only)");
	refused(ONE(MODEL_NODE("0", "1"), LOOKUP, "0"),
	    "dataset map: nodes[2] (model): arg must be the index of one of "
	    "the map's models");
	refused(ONE(MODEL_NODE("0,1", "0"), LOOKUP, "0"),
	    "dataset map: nodes[2] (model): its inputs are not as many as its "
	    "model's");
	refused(ONE("{\"op\":\"model\",\"in\":[0],\"arg\":0,\"training\":true,"
	            "\"shape\":[-1,2],\"dtype\":\"int64\"}",
	            LOOKUP, "0"),
	    "dataset map: nodes[2] (model): unknown attribute 'training'");
	refused(ONE("{\"op\":\"next\",\"shape\":[-1,2],\"dtype\":\"int64\"}",
	            LOOKUP, "0"),
	    "dataset map: nodes[2] (next): not an op of a map");
	refused(ONE("{\"op\":\"frobnicate\",\"in\":[0],\"shape\":[-1,2],"
	            "\"dtype\":\"int64\"}",
	            LOOKUP, "0"),
	    "unknown op 'frobnicate'");
	refused(ONE(MODEL_NODE("0", "0"), LOOKUP, "1"),
	    "dataset map: element: 1 is not an output index");
	refused(ONE(MODEL_NODE("0", "0"), LOOKUP, "[0,0]"),
	    "dataset map: element: output 0 is used twice");
	refused(ONE(MODEL_NODE("0", "0"), LOOKUP, "{\"\":0}"),
	    "dataset map: element: an empty dict key");
	refused(ONE(MODEL_NODE("0", "0"), LOOKUP,
	            "[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]"),
	    "dataset map: element: nested deeper than 16");
	refused(ONE(MODEL_NODE("0", "0"), LOOKUP, "\"x\""),
	    "dataset map: element: expected lists, dicts and output indices");
	refused("{\"inputs\":[[\"w\"]],\"graph\":{\"inputs\":[{\"shape\":[-1,"
	        "2],\"dtype\":\"int64\"}],\"nodes\":[{\"op\":\"input\","
	        "\"index\":0,\"shape\":[-1,2],\"dtype\":\"int64\"}],"
	        "\"outputs\":[0,0]},\"element\":[0]}",
	    "dataset map: element: output 1 is in no place");
	refused("{\"inputs\":[[\"w\"],[-1]],\"graph\":{\"inputs\":[{\"shape\":"
	        "[-1,2],\"dtype\":\"int64\"},{\"shape\":[-1],\"dtype\":"
	        "\"int64\"}],\"nodes\":[{\"op\":\"input\",\"index\":0,"
	        "\"shape\":[-1,2],\"dtype\":\"int64\"}],\"outputs\":[0]},"
	        "\"element\":0}",
	    "dataset map: inputs[1]: a path holds list indices and dict keys");
	refused("{\"inputs\":[],\"graph\":{\"inputs\":[{\"shape\":[-1,2],"
	        "\"dtype\":\"int64\"}],\"nodes\":[{\"op\":\"input\",\"index\":"
	        "0,\"shape\":[-1,2],\"dtype\":\"int64\"}],\"outputs\":[0]},"
	        "\"element\":0}",
	    "dataset map: inputs must list one path per graph input");
}

/* Through the worker's build of a "pasco.files:" name: the spec's own
 * fields are checked before any file is read. */
Test(dataset_map, files_spec_fields)
{
	static const struct {
		const char *spec, *want;
	} cases[] = {
	    {"{\"map\":{},\"map_file\":\"/x\"}",
	        "files dataset: map and map_file: give one"},
	    {"{\"map_file\":3}",
	        "files dataset: map_file must be a file name"},
	    {"{\"map_file\":\"/nonexistent/pasco-map.json\"}",
	        "files dataset: map_file '/nonexistent/pasco-map.json' cannot "
	        "be opened"},
	    {"{\"repeat_batches\":1}",
	        "files dataset: repeat_batches must be true or false"},
	    {"{\"repeat_batches\":true,\"repeat\":0}",
	        "files dataset: repeat must be -1 or positive"},
	    {"{\"map\":[]}", "dataset map: the map is not an object"},
	    {"{\"format\":\"csv\",\"label\":\"y\",\"take\":2,"
	     "\"files\":[\"/x\"]}",
	        "files dataset: take is for a tfrecord dataset"},
	    {"{\"format\":\"tfrecord\",\"take\":0,\"files\":[\"/x\"]}",
	        "files dataset: take must be an integer >= 1"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(*cases); k++) {
		char                  name[512];
		pasco_dataset_context ctx = {0, 1, 0, NULL};
		pasco_dataset        *ds  = (pasco_dataset *) 1;
		snprintf(name, sizeof(name), "pasco.files:%s", cases[k].spec);
		cr_assert_neq(pasci_dataset_build(name, &ctx, &ds), 0, "%s",
		    cases[k].spec);
		cr_assert_null(ds);
		cr_assert_str_eq(pasco_dataset_last_error(), cases[k].want,
		    "%s", cases[k].spec);
	}
}

/* The good map's JSON with bytes changed (a fixed sequence of edits from
 * a seeded generator): each is refused with a message or parses and runs,
 * either way without a crash. */
Test(dataset_map, mangled_maps_never_crash)
{
	static const char *const words[]    = {"a", "b", "c", "a", "b", "c"};
	static const char        alphabet[] = "[]{}\",:-019az ";
	const float              f[]        = {1, 2, 3};
	size_t                   len        = strlen(GOOD);
	uint64_t                 state      = 42;
	int                      parsed = 0, refused_n = 0;
	for (int round = 0; round < 400; round++) {
		char              *text = strdup(GOOD);
		cJSON             *j;
		pasci_dataset_map *m = NULL;
		for (int e = 0; e < 1 + round % 3; e++) {
			state = state * 6364136223846793005ULL +
			        1442695040888963407ULL;
			text[(state >> 33) % len] =
			    alphabet[(state >> 17) % (sizeof(alphabet) - 1)];
		}
		if ((j = cJSON_Parse(text)) != NULL) {
			if (pasci_dataset_map_parse(j, &m) == 0) {
				pasco_value *in  = batch(words, f, 3, 2),
				            *out = NULL;
				if (pasci_dataset_map_run(m, in, &out) != 0) {
					cr_assert_neq(
					    pasco_dataset_last_error()[0], 0);
				}
				pasco_value_free(out);
				pasco_value_free(in);
				pasci_dataset_map_free(m);
				parsed++;
			} else {
				cr_assert_null(m);
				cr_assert(
				    strncmp(pasco_dataset_last_error(),
				        "dataset map", 11) == 0 ||
				        strstr(pasco_dataset_last_error(),
				            "dataset map") != NULL,
				    "%s", pasco_dataset_last_error());
				refused_n++;
			}
			cJSON_Delete(j);
		}
		free(text);
	}
	cr_assert_gt(refused_n, 10, "the edits reach the checks");
	cr_assert_gt(parsed, 0);
}
