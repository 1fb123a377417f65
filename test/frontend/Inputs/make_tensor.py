"""Writes a 1-D TensorProto: make_tensor.py OUT.pb int64|float VALUE..."""
import sys

import numpy as np
from onnx import numpy_helper

out, dtype, values = sys.argv[1], sys.argv[2], sys.argv[3:]
array = np.array([float(v) for v in values],
                 dtype=np.int64 if dtype == "int64" else np.float32)
with open(out, "wb") as f:
    f.write(numpy_helper.from_array(array).SerializeToString())
