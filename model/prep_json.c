/*
 * The config fields the preprocessing kinds share (model/prep.h):
 * output_mode, the fields Keras has that Pasco takes only at their
 * defaults (sparse, ...), optional integers. Stateless: any thread.
 */
#include "prep.h"

#include <math.h>
#include <string.h>

#include "model_impl.h"

bool
pasci_prep_write_mode(cJSON *c, const pasco_prep *p)
{
	return cJSON_AddStringToObject(c, "output_mode",
	           pasco_output_mode_name(p->mode)) != NULL &&
	       cJSON_AddBoolToObject(c, "sparse", false) != NULL;
}

int
pasci_prep_read_mode(const cJSON *c, pasco_prep *p, const char *at)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, "output_mode");
	if (it == NULL || cJSON_IsNull(it)) {
		return pasci_prep_read_default(c, "sparse", "false", at);
	}
	for (int k = 0; cJSON_IsString(it) && k <= PASCO_OUTPUT_TF_IDF; k++) {
		if (strcmp(it->valuestring, pasco_output_mode_name(k)) == 0 ||
		    (k == PASCO_OUTPUT_TF_IDF &&
		        strcmp(it->valuestring, "tf-idf") == 0)) {
			p->mode = (pasco_output_mode) k;
			return pasci_prep_read_default(
			    c, "sparse", "false", at);
		}
	}
	return pasci_model_fail(PASCO_EINVAL,
	    "%s: output_mode must be \"int\", \"one_hot\", \"multi_hot\", "
	    "\"count\" or \"tf_idf\", got %s",
	    at,
	    cJSON_IsString(it) ? it->valuestring
	                       : "a value that is no string");
}

/* dflt is the field's value as JSON text: "false", "null", "\"utf-8\"". */
int
pasci_prep_read_default(
    const cJSON *c, const char *key, const char *dflt, const char *at)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, key);
	cJSON       *want;
	bool         same;
	if (it == NULL || cJSON_IsNull(it)) {
		return PASCO_OK;
	}
	want = cJSON_Parse(dflt);
	same = want != NULL && cJSON_Compare(it, want, true);
	cJSON_Delete(want);
	if (!same) {
		char *got = cJSON_PrintUnformatted(it);
		int   rv  = pasci_model_fail(PASCO_EINVAL,
		       "%s: %s must be %s (Pasco supports only Keras's default), "
		          "got %.60s",
		       at, key, dflt, got != NULL ? got : "another value");
		cJSON_free(got);
		return rv;
	}
	return PASCO_OK;
}

int
pasci_prep_read_opt_int(
    const cJSON *c, const char *key, bool *has, int64_t *v, const char *at)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, key);
	if (it == NULL || cJSON_IsNull(it)) {
		*has = false;
		return PASCO_OK;
	}
	if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) ||
	    fabs(it->valuedouble) > 0x1p53) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s must be null or an integer", at, key);
	}
	*has = true;
	*v   = (int64_t) it->valuedouble;
	return PASCO_OK;
}
