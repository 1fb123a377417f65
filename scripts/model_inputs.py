"""Seeded random inputs for a model's graph inputs, saved as .npy, shared by
the benchmark and the onnxruntime comparison test."""
import os

import numpy as np
import onnx


def random_inputs(model, batch, workdir, name, rng):
    """Returns (feeds, mpc_args): int64 inputs in [0, 10), bool ones true
    with probability 3/4, float ones standard normal; symbolic dims set to
    `batch`."""
    inits = {i.name for i in model.graph.initializer}
    feeds, args = {}, []
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else batch
                 for d in tt.shape.dim]
        if tt.elem_type == onnx.TensorProto.INT64:
            value = rng.integers(0, 10, size=shape, dtype=np.int64)
        elif tt.elem_type == onnx.TensorProto.BOOL:
            value = rng.random(shape) < 0.75
        else:
            value = rng.standard_normal(shape).astype(np.float32)
        feeds[inp.name] = value
        path = os.path.join(workdir, f"{name}.{inp.name}.npy")
        np.save(path, value)
        args += ["--input", f"{inp.name}={path}"]
    return feeds, args
