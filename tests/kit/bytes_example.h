/*
 * A serialized tf.train.Example with a bytes_list feature of any number
 * of values (pasco_example_encode writes a bytes_list of one value only)
 * and an int64 "label", built with the generated protobuf-c code, for the
 * tests of HASHED features.
 */
#ifndef PASCO_TEST_BYTES_EXAMPLE_H
#define PASCO_TEST_BYTES_EXAMPLE_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "example.pb-c.h"

/* {name: bytes_list values[0..n), "label": int64_list [label]}, malloc'd
 * into *buf (the caller frees it), its size in *len. */
static inline void
bytes_example(const char *name, const char *const *values, size_t n,
    int64_t label, void **buf, size_t *len)
{
	ProtobufCBinaryData                 blobs[16];
	Pasco__Wire__BytesList              bl;
	Pasco__Wire__Int64List              il;
	Pasco__Wire__Feature                f[2];
	Pasco__Wire__Features__FeatureEntry e[2], *ep[2] = {&e[0], &e[1]};
	Pasco__Wire__Features               fs;
	Pasco__Wire__Example                ex;
	cr_assert(n <= 16);
	for (size_t i = 0; i < n; i++) {
		blobs[i] = (ProtobufCBinaryData){
		    strlen(values[i]), (uint8_t *) values[i]};
	}
	pasco__wire__bytes_list__init(&bl);
	bl.n_value = n;
	bl.value   = blobs;
	pasco__wire__int64_list__init(&il);
	il.n_value = 1;
	il.value   = &label;
	for (int i = 0; i < 2; i++) {
		pasco__wire__feature__init(&f[i]);
		pasco__wire__features__feature_entry__init(&e[i]);
		e[i].value = &f[i];
	}
	e[0].key        = (char *) name;
	f[0].kind_case  = PASCO__WIRE__FEATURE__KIND_BYTES_LIST;
	f[0].bytes_list = &bl;
	e[1].key        = (char *) "label";
	f[1].kind_case  = PASCO__WIRE__FEATURE__KIND_INT64_LIST;
	f[1].int64_list = &il;
	pasco__wire__features__init(&fs);
	fs.n_feature = 2;
	fs.feature   = ep;
	pasco__wire__example__init(&ex);
	ex.features = &fs;
	*len        = pasco__wire__example__get_packed_size(&ex);
	cr_assert_not_null(*buf = malloc(*len + 1));
	pasco__wire__example__pack(&ex, *buf);
}

#endif
