/*
 * The JSON readers of model configs (model_impl.h): each checks one field
 * and names where it is in its message. Stateless: any thread.
 */
#include "model_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEED_EXACT 9007199254740992.0 /* 2^53 */

/* Reading: each reader checks its fields and names where it is
 * (`where`: "layers[1] (dense_1)") in its message. */

int
pasci_json_check_keys(
    const cJSON *o, const char *const *keys, size_t n, const char *where)
{
	const cJSON *it;
	if (!cJSON_IsObject(o)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: not a JSON object", where);
	}
	cJSON_ArrayForEach(it, o)
	{
		size_t k = 0;
		while (k < n && strcmp(keys[k], it->string) != 0) {
			k++;
		}
		if (k == n) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: unknown field '%s'", where, it->string);
		}
	}
	return PASCO_OK;
}

/* A number field: absent leaves *v; integral requires a whole number in
 * [lo, 2^53]. */
int
pasci_json_number(const cJSON *o, const char *key, double *v, bool integral,
    double lo, const char *where)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (it == NULL) {
		return PASCO_OK;
	}
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
	    (integral && (it->valuedouble != floor(it->valuedouble) ||
	                     it->valuedouble > SEED_EXACT)) ||
	    it->valuedouble < lo) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s must be %s >= %g", where, key,
		    integral ? "an integer" : "a number", lo);
	}
	*v = it->valuedouble;
	return PASCO_OK;
}

int
pasci_json_bool(const cJSON *o, const char *key, bool *v, const char *where)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (it != NULL && !cJSON_IsBool(it)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: %s must be true or false", where, key);
	}
	if (it != NULL) {
		*v = cJSON_IsTrue(it);
	}
	return PASCO_OK;
}

int
pasci_json_int(
    const cJSON *o, const char *key, int64_t *v, double lo, const char *where)
{
	double d  = (double) *v;
	int    rv = pasci_json_number(o, key, &d, true, lo, where);
	*v        = (int64_t) d;
	return rv;
}

int
pasci_json_size(const cJSON *o, const char *key, int64_t *v, double lo,
    int64_t most, const char *where)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (pasci_json_int(o, key, v, lo, where) != 0) {
		return PASCO_EINVAL;
	}
	return it != NULL ? pasci_json_bound(where, key, *v, most) : PASCO_OK;
}

int
pasci_json_bound(const char *where, const char *key, int64_t v, int64_t most)
{
	int log2;
	if (v <= most) {
		return PASCO_OK;
	}
	log2 = (most & (most - 1)) == 0 ? __builtin_ctzll((uint64_t) most) : 0;
	if (log2 > 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s is %lld; the most is 2^%d (%lld)", where, key,
		    (long long) v, log2, (long long) most);
	}
	return pasci_model_fail(PASCO_EINVAL,
	    "%s: %s is %lld; the most is %lld", where, key, (long long) v,
	    (long long) most);
}

int
pasci_json_seed(const cJSON *o, uint64_t *seed, const char *where)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "seed");
	char        *end;
	double       d = 0;
	if (cJSON_IsString(it)) {
		*seed = strtoull(it->valuestring, &end, 10);
		if (it->valuestring[0] < '0' || it->valuestring[0] > '9' ||
		    *end != 0) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: seed '%s' is not a number", where,
			    it->valuestring);
		}
		return PASCO_OK;
	}
	if (pasci_json_number(o, "seed", &d, true, 0, where) != 0) {
		return PASCO_EINVAL;
	}
	*seed = it != NULL ? (uint64_t) d : *seed;
	return PASCO_OK;
}

/* An optional string field: *s (unchanged when absent). */
int
pasci_json_string(
    const cJSON *o, const char *key, const char **s, const char *where)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (it != NULL && !cJSON_IsString(it)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: %s must be a string", where, key);
	}
	if (it != NULL) {
		*s = it->valuestring;
	}
	return PASCO_OK;
}

/* o's "class_name" among names (index into *kind) and its "config". */
int
pasci_json_read_class(const cJSON *o, const char *const *names, size_t n,
    int *kind, const cJSON **config, const char *where)
{
	static const char *const keys[] = {"class_name", "config"};
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(o, "class_name");
	if (pasci_json_check_keys(o, keys, 2, where) != 0) {
		return PASCO_EINVAL;
	}
	*kind = 0;
	for (size_t i = 1; cJSON_IsString(cls) && i < n; i++) {
		if (names[i] != NULL &&
		    strcmp(names[i], cls->valuestring) == 0) {
			*kind = (int) i;
		}
	}
	if (*kind == 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: unknown class_name '%s'", where,
		    cJSON_IsString(cls) ? cls->valuestring : "(none)");
	}
	*config = cJSON_GetObjectItemCaseSensitive(o, "config");
	if (*config == NULL) {
		static const cJSON empty = {.type = cJSON_Object};
		*config                  = &empty;
	}
	return PASCO_OK;
}
