/*
 * The layer kinds, one line each: PASCO_LAYER_KIND(NAME, file) gives the
 * enum constant PASCO_LAYER_<NAME> (layers.h; numbered from 1 in this
 * order), its descriptor pasci_layer_<file>_desc in model/layers/<file>.c,
 * which the build compiles because its line is here (model/meson.build
 * reads this file), and its row of the library's table of kinds
 * (model/layers/table.c). Adding a layer: docs/ARCHITECTURE.md, "Adding
 * a layer". A new kind goes last: the numbers of the others stay.
 */
#ifndef PASCO_LAYER_KINDS_H
#define PASCO_LAYER_KINDS_H

#define PASCO_LAYER_KIND_LIST(PASCO_LAYER_KIND)                               \
	PASCO_LAYER_KIND(DENSE, dense)                                        \
	PASCO_LAYER_KIND(EMBEDDING, embedding)                                \
	PASCO_LAYER_KIND(DROPOUT, dropout)                                    \
	PASCO_LAYER_KIND(ACTIVATION, activation)                              \
	PASCO_LAYER_KIND(CONCATENATE, concatenate)                            \
	PASCO_LAYER_KIND(NORMALIZATION, normalization)                        \
	PASCO_LAYER_KIND(CUSTOM, custom)                                      \
	PASCO_LAYER_KIND(FLATTEN, flatten)                                    \
	PASCO_LAYER_KIND(RESHAPE, reshape)                                    \
	PASCO_LAYER_KIND(ADD, add)                                            \
	PASCO_LAYER_KIND(MULTIPLY, multiply)                                  \
	PASCO_LAYER_KIND(AVERAGE, average)                                    \
	PASCO_LAYER_KIND(DOT, dot)                                            \
	PASCO_LAYER_KIND(GLOBAL_AVERAGE_POOLING1D, global_average_pooling1d) \
	PASCO_LAYER_KIND(BATCH_NORMALIZATION, batch_norm)                     \
	PASCO_LAYER_KIND(LAYER_NORMALIZATION, layer_norm)                     \
	PASCO_LAYER_KIND(HASHING, hashing)                                    \
	PASCO_LAYER_KIND(STRING_LOOKUP, string_lookup)                        \
	PASCO_LAYER_KIND(INTEGER_LOOKUP, integer_lookup)                      \
	PASCO_LAYER_KIND(CATEGORY_ENCODING, category_encoding)                \
	PASCO_LAYER_KIND(DISCRETIZATION, discretization)                      \
	PASCO_LAYER_KIND(HASHED_CROSSING, hashed_crossing)

#endif
