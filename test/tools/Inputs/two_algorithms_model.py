"""Writes a model with two TrainingInfoProtos, run in order each step as
ONNX defines a training iteration: algorithm 0 takes the Gradient of the
inference loss, applies ONNX Adam with the integer step counter T and
increments T (bindings W, V, H, T); algorithm 1 then reads the updated
values: it decays W by 0.99 and adds T to the int64 sum C (bindings W, C).
After N steps T = N and C = 1 + 2 + ... + N."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64
train = "ai.onnx.preview.training"
inits = [numpy_helper.from_array(np.array([[1.0, 0.5], [-0.5, 1.0]],
                                          np.float32), "W"),
         numpy_helper.from_array(np.zeros((2, 2), np.float32), "V"),
         numpy_helper.from_array(np.zeros((2, 2), np.float32), "H"),
         numpy_helper.from_array(np.array(0, np.int64), "T"),
         numpy_helper.from_array(np.array(0, np.int64), "C")]
main = helper.make_graph(
    [helper.make_node("MatMul", ["X", "W"], ["Y"], name="fc"),
     helper.make_node("Mul", ["Y", "Y"], ["Y2"], name="square"),
     helper.make_node("ReduceSum", ["Y2"], ["Loss"], keepdims=0, name="loss")],
    "inference", [helper.make_tensor_value_info("X", F, ["N", 2])],
    [helper.make_tensor_value_info("Loss", F, [])], inits)
adam = helper.make_graph(
    [helper.make_node("Constant", [], ["R"], value_float=0.05),
     helper.make_node("Constant", [], ["One"], value_int=1),
     helper.make_node("Gradient", ["W"], ["dW"], domain=train, xs=["W"],
                      y="Loss", name="grad"),
     helper.make_node("Adam", ["R", "T", "W", "dW", "V", "H"],
                      ["W_new", "V_new", "H_new"], domain=train, alpha=0.9,
                      beta=0.999, epsilon=1e-6, name="adam"),
     helper.make_node("Add", ["T", "One"], ["T_new"], name="count")],
    "adam", [],
    [helper.make_tensor_value_info("W_new", F, [2, 2]),
     helper.make_tensor_value_info("V_new", F, [2, 2]),
     helper.make_tensor_value_info("H_new", F, [2, 2]),
     helper.make_tensor_value_info("T_new", I64, [])])
decay = helper.make_graph(
    [helper.make_node("Constant", [], ["D"], value_float=0.99),
     helper.make_node("Mul", ["W", "D"], ["W_decayed"], name="decay"),
     helper.make_node("Add", ["C", "T"], ["C_new"], name="sum_steps")],
    "decay", [],
    [helper.make_tensor_value_info("W_decayed", F, [2, 2]),
     helper.make_tensor_value_info("C_new", I64, [])])
model = helper.make_model(main, opset_imports=[helper.make_opsetid("", 13),
                                               helper.make_opsetid(train, 1)])
model.ir_version = 8
model.training_info.append(helper.make_training_info(
    adam, [("W", "W_new"), ("V", "V_new"), ("H", "H_new"), ("T", "T_new")],
    None, []))
model.training_info.append(helper.make_training_info(
    decay, [("W", "W_decayed"), ("C", "C_new")], None, []))
open(sys.argv[1], "wb").write(model.SerializeToString())
