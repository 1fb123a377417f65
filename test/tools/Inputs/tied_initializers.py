"""Tiny models with two LayerNorms and one MatMul weight read twice (a
deliberate tie): merged.onnx has the norms share gamma (ones) and beta
(zeros), as torch.onnx.export writes a fresh model in its default eval
mode; apart.onnx gives each norm its own; merged_layers.onnx shares them
between norms named as two modules' ("/m/layers.0/ln/...",
"/m/layers.1/ln/..."), reused.onnx between one module's two calls, as
torch names them ("/m/block/ln/...", "/m/block/ln_1/...": ALBERT's shared
layers).

usage: tied_initializers.py DIR
"""
import sys
import numpy as np
from onnx import TensorProto as T, helper as h, numpy_helper as nh, save
def model(path, shared, names=("ln1", "ln2")):
    f = T.FLOAT
    inits = [nh.from_array(np.ones(8, np.float32), "g"), nh.from_array(np.zeros(8, np.float32), "b"),
             nh.from_array(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32), "w")]
    g2, b2 = ("g", "b") if shared else ("g2", "b2")
    if not shared:
        inits += [nh.from_array(np.ones(8, np.float32), "g2"), nh.from_array(np.zeros(8, np.float32), "b2")]
    nodes = [h.make_node("LayerNormalization", ["x", "g", "b"], ["h1"], name=names[0]),
             h.make_node("MatMul", ["h1", "w"], ["h2"], name="fc1"),
             h.make_node("LayerNormalization", ["h2", g2, b2], ["h3"], name=names[1]),
             h.make_node("MatMul", ["h3", "w"], ["y"], name="fc2"),  # w tied on purpose
             h.make_node("Mul", ["y", "y"], ["sq"], name="square"),
             h.make_node("ReduceMean", ["sq"], ["loss"], name="mean", keepdims=0)]
    save(h.make_model(h.make_graph(nodes, "g", [h.make_tensor_value_info("x", f, [4, 8])],
                                   [h.make_tensor_value_info("loss", f, [])], inits),
                      opset_imports=[h.make_opsetid("", 17)]), path)
model(sys.argv[1] + "/merged.onnx", True)
model(sys.argv[1] + "/apart.onnx", False)
model(sys.argv[1] + "/merged_layers.onnx", True,
      ("/m/layers.0/ln/LayerNormalization", "/m/layers.1/ln/LayerNormalization"))
model(sys.argv[1] + "/reused.onnx", True,
      ("/m/block/ln/LayerNormalization", "/m/block/ln_1/LayerNormalization"))
