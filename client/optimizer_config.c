/* Optimizer configurations with Keras's defaults (the updates run on the
 * ps: ps/optimizer_apply.c; what each optimizer is, its slots by name:
 * base/optimizer_desc.c). */
#include "pasco/optimizer.h"

pasco_optimizer
pasco_sgd(double learning_rate, double momentum, bool nesterov)
{
	return (pasco_optimizer){.kind = PASCO_OPT_SGD,
	    .learning_rate             = learning_rate,
	    .momentum                  = momentum,
	    .nesterov                  = nesterov};
}

pasco_optimizer
pasco_adagrad(double learning_rate)
{
	return (pasco_optimizer){.kind = PASCO_OPT_ADAGRAD,
	    .learning_rate             = learning_rate,
	    .epsilon                   = 1e-7,
	    .initial_accumulator_value = 0.1};
}

pasco_optimizer
pasco_rmsprop(double learning_rate, double rho, double momentum, bool centered)
{
	return (pasco_optimizer){.kind = PASCO_OPT_RMSPROP,
	    .learning_rate             = learning_rate,
	    .rho                       = rho,
	    .momentum                  = momentum,
	    .centered                  = centered,
	    .epsilon                   = 1e-7};
}

pasco_optimizer
pasco_adam(double learning_rate, bool amsgrad)
{
	return (pasco_optimizer){.kind = PASCO_OPT_ADAM,
	    .learning_rate             = learning_rate,
	    .beta_1                    = 0.9,
	    .beta_2                    = 0.999,
	    .amsgrad                   = amsgrad,
	    .epsilon                   = 1e-7};
}

pasco_optimizer
pasco_ftrl(double learning_rate, double l1, double l2)
{
	return (pasco_optimizer){.kind = PASCO_OPT_FTRL,
	    .learning_rate             = learning_rate,
	    .learning_rate_power       = -0.5,
	    .initial_accumulator_value = 0.1,
	    .l1                        = l1,
	    .l2                        = l2};
}
