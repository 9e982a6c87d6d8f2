/*
 * The tutorial's data and model (those of examples/embedding_classifier,
 * included from it without its chief) trained by TensorFlow's custom training
 * loop: a step function of our own that calls the model and the gradient
 * tape itself (the model's reads, its forward pass, the loss with the L2
 * term, the gradients in one apply, the accuracy on a ps), scheduled in
 * epochs by the chief. Then an exactly-once evaluation prints
 * `accuracy = `.
 *
 *     pasco launch --ps 2 --workers 2 -- build/examples/custom_loop
 */
#define TUTORIAL_PARTS_ONLY
#include "embedding_classifier.c"

/* args: the model's, an iterator, the accuracy's state (on a ps). */
PASCO_FUNCTION(train_step)
{
	pasco_model    *m = NULL;
	pasco_dataset  *it;
	pasco_variable *acc;
	pasco_value    *b  = NULL;
	pasco_tape     *tp = NULL;
	pasco_tape_var  v[3];
	pasco_tensor   *loss_t;
	pasco_optimizer opt = pasco_rmsprop(0.1, 0.9, 0, false);
	int             rv  = pasco_model_from_call(call, 0, &m);
	size_t          n   = rv == 0 ? pasco_model_num_args(m) : 0;
	if (rv == 0 && (rv = pasco_call_iterator(call, n, &it)) == 0 &&
	    (rv = pasco_call_variable(call, n + 1, &acc)) == 0 &&
	    (rv = pasco_dataset_next(it, &b)) != 0) {
		pasco_call_fail(
		    call, rv, "training data: %s", pasco_dataset_last_error());
	} else if (rv == 0 && (rv = pasco_tape_alloc(&tp, true, 0)) == 0) {
		const pasco_tensor *x =
		    pasco_value_as_tensor(pasco_value_item(b, 0));
		const pasco_tensor *y =
		    pasco_value_as_tensor(pasco_value_item(b, 1));
		/* the variables read (the rows of x's ids), the forward pass
		 */
		pasco_tnode *p    = pasco_model_call(m, tp, &x, v);
		pasco_tnode *loss = pasco_t_add(tp,
		    pasco_t_binary_crossentropy(tp, p, y),
		    pasco_t_l2(tp, v[1].node, 1e-4)); /* the Dense's kernel */
		if ((rv = pasco_tape_apply(tp, loss, 3, v, &opt)) != 0) {
			pasco_call_fail(
			    call, rv, "%s", pasco_tape_message(tp));
		} else if ((rv = pasco_metric_update(acc,
		                PASCO_METRIC_ACCURACY, pasco_tnode_value(p),
		                y)) != 0) {
			pasco_call_fail(
			    call, rv, "%s", pasco_variable_error(acc));
		} else if ((rv = pasco_tensor_scalar(&loss_t, PASCO_F64,
		                pasco_tensor_get(
		                    pasco_tnode_value(loss), 0))) == 0) {
			pasco_call_return(call, pasco_value_tensor(loss_t));
		}
	}
	pasco_tape_free(tp);
	pasco_value_free(b);
	pasco_model_free(m);
	return rv;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	int                        epochs = 5, steps = 20, rv;
	pasco_partitioner          two   = pasco_fixed_shards_partitioner(2);
	pasco_initializer          zeros = pasco_init_zeros();
	pasco_strategy            *s     = NULL;
	pasco_coordinator         *c     = NULL;
	pasco_per_worker_dataset  *d     = NULL;
	pasco_per_worker_iterator *it    = NULL;
	pasco_variable            *acc   = NULL;
	pasco_arg                  args[8];
	size_t                     n = 0;
	double                     loss, accuracy = NAN;
	pasco_model               *m      = tutorial_model();
	example_option             opts[] = {
	                {"epochs", OPTION_INT, &epochs, 1, 1e7, "N  epochs (5)"},
	                {"steps", OPTION_INT, &steps, 1, 1e7, "N  steps per epoch (20)"},
	                {.name = NULL}};
	if ((rv = parse_options(argc, argv,
	         "pasco launch --ps N --workers M -- custom_loop [OPTIONS]",
	         opts)) >= 0 ||
	    m == NULL || evaluator_has_nothing_to_do(cluster)) {
		pasco_model_free(m);
		return rv >= 0 ? rv : m == NULL;
	}
	if ((rv = pasco_strategy_create(&s, cluster,
	         &(pasco_strategy_options){.partitioner = &two})) != 0 ||
	    (rv = pasco_model_create_variables(m, s)) != 0 ||
	    (rv = pasco_variable_create_init(&acc, s, "accuracy", PASCO_F64, 1,
	         (int64_t[]){2}, &zeros)) != 0 ||
	    (rv = pasco_coordinator_create(
	         &c, s, &(pasco_coordinator_options){.window = 1})) != 0 ||
	    (rv = pasco_per_worker_dataset_create(&d, c, "train_data")) != 0 ||
	    (rv = pasco_per_worker_iterator_create(&it, d)) != 0 ||
	    (rv = pasco_model_args(m, args, 6, &n)) != 0) {
		report(rv, "setting up", pasco_model_last_error());
		goto out;
	}
	args[n++] = pasco_arg_iterator(it);
	args[n++] = pasco_arg_variable(acc);
	for (int e = 0; e < epochs && rv == 0; e++) {
		if ((rv = pasco_metric_reset(acc)) == 0 &&
		    (rv = run_epoch(c, "train_step", args, n, steps, &loss)) ==
		        0 &&
		    (rv = pasco_metric_result(
		         acc, PASCO_METRIC_ACCURACY, &accuracy)) == 0) {
			print_epoch_line(e, loss, accuracy);
		}
	}
	if (rv == 0 &&
	    (rv = evaluate_accuracy(c, m, "eval_data", 0, &accuracy)) != 0) {
		report_failure(rv, s);
	}
out:
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	pasco_coordinator_destroy(c);
	pasco_variable_free(acc);
	pasco_model_free(m);
	pasco_strategy_destroy(s);
	return rv == 0 && accuracy >= 0.95 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
