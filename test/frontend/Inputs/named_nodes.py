"""Writes a binary model whose nodes carry names (ONNX text syntax 1.12
cannot name nodes)."""
import sys

from onnx import TensorProto, helper, save

nodes = [
    helper.make_node("MatMul", ["X", "W"], ["M"], name="fc1/MatMul"),
    helper.make_node("Tanh", ["M"], ["hidden"]),
]
graph = helper.make_graph(
    nodes, "g",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4]),
     helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 3])],
    [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [2, 3])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
save(model, sys.argv[1])
