# Keras 3 (keras/src/models/model.py, keras/src/trainers/trainer.py,
# keras/src/saving/saving_api.py): Model.fit, evaluate, predict, save,
# save_weights, load_weights, summary and load_model, Keras 3's argument
# names and defaults. verbose (Keras's "auto") is left out here: its
# default comes with the progress bar's work (callbacks).
models.Model.fit(x=None, y=None, batch_size=None, epochs=1, callbacks=None, validation_split=0.0, validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=1)
models.Model.evaluate(x=None, y=None, batch_size=None, sample_weight=None, steps=None, callbacks=None, return_dict=False)
models.Model.predict(x, batch_size=None, steps=None, callbacks=None)
models.Model.save(filepath, overwrite=True, zipped=None)
models.Model.save_weights(filepath, overwrite=True, max_shard_size=None)
models.Model.load_weights(filepath, skip_mismatch=False)
models.Model.summary(line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False, layer_range=None)
models.Sequential.fit(x=None, y=None, batch_size=None, epochs=1)
models.load_model(filepath, custom_objects=None, compile=True, safe_mode=True)
# Model.compile (keras/src/trainers/trainer.py): loss_weights for the
# model's one output (a number, a list or dict of one) scales its loss.
# metrics count every example once, weighted_metrics with fit's and
# evaluate's sample weights.
models.Model.compile(optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None)
