"""make_linear.py OUT.onnx IN OUT: a model without a loss, y = x W^T + b
(seeded weights), for `mpc train --loss`."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out, n_in, n_out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
w = (rng.standard_normal((n_out, n_in)) * 0.1).astype(np.float32)
b = np.zeros(n_out, np.float32)
g = helper.make_graph(
    [helper.make_node("Gemm", ["x", "W", "B"], ["y"], transB=1)], "linear",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", n_in])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", n_out])],
    [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
save(m, out)
