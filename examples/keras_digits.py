"""scikit-learn's digits (8x8 images, 10 classes) as a Keras user writes it:
numpy arrays straight into fit, BatchNormalization, and a learning-rate
schedule that the parameter servers evaluate at each step. Prints the test
accuracy beside scikit-learn's MLPClassifier on the same stratified split.
    pasco launch --ps 2 --workers 2 -- python3 examples/keras_digits.py
"""
import pasco
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier


def chief(cluster):
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype("float32")
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, stratify=y, random_state=0)
    strategy = pasco.ParameterServerStrategy(cluster)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.layers.Dense(64),
            pasco.layers.BatchNormalization(),
            pasco.layers.Activation("relu"),
            pasco.layers.Dense(10, activation="softmax")])
    schedule = pasco.optimizers.schedules.ExponentialDecay(
        0.01, decay_steps=100, decay_rate=0.8)
    model.compile(optimizer=pasco.optimizers.Adam(schedule),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=32, epochs=20,
              validation_split=0.1, verbose=2)
    _, accuracy = model.evaluate(x_test, y_test)
    mlp = MLPClassifier(max_iter=1000, random_state=0).fit(x_train, y_train)
    print(f"test accuracy {accuracy:.4f}, "
          f"scikit-learn's MLP {mlp.score(x_test, y_test):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
