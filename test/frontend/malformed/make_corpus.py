"""Regenerates the malformed-model corpus (binary files committed beside this
script). Each file breaks one rule the importer must report in one line.

usage: python3 make_corpus.py [OUT_DIR]
"""
import os
import random
import sys

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
F = TensorProto.FLOAT


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=17, extra_opsets=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                            *extra_opsets])
    m.ir_version = 8
    return m


def relu_model(**kw):
    return model([helper.make_node("Relu", ["X"], ["Y"])], [vi("X", [2])],
                 [vi("Y", [2])], **kw)


def tensor(name, dims, raw=None, floats=None, elem=F):
    """A TensorProto built by hand: helper.make_tensor refuses bad sizes."""
    t = TensorProto(name=name, data_type=elem, dims=dims)
    if raw is not None:
        t.raw_data = raw
    if floats is not None:
        t.float_data.extend(floats)
    return t


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.SerializeToString())


def external(location, offset=None, length=None):
    t = tensor("W", [2])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset),
                 ("length", length)):
        if v is not None:
            t.external_data.add(key=k, value=str(v))
    return model([helper.make_node("Add", ["X", "W"], ["Y"])], [vi("X", [2])],
                 [vi("Y", [2])], inits=[t])


good = relu_model().SerializeToString()
write("empty.onnx", b"")
write("truncated.onnx", good[: len(good) // 2])
write("corrupt.onnx", good[:4] + b"\xff\xff\xff\xff\xff\xff" + good[10:])
random.seed(1)
write("random-bytes.onnx", bytes([0x0f]) + bytes(random.getrandbits(8)
                                                 for _ in range(255)))
write("json.onnx", b'{"graph": {"node": []}}\n')
m = onnx.ModelProto(ir_version=8)
write("no-graph.onnx", m)
write("unsupported-op.onnx",
      model([helper.make_node("Det", ["X"], ["Y"])], [vi("X", [2, 2])],
            [vi("Y", [])]))
write("unsupported-opset.onnx", relu_model(opset=29))
write("bad-attribute-type.onnx",
      model([helper.make_node("Transpose", ["X"], ["Y"], perm="0")],
            [vi("X", [2, 2])], [vi("Y", [2, 2])]))
write("dangling-input.onnx",
      model([helper.make_node("Add", ["X", "nowhere"], ["Y"])],
            [vi("X", [2])], [vi("Y", [2])]))
write("cycle.onnx",
      model([helper.make_node("Add", ["X", "B"], ["A"], name="first"),
             helper.make_node("Relu", ["A"], ["B"], name="second"),
             helper.make_node("Relu", ["B"], ["Y"], name="third")],
            [vi("X", [2])], [vi("Y", [2])]))
t = tensor("W", [2, 3], raw=np.zeros(4, np.float32).tobytes())
write("initializer-raw-size.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])], [vi("X", [2, 3])],
            [vi("Y", [2, 3])], inits=[t]))
t = tensor("W", [2, 3], floats=[1.0, 2.0])
write("initializer-typed-size.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])], [vi("X", [2, 3])],
            [vi("Y", [2, 3])], inits=[t]))
t = tensor("W", [-2], floats=[])
write("initializer-negative-dim.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])], [vi("X", [2])],
            [vi("Y", [2])], inits=[t]))
t = tensor("W", [1 << 40, 1 << 40], floats=[])
write("initializer-huge-dims.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])], [vi("X", [2])],
            [vi("Y", [2])], inits=[t]))
t = numpy_helper.from_array(np.zeros(2, np.float64), "W")
write("initializer-double.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])], [vi("X", [2])],
            [vi("Y", [2])], inits=[t]))
write("external-missing.onnx", external("weights.bin"))
write("external-outside.onnx", external("../outside.bin"))
write("external-absolute.onnx", external("/etc/hostname"))
write("external-range.bin", np.zeros(2, np.float32).tobytes())
write("external-range.onnx", external("external-range.bin", offset=4,
                                      length=8))
inp = helper.make_value_info("X", helper.make_tensor_type_proto(F, None))
write("input-without-shape.onnx",
      model([helper.make_node("Relu", ["X"], ["Y"])], [inp], [vi("Y", [2])]))
seq = helper.make_value_info(
    "X", helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [2])))
write("input-sequence.onnx",
      model([helper.make_node("Identity", ["X"], ["Y"])], [seq],
            [vi("Y", [2])]))
write("training-opset.onnx",
      relu_model(extra_opsets=[helper.make_opsetid("ai.onnx.preview.training",
                                                   2)]))
m = relu_model()
del m.opset_import[:]
m.opset_import.append(helper.make_opsetid("com.example", 1))
write("no-default-opset.onnx", m)
write("cast-to-double.onnx",
      model([helper.make_node("Cast", ["X"], ["Y"], to=TensorProto.DOUBLE)],
            [vi("X", [2])], [vi("Y", [2], TensorProto.DOUBLE)]))
write("constant-string.onnx",
      model([helper.make_node("Constant", [], ["Y"], value_string="hi")], [],
            [vi("Y", [], TensorProto.STRING)]))
write("too-few-inputs.onnx",
      model([helper.make_node("Gemm", ["X"], ["Y"])], [vi("X", [2, 2])],
            [vi("Y", [2, 2])]))
write("missing-required-input.onnx",
      model([helper.make_node("OneHot", ["X", "", "V"], ["Y"])],
            [vi("X", [2], TensorProto.INT64), vi("V", [2])], [vi("Y", [2, 3])]))
then_g = helper.make_graph([helper.make_node("Relu", ["X"], ["T"])], "then",
                           [], [vi("T", [2])])
write("subgraph-if.onnx",
      model([helper.make_node("If", ["C"], ["Y"], then_branch=then_g,
                              else_branch=then_g)],
            [vi("C", [], TensorProto.BOOL), vi("X", [2])], [vi("Y", [2])]))
write("duplicate-output.onnx",
      model([helper.make_node("Relu", ["X"], ["Y"], name="a"),
             helper.make_node("Relu", ["X"], ["Y"], name="b")],
            [vi("X", [2])], [vi("Y", [2])]))
write("negative-input-dim.onnx",
      model([helper.make_node("Relu", ["X"], ["Y"])], [vi("X", [-3])],
            [vi("Y", [2])]))

# Fields given twice or in two forms, and declarations the graph breaks
# (onnx.checker's families): each is ambiguous, so each is an error.
write("external-directory.onnx", external("."))
write("external-nul.onnx", external("weights\0.bin"))
write("external-length.onnx", external("external-range.bin", length=4))
m = external("external-range.bin")
m.graph.initializer[0].external_data.add(key="location", value="other.bin")
write("external-key-twice.onnx", m)
m = external("external-range.bin")
m.graph.initializer[0].raw_data = np.zeros(2, np.float32).tobytes()
write("external-and-raw.onnx", m)
t = tensor("W", [2], raw=np.zeros(2, np.float32).tobytes(), floats=[1, 2])
write("float-and-raw.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])], [vi("X", [2])],
            [vi("Y", [2])], inits=[t]))
t = tensor("W", [2])
t.int64_data.extend([1, 2])
write("typed-field-mismatch.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])], [vi("X", [2])],
            [vi("Y", [2])], inits=[t]))
m = relu_model()
m.ir_version = 999
write("ir-version-future.onnx", m)
write("opset-twice.onnx", relu_model(extra_opsets=[helper.make_opsetid(
    "", 13)]))
m = relu_model()
m.metadata_props.add(key="author", value="a")
m.metadata_props.add(key="author", value="b")
write("metadata-twice.onnx", m)
n = helper.make_node("Transpose", ["X"], ["Y"], perm=[1, 0])
n.attribute.append(helper.make_attribute("perm", [0, 1]))
write("attribute-twice.onnx",
      model([n], [vi("X", [2, 3])], [vi("Y", [3, 2])]))
n = helper.make_node("LeakyRelu", ["X"], ["Y"], alpha=0.1)
n.attribute[0].i = 3
write("attribute-two-values.onnx", model([n], [vi("X", [2])], [vi("Y", [2])]))
n = helper.make_node("LeakyRelu", ["X"], ["Y"], alpha=0.1)
n.attribute[0].type = onnx.AttributeProto.INT
write("attribute-type-mismatch.onnx",
      model([n], [vi("X", [2])], [vi("Y", [2])]))
write("input-twice.onnx",
      model([helper.make_node("Relu", ["X"], ["Y"])],
            [vi("X", [2]), vi("X", [2])], [vi("Y", [2])]))
w = numpy_helper.from_array(np.ones(2, np.float32), "W")
write("initializer-twice.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])], [vi("X", [2])],
            [vi("Y", [2])], inits=[w, w]))
write("initializer-input-type.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])],
            [vi("X", [2]), vi("W", [2], TensorProto.FLOAT16)], [vi("Y", [2])],
            inits=[w]))
write("initializer-input-shape.onnx",
      model([helper.make_node("Add", ["X", "W"], ["Y"])],
            [vi("X", [2]), vi("W", [1, 2])], [vi("Y", [2])], inits=[w]))
write("output-declared-type.onnx",
      model([helper.make_node("Relu", ["X"], ["Y"])], [vi("X", [2])],
            [vi("Y", [2], TensorProto.FLOAT16)]))
write("output-declared-shape.onnx",
      model([helper.make_node("Relu", ["X"], ["Y"])], [vi("X", [2])],
            [vi("Y", [3])]))
shape = numpy_helper.from_array(np.array([1 << 20] * 3, np.int64), "S")
write("computed-too-large.onnx",
      model([helper.make_node("ConstantOfShape", ["S"], ["Y"])], [],
            [vi("Y", [1 << 20] * 3)], inits=[shape]))
