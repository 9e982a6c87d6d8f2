"""tf.distribute.InputContext for distribute_datasets_from_function
(pasco.distribute.InputContext)."""

from __future__ import annotations

__all__ = ["InputContext"]


class InputContext:
    """What a dataset_fn is told (TensorFlow's tf.distribute.InputContext).

    A pasco dataset is described once, on the chief, and every worker
    builds the same description: so there is one input pipeline
    (``num_input_pipelines`` 1, ``input_pipeline_id`` 0), every worker
    reads the whole data set unless the dataset says otherwise, as
    TensorFlow's ParameterServerStrategy does when the dataset_fn does not
    shard. A step runs on one worker, one replica: ``num_replicas_in_sync``
    is 1, and ``get_per_replica_batch_size(b)`` is b."""

    def __init__(self, num_input_pipelines: int = 1,
                 input_pipeline_id: int = 0,
                 num_replicas_in_sync: int = 1) -> None:
        for name, v, low in (("num_input_pipelines", num_input_pipelines, 1),
                             ("input_pipeline_id", input_pipeline_id, 0),
                             ("num_replicas_in_sync", num_replicas_in_sync,
                              1)):
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ValueError(f"InputContext: {name}: expected an "
                                 f"integer >= {low}, got {v!r}")
        if input_pipeline_id >= num_input_pipelines:
            raise ValueError(f"InputContext: input_pipeline_id "
                             f"{input_pipeline_id} is not below "
                             f"num_input_pipelines {num_input_pipelines}")
        self._pipelines = num_input_pipelines
        self._id = input_pipeline_id
        self._replicas = num_replicas_in_sync

    @property
    def num_input_pipelines(self) -> int:
        return self._pipelines

    @property
    def input_pipeline_id(self) -> int:
        return self._id

    @property
    def num_replicas_in_sync(self) -> int:
        return self._replicas

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        """global_batch_size / num_replicas_in_sync; ValueError when it
        does not divide (TensorFlow's message)."""
        if global_batch_size % self._replicas:
            raise ValueError(f"The `global_batch_size` {global_batch_size}"
                             f" is not divisible by `num_replicas_in_sync`"
                             f" {self._replicas}")
        return global_batch_size // self._replicas

    def __repr__(self) -> str:
        return (f"tf.distribute.InputContext(input pipeline id {self._id}, "
                f"total: {self._pipelines})")
