"""Writes the ONNX backend node tests of the installed onnx package (its
case generators, onnx/backend/test/case/node: opsets up to the newest) in
the layout of onnx/backend/test/data/node: NAME/model.onnx and
NAME/test_data_set_0/{input,output}_i.pb. The pip wheel carries the
generators but not the data. Skips the work when OUT_DIR already holds the
set for this onnx version.

usage: gen_onnx_node_tests.py OUT_DIR
"""
import os
import shutil
import sys
import warnings

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node

out = sys.argv[1]
stamp = os.path.join(out, "ONNX_VERSION")
if os.path.exists(stamp) and open(stamp).read().strip() == onnx.__version__:
    sys.exit(0)
shutil.rmtree(out, ignore_errors=True)
tmp = out + ".tmp"
shutil.rmtree(tmp, ignore_errors=True)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the generators' own overflow notes
    cases = node.collect_testcases(None)
written = 0
for case in cases:
    graph = case.model.graph
    plain = all(v.type.HasField("tensor_type")
                for v in list(graph.input) + list(graph.output))
    if not plain:  # sequences, maps, optionals: nothing mpc reads
        continue
    d = os.path.join(tmp, case.name)
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(d, f"test_data_set_{i}")
        os.makedirs(ds)
        for kind, values, infos in (("input", inputs, graph.input),
                                    ("output", outputs, graph.output)):
            for j, (value, info) in enumerate(zip(values, infos)):
                t = numpy_helper.from_array(value, info.name) \
                    if not isinstance(value, onnx.TensorProto) else value
                with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(t.SerializeToString())
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    written += 1
with open(os.path.join(tmp, "ONNX_VERSION"), "w") as f:
    f.write(onnx.__version__ + "\n")
os.replace(tmp, out)
print(f"wrote {written} node tests of onnx {onnx.__version__} to {out}")
