/*
 * What the table printers share (layer_table.c, optimizer_table.c): the
 * JSON array of a table's kinds, 1 to count - 1, for the Python checks in
 * tests/python. Header-only: each printer is one program.
 */
#ifndef PASCO_TEST_KIND_TABLE_H
#define PASCO_TEST_KIND_TABLE_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints at(k) for every kind k as one JSON array; at returns NULL for a
 * kind without a descriptor of its own, which fails the program, naming
 * it. Returns main's status. */
static inline int
print_kind_table(const char *what, int count, cJSON *(*at)(int k))
{
	cJSON *kinds = cJSON_CreateArray();
	char  *out;
	for (int k = 1; kinds != NULL && k < count; k++) {
		cJSON *o = at(k);
		if (o == NULL) {
			fprintf(stderr, "%s: kind %d has no descriptor of its own\n",
			    what, k);
			cJSON_Delete(kinds);
			return 1;
		}
		cJSON_AddItemToArray(kinds, o);
	}
	if (kinds == NULL || (out = cJSON_PrintUnformatted(kinds)) == NULL) {
		fprintf(stderr, "%s: out of memory\n", what);
		cJSON_Delete(kinds);
		return 1;
	}
	puts(out);
	free(out);
	cJSON_Delete(kinds);
	return 0;
}

#endif
