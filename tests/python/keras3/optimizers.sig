# Keras 3 (keras/src/optimizers: adamw.py, nadam.py, sgd.py, optimizer's
# clipnorm, clipvalue and global_clipnorm; keras/src/optimizers/schedules/
# learning_rate_schedule.py): the optimizers and schedules of issue 33.
optimizers.SGD(learning_rate=0.01, momentum=0.0, nesterov=False, clipnorm=None, clipvalue=None, global_clipnorm=None)
optimizers.Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07, amsgrad=False, clipnorm=None, clipvalue=None, global_clipnorm=None)
optimizers.AdamW(learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-07, amsgrad=False, clipnorm=None, clipvalue=None, global_clipnorm=None)
optimizers.Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07, clipnorm=None, clipvalue=None, global_clipnorm=None)
optimizers.RMSprop(learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-07, centered=False, clipnorm=None, clipvalue=None, global_clipnorm=None)
optimizers.Adagrad(learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-07, clipnorm=None, clipvalue=None, global_clipnorm=None)
optimizers.schedules.ExponentialDecay(initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay")
optimizers.schedules.PiecewiseConstantDecay(boundaries, values, name="PiecewiseConstant")
optimizers.schedules.PolynomialDecay(initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False, name="PolynomialDecay")
optimizers.schedules.CosineDecay(initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None, warmup_steps=0)
optimizers.schedules.InverseTimeDecay(initial_learning_rate, decay_steps, decay_rate, staircase=False, name="InverseTimeDecay")
