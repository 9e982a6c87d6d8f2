# Keras 3 (keras/src/callbacks: reduce_lr_on_plateau.py,
# learning_rate_scheduler.py, csv_logger.py, terminate_on_nan.py,
# lambda_callback.py, callback.py) and fit's verbose (keras/src/trainers/
# trainer.py): the callbacks of issue 33 (h-cb).
callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=0.0001, cooldown=0, min_lr=0.0)
callbacks.LearningRateScheduler(schedule, verbose=0)
callbacks.CSVLogger(filename, separator=",", append=False)
callbacks.TerminateOnNaN(raise_error=False)
callbacks.LambdaCallback(on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None)
callbacks.Callback.on_train_batch_begin(self, batch, logs=None)
callbacks.Callback.on_train_batch_end(self, batch, logs=None)
callbacks.Callback.on_epoch_begin(self, epoch, logs=None)
callbacks.Callback.on_epoch_end(self, epoch, logs=None)
callbacks.Callback.set_params(self, params)
models.Model.fit(verbose="auto")
