"""tf.distribute's names that a pasco program uses
(``pasco.distribute.InputContext``)."""

from ._dataset_context import InputContext

__all__ = ["InputContext"]
