"""scikit-learn's breast-cancer set (30 features, 2 classes) as a Keras user
writes it: numpy arrays into fit, Normalization adapted on the training
rows, BatchNormalization, and ReduceLROnPlateau on the validation loss.
Prints the test accuracy beside scikit-learn's LogisticRegression on the
same stratified split.
    pasco launch --ps 2 --workers 2 -- python3 examples/keras_breast_cancer.py
"""
import pasco
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def chief(cluster):
    x, y = load_breast_cancer(return_X_y=True)
    x = x.astype("float32")
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, stratify=y, random_state=0)
    strategy = pasco.ParameterServerStrategy(cluster)
    with strategy.scope():
        norm = pasco.layers.Normalization()
        model = pasco.Sequential([
            norm,
            pasco.layers.Dense(32),
            pasco.layers.BatchNormalization(),
            pasco.layers.Activation("relu"),
            pasco.layers.Dense(1, activation="sigmoid")])
    norm.adapt(x_train)
    model.compile(optimizer=pasco.optimizers.Adam(0.01),
                  loss="binary_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=32, epochs=30,
              validation_split=0.2, verbose=2, callbacks=[
                  pasco.callbacks.ReduceLROnPlateau(factor=0.5, patience=3)])
    _, accuracy = model.evaluate(x_test, y_test)
    lr = make_pipeline(StandardScaler(), LogisticRegression())
    lr.fit(x_train, y_train)
    print(f"test accuracy {accuracy:.4f}, "
          f"scikit-learn's LogisticRegression {lr.score(x_test, y_test):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
