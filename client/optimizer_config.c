/* Optimizer configurations: Keras's defaults (base/optimizer_desc.c, the
 * one place that says what each optimizer is) with the named arguments
 * set. The updates run on the ps: ps/optimizer_apply.c. */
#include "optimizer_desc.h"

/* kind's defaults; kind is one of pasco_optimizer_kind's, so it has
 * them. */
static pasco_optimizer
defaults_of(pasco_optimizer_kind kind, double learning_rate)
{
	pasco_optimizer o = pasci_opt_desc_of((int) kind)->defaults;
	o.learning_rate   = learning_rate;
	return o;
}

pasco_optimizer
pasco_sgd(double learning_rate, double momentum, bool nesterov)
{
	pasco_optimizer o = defaults_of(PASCO_OPT_SGD, learning_rate);
	o.momentum        = momentum;
	o.nesterov        = nesterov;
	return o;
}

pasco_optimizer
pasco_adagrad(double learning_rate)
{
	return defaults_of(PASCO_OPT_ADAGRAD, learning_rate);
}

pasco_optimizer
pasco_rmsprop(double learning_rate, double rho, double momentum, bool centered)
{
	pasco_optimizer o = defaults_of(PASCO_OPT_RMSPROP, learning_rate);
	o.rho             = rho;
	o.momentum        = momentum;
	o.centered        = centered;
	return o;
}

pasco_optimizer
pasco_adam(double learning_rate, bool amsgrad)
{
	pasco_optimizer o = defaults_of(PASCO_OPT_ADAM, learning_rate);
	o.amsgrad         = amsgrad;
	return o;
}

pasco_optimizer
pasco_ftrl(double learning_rate, double l1, double l2)
{
	pasco_optimizer o = defaults_of(PASCO_OPT_FTRL, learning_rate);
	o.l1              = l1;
	o.l2              = l2;
	return o;
}
