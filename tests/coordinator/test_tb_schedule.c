/*
 * The TensorBoard callback's epoch_learning_rate follows a learning-rate
 * schedule (pasco_tensorboard_options.learning_rate_schedule): at each
 * epoch's end it is the schedule's value at the global step then, Keras's
 * optimizer.learning_rate (written out here: ExponentialDecay's
 * lr0 * rate^(step / decay_steps)); a schedule that does not read is
 * refused naming it. The callback is driven directly; the event files
 * are read by the independent reader (tests/tools/read_events.py).
 */
#include "events_reader.h"
#include "helpers.h"

#include <math.h>
#include <stdlib.h>

TestSuite(tb_schedule, .timeout = 30);

Test(tb_schedule, the_learning_rate_scalar_follows_the_schedule)
{
	char              dir[] = "/tmp/pasco-tbsched-XXXXXX", sub[128];
	pasco_callback    cb;
	pasco_fit_context ctx  = {.epochs = 3, .steps_per_epoch = 7};
	pasco_logs        logs = {0};
	cJSON            *train;
	cr_assert_not_null(mkdtemp(dir));
	PASCO_PASS(pasco_callback_tensorboard(&cb,
	    &(pasco_tensorboard_options){.logdir = dir,
	        .learning_rate                   = 0.5,
	        .learning_rate_schedule =
	            "{\"class_name\": \"ExponentialDecay\", \"config\": "
	            "{\"initial_learning_rate\": 0.1, \"decay_steps\": 4, "
	            "\"decay_rate\": 0.5, \"staircase\": false, \"name\": "
	            "\"ExponentialDecay\"}}"}));
	PASCO_PASS(cb.begin(cb.user, &ctx));
	for (int e = 0; e < 3; e++) {
		ctx.epoch       = e;
		ctx.global_step = 7 * (e + 1);
		PASCO_PASS(cb.epoch_end(cb.user, &ctx, &logs));
	}
	cb.free(cb.user);
	snprintf(sub, sizeof(sub), "%s/train", dir);
	train = read_events_in(sub);
	for (int e = 0; e < 3; e++) {
		double want = 0.1 * pow(0.5, 7.0 * (e + 1) / 4);
		cr_assert_float_eq(
		    events_scalar(train, "epoch_learning_rate", e), want,
		    1e-7 * want, "epoch %d: %g, want %g", e,
		    events_scalar(train, "epoch_learning_rate", e), want);
	}
	cJSON_Delete(train);
	snprintf(sub, sizeof(sub), "rm -rf %s", dir);
	cr_assert_eq(system(sub), 0);
}

Test(tb_schedule, a_bad_schedule_is_refused_naming_it)
{
	pasco_callback cb;
	PASCO_FAIL(
	    pasco_callback_tensorboard(&cb,
	        &(pasco_tensorboard_options){.logdir = "/tmp/x",
	            .learning_rate_schedule =
	                "{\"class_name\": \"StepDecay\", \"config\": {}}"}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_fit_error(), "StepDecay") != NULL, "%s",
	    pasco_fit_error());
}
