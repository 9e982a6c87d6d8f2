/*
 * The optimizer kinds, one line each: PASCO_OPTIMIZER_KIND(NAME, file)
 * gives the enum constant PASCO_OPT_<NAME> (optimizer.h; numbered from 1
 * in this order: the numbers travel on the wire and in old checkpoint
 * manifests, so a new kind goes last), its descriptor pasci_opt_<file>_desc
 * in base/optimizers/<file>.c (its names, slots, hyperparameters, Keras's
 * defaults, checks and update kernels), which the build compiles because
 * its line is here (base/meson.build reads this file), and its row of the
 * library's table of kinds (base/optimizer_desc.c). Adding an optimizer:
 * docs/ARCHITECTURE.md, "Adding an optimizer".
 */
#ifndef PASCO_OPTIMIZER_KINDS_H
#define PASCO_OPTIMIZER_KINDS_H

#define PASCO_OPTIMIZER_KIND_LIST(PASCO_OPTIMIZER_KIND)                       \
	PASCO_OPTIMIZER_KIND(SGD, sgd)                                        \
	PASCO_OPTIMIZER_KIND(ADAGRAD, adagrad)                                \
	PASCO_OPTIMIZER_KIND(RMSPROP, rmsprop)                                \
	PASCO_OPTIMIZER_KIND(ADAM, adam)                                      \
	PASCO_OPTIMIZER_KIND(FTRL, ftrl)                                      \
	PASCO_OPTIMIZER_KIND(ADAMW, adamw)                                    \
	PASCO_OPTIMIZER_KIND(NADAM, nadam)

#endif
