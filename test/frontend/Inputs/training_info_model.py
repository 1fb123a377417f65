"""Writes a model with a TrainingInfoProto: the inference graph computes a
loss; the algorithm graph takes its Gradient and applies Momentum to W
(update bindings W <- W_new, V <- V_new); the initialization graph zeroes V."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
train = "ai.onnx.preview.training"
w = numpy_helper.from_array(np.eye(2, dtype=np.float32), "W")
v = numpy_helper.from_array(np.ones((2, 2), np.float32), "V")
main = helper.make_graph(
    [helper.make_node("MatMul", ["X", "W"], ["Y"], name="fc"),
     helper.make_node("ReduceSum", ["Y"], ["Loss"], keepdims=0, name="loss")],
    "inference", [helper.make_tensor_value_info("X", F, ["N", 2])],
    [helper.make_tensor_value_info("Loss", F, [])], [w, v])
algo = helper.make_graph(
    [helper.make_node("Constant", [], ["R"], value_float=0.1),
     helper.make_node("Constant", [], ["T"], value_int=0),
     helper.make_node("Gradient", ["W"], ["dW"], domain=train, xs=["W"],
                      y="Loss", name="grad"),
     helper.make_node("Momentum", ["R", "T", "W", "dW", "V"],
                      ["W_new", "V_new"], domain=train, alpha=0.9, beta=1.0,
                      mode="standard", norm_coefficient=0.0, name="step")],
    "algorithm", [],
    [helper.make_tensor_value_info("W_new", F, [2, 2]),
     helper.make_tensor_value_info("V_new", F, [2, 2])])
init = helper.make_graph(
    [helper.make_node("Constant", [], ["S"], value_ints=[2, 2]),
     helper.make_node("ConstantOfShape", ["S"], ["V0"])],
    "initialization", [], [helper.make_tensor_value_info("V0", F, [2, 2])])
info = TrainingInfoProto = helper.make_training_info(
    algo, [("W", "W_new"), ("V", "V_new")], init, [("V", "V0")])
model = helper.make_model(main, opset_imports=[helper.make_opsetid("", 13),
                                               helper.make_opsetid(train, 1)])
model.ir_version = 8
model.training_info.append(info)
open(sys.argv[1], "wb").write(model.SerializeToString())
