"""Helpers shared by the Python tests that check values against numpy
references (keras_extras.py, keras_weights.py)."""

import numpy as np


def close(a, b, what, tol=2e-5):
    """a and b of one shape, equal to tol (absolute and relative), or an
    AssertionError naming what and both values."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"{what}: {a.tolist()}, numpy says "
                             f"{b.tolist()}")
    print(f"{what}: agrees with numpy", flush=True)


def weights(model):
    """The model's variables by name, as float64 arrays."""
    return {v.name: v.numpy().astype(np.float64) for v in model.variables}
