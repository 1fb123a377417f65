"""Finite-difference check of every gradient rule of mpc-autodiff.

Each case is a tiny ONNX model with a trainable initializer W feeding the op
under test, reduced to a scalar loss sum(op(...) * R) with a fixed random R
(or a classification loss). `mpc grad` (float32) is compared with central
differences of the same model in float64 run by onnxruntime.

usage: fd_check.py MPC WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from fd_composed_cases import composed_cases

mpc, work = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
rng2 = np.random.default_rng(1)


def case(name, op_nodes, w, x=None, labels=None, extra=None, loss="weighted",
         opset=13, want=None, fd32=False, eps32=1e-2):
    """op_nodes compute Y from W (and X); loss = sum(Y * R) unless 'direct'.
    want: the expected gradient where no difference quotient exists (ties
    of Max/Min, which PyTorch splits evenly; loss = sum(Y)).
    fd32: differences in float32 even where onnxruntime runs doubles
    (GroupNormalization-21 computes its statistics in float whatever X is).
    eps32: the float32 differences' step (smaller where the op's third
    derivative is large: bicubic sampling)."""
    return dict(name=name, nodes=op_nodes, w=w, x=x, labels=labels,
                extra=extra or {}, loss=loss, opset=opset, want=want,
                fd32=fd32, eps32=eps32)


# Inputs whose type the op fixes (Resize's scales are float whatever X is).
KEEP_DTYPE = ("E", "Sc", "Ro")


def build(c, dtype):
    T = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    inits = [numpy_helper.from_array(c["w"].astype(dtype), "W")]
    for k, v in c["extra"].items():
        inits.append(numpy_helper.from_array(
            v.astype(dtype) if v.dtype.kind == "f" and k not in KEEP_DTYPE
            else v, k))
    inputs = []
    if c["x"] is not None:
        inputs.append(helper.make_tensor_value_info("X", T, c["x"].shape))
    if c["labels"] is not None:
        inputs.append(helper.make_tensor_value_info(
            "L", TensorProto.INT64, c["labels"].shape))
    nodes = list(c["nodes"])
    if c["loss"] == "weighted":
        inits.append(numpy_helper.from_array(
            c["r"].astype(dtype), "R"))
        nodes += [helper.make_node("Mul", ["Y", "R"], ["YR"]),
                  helper.make_node("ReduceSum", ["YR"], ["loss"], keepdims=0)]
    g = helper.make_graph(nodes, c["name"], inputs,
                          [helper.make_tensor_value_info("loss", T, [])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", c["opset"])])
    m.ir_version = 8 if c["opset"] <= 18 else 10
    return m


def run64(c, w, dtype=np.float64):
    m = build(c, dtype)
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(w.astype(dtype),
                                                            "W"))
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    s = ort.InferenceSession(m.SerializeToString(), opts,
                             providers=["CPUExecutionProvider"])
    feeds = {}
    if c["x"] is not None:
        feeds["X"] = c["x"].astype(dtype)
    if c["labels"] is not None:
        feeds["L"] = c["labels"]
    return float(s.run(None, feeds)[0])


def fd_grad(c):
    """Central differences in float64; in float32 (looser) for the ops
    onnxruntime has no double kernel for (Erf, Gelu)."""
    if c["want"] is not None:
        c["tol"] = 1e-6
        return c["want"]
    dtype, eps = np.float64, 1e-6
    try:
        if c["fd32"]:
            raise TypeError("float32 differences asked for")
        run64(c, c["w"].astype(dtype))
    except Exception:  # NOT_IMPLEMENTED for double
        dtype, eps = np.float32, c["eps32"]
    w = c["w"].astype(np.float64)
    g = np.zeros_like(w)
    for i in range(w.size):
        wp, wm = w.copy(), w.copy()
        wp.flat[i] += eps
        wm.flat[i] -= eps
        g.flat[i] = (run64(c, wp, dtype) - run64(c, wm, dtype)) / (2 * eps)
    c["tol"] = 1e-4 if dtype == np.float64 else 2e-3
    return g


def n(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def n2(*shape):
    return rng2.standard_normal(shape).astype(np.float32)


def pos(*shape):
    return (rng.random(shape) + 0.5).astype(np.float32)


def kinked(*shape, at=(0.0,), scale=1.0):
    """Normal values (times scale) at least 0.05 away from each kink in at."""
    x = rng.standard_normal(shape) * scale
    for k in at:
        near = np.abs(x - k) < 0.05
        x[near] = k + np.where(x[near] >= k, 0.05, -0.05)
    return x.astype(np.float32)


mk = helper.make_node
cases = [
    case("add_bcast", [mk("Add", ["X", "W"], ["Y"])], n(3), x=n(2, 3)),
    case("sub_bcast", [mk("Sub", ["X", "W"], ["Y"])], n(2, 1), x=n(2, 3)),
    case("mul", [mk("Mul", ["W", "X"], ["Y"])], n(2, 3), x=n(2, 3)),
    case("div_num", [mk("Div", ["W", "X"], ["Y"])], n(2, 3), x=pos(2, 3)),
    case("div_den", [mk("Div", ["X", "W"], ["Y"])], pos(2, 3), x=n(2, 3)),
    case("neg", [mk("Neg", ["W"], ["Y"])], n(4)),
    case("relu", [mk("Relu", ["W"], ["Y"])], n(6)),
    case("tanh", [mk("Tanh", ["W"], ["Y"])], n(5)),
    case("sigmoid", [mk("Sigmoid", ["W"], ["Y"])], n(5)),
    case("exp", [mk("Exp", ["W"], ["Y"])], n(5)),
    case("log", [mk("Log", ["W"], ["Y"])], pos(5)),
    case("sqrt", [mk("Sqrt", ["W"], ["Y"])], pos(5)),
    case("identity", [mk("Identity", ["W"], ["Y"])], n(3)),
    # Piecewise activations: inputs kept off the kinks, where the
    # difference quotient straddles two pieces.
    case("leaky_relu", [mk("LeakyRelu", ["W"], ["Y"], alpha=0.2)], kinked(7)),
    case("elu", [mk("Elu", ["W"], ["Y"], alpha=0.7)], kinked(7)),
    case("celu", [mk("Celu", ["W"], ["Y"], alpha=1.5)], kinked(7), opset=12),
    case("selu", [mk("Selu", ["W"], ["Y"])], kinked(7)),
    case("hard_sigmoid", [mk("HardSigmoid", ["W"], ["Y"], alpha=0.3,
                             beta=0.4)], kinked(9, at=(-4 / 3, 2))),
    case("hard_swish", [mk("HardSwish", ["W"], ["Y"])],
         kinked(9, at=(-3, 3), scale=4), opset=14),
    case("thresholded_relu", [mk("ThresholdedRelu", ["W"], ["Y"],
                                 alpha=0.5)], kinked(7, at=(0.5,)), opset=10),
    case("softsign", [mk("Softsign", ["W"], ["Y"])], n(6)),
    case("prelu_x", [mk("PRelu", ["W", "S"], ["Y"])], kinked(2, 3, 1),
         extra={"S": n(3, 1)}),
    case("prelu_slope", [mk("PRelu", ["X", "W"], ["Y"])], n(3, 1),
         x=kinked(2, 3, 4)),
    case("clip", [mk("Clip", ["W", "Lo", "Hi"], ["Y"])],
         kinked(8, at=(-0.5, 0.7)),
         extra={"Lo": np.array(-0.5, np.float32),
                "Hi": np.array(0.7, np.float32)}),
    case("clip_max_only", [mk("Clip", ["W", "", "Hi"], ["Y"])],
         kinked(8, at=(0.2,)), extra={"Hi": np.array(0.2, np.float32)}),
    case("abs", [mk("Abs", ["W"], ["Y"])], kinked(6)),
    case("reciprocal", [mk("Reciprocal", ["W"], ["Y"])], pos(5)),
    case("max_variadic", [mk("Max", ["W", "X", "K"], ["Y"])], n(2, 3),
         x=n(3), extra={"K": n(1, 3)}),
    case("min_bcast", [mk("Min", ["X", "W"], ["Y"])], n(3), x=n(2, 3)),
    case("sum_variadic", [mk("Sum", ["W", "X", "W"], ["Y"])], n(3),
         x=n(2, 3)),
    case("mean_variadic", [mk("Mean", ["X", "W", "K"], ["Y"])], n(2, 3),
         x=n(2, 3), extra={"K": n(3)}),
    case("floor_zero", [mk("Floor", ["W"], ["F"]),
                        mk("Add", ["F", "W"], ["Y"])], kinked(5, at=(0, 1), scale=2)),
    case("max_ties", [mk("Max", ["W", "X", "K"], ["Y"])],
         np.array([1, 2, 3], np.float32), x=np.array([1, 0, 3], np.float32),
         extra={"K": np.array([1, 0, 0], np.float32)},
         want=np.array([1 / 3, 1, 0.5])),
    case("reduce_max_ties", [mk("ReduceMax", ["W"], ["Y"], axes=[1])],
         np.array([[2, 2, 1], [0, 5, 5]], np.float32),
         want=np.array([[0.5, 0.5, 0], [0, 0.5, 0.5]])),
    case("reduce_max", [mk("ReduceMax", ["W"], ["Y"], axes=[1])], n(2, 4, 3)),
    case("reduce_min_all", [mk("ReduceMin", ["W"], ["Y"], keepdims=0)],
         n(3, 4)),
    case("reduce_l1", [mk("ReduceL1", ["W"], ["Y"], axes=[0, 2])],
         kinked(2, 3, 4)),
    case("reduce_l2", [mk("ReduceL2", ["W"], ["Y"], axes=[-1], keepdims=0)],
         n(3, 5)),
    case("reduce_sum_square", [mk("ReduceSumSquare", ["W"], ["Y"],
                                  axes=[1])], n(3, 4)),
    case("reduce_prod", [mk("ReduceProd", ["W"], ["Y"], axes=[1])],
         pos(3, 4)),
    case("reduce_prod_zeros", [mk("ReduceProd", ["W"], ["Y"], axes=[1],
                                  keepdims=0)],
         np.array([[0, 2, 3], [0, 0, 5], [1, 2, 3]], np.float32),
         want=np.array([[6, 0, 0], [0, 0, 0], [6, 3, 2]])),
    case("cum_sum", [mk("CumSum", ["W", "Ax"], ["Y"])], n(3, 4),
         extra={"Ax": np.array(1, np.int64)}),
    case("cum_sum_reverse_exclusive", [mk("CumSum", ["W", "Ax"], ["Y"],
                                          reverse=1, exclusive=1)], n(4, 3),
         extra={"Ax": np.array(0, np.int64)}),
    case("trilu", [mk("Trilu", ["W", "K"], ["Y"], upper=0)], n(2, 3, 4),
         extra={"K": np.array(1, np.int64)}, opset=14),
    case("tile", [mk("Tile", ["W", "Rp"], ["Y"])], n(2, 3),
         extra={"Rp": np.array([2, 3], np.int64)}),
    case("reduce_log_sum", [mk("ReduceLogSum", ["W"], ["Y"], axes=[1])],
         pos(3, 4)),
    case("gemm_nn", [mk("Gemm", ["X", "W", "B"], ["Y"], alpha=0.5, beta=2.0)],
         n(3, 4), x=n(2, 3), extra={"B": n(4)}),
    case("gemm_nt", [mk("Gemm", ["X", "W"], ["Y"], transB=1)], n(4, 3),
         x=n(2, 3)),
    case("gemm_tn", [mk("Gemm", ["W", "X"], ["Y"], transA=1)], n(3, 2),
         x=n(3, 4)),
    case("gemm_tt", [mk("Gemm", ["W", "X"], ["Y"], transA=1, transB=1)],
         n(3, 2), x=n(4, 3)),
    case("gemm_bias", [mk("Gemm", ["X", "A", "W"], ["Y"], beta=0.5)], n(1, 4),
         x=n(2, 3), extra={"A": n(3, 4)}),
    case("matmul", [mk("MatMul", ["X", "W"], ["Y"])], n(3, 4), x=n(2, 3)),
    case("matmul_batched_w", [mk("MatMul", ["X", "W"], ["Y"])], n(3, 4),
         x=n(2, 5, 3)),
    case("matmul_batched_x", [mk("MatMul", ["W", "X"], ["Y"])], n(2, 2, 3),
         x=n(2, 3, 4)),
    case("transpose", [mk("Transpose", ["W"], ["Y"], perm=[2, 0, 1])],
         n(2, 3, 4)),
    case("reshape", [mk("Reshape", ["W", "S"], ["Y"])], n(2, 6),
         extra={"S": np.array([3, 4], np.int64)}),
    case("flatten", [mk("Flatten", ["W"], ["Y"], axis=1)], n(2, 3, 2)),
    case("reduce_sum", [mk("ReduceSum", ["W", "A"], ["Y"], keepdims=0)],
         n(2, 3, 4), extra={"A": np.array([1], np.int64)}),
    case("reduce_mean", [mk("ReduceMean", ["W"], ["Y"], axes=[0, 2])],
         n(2, 3, 4)),
    case("softmax", [mk("Softmax", ["W"], ["Y"], axis=1)], n(2, 5)),
    case("log_softmax", [mk("LogSoftmax", ["W"], ["Y"], axis=-1)], n(3, 4)),
    case("erf", [mk("Erf", ["W"], ["Y"])], n(5)),
    case("atan", [mk("Atan", ["W"], ["Y"])], n(5) * 2),
    case("softplus", [mk("Softplus", ["W"], ["Y"])], n(6) * 3),
    case("mish", [mk("Mish", ["W"], ["Y"])], n(6) * 3, opset=18),
    case("gelu", [mk("Gelu", ["W"], ["Y"])], n(5), opset=20),
    case("gelu_tanh", [mk("Gelu", ["W"], ["Y"], approximate="tanh")], n(5),
         opset=20),
    case("pow", [mk("Pow", ["W", "E"], ["Y"])], pos(4),
         extra={"E": np.array(3.0, np.float32)}),
    case("where", [mk("Where", ["C", "W", "X"], ["Y"])], n(2, 3), x=n(2, 3),
         extra={"C": np.array([[True, False, True], [False, True, True]])}),
    case("expand", [mk("Expand", ["W", "S"], ["Y"])], n(3, 1),
         extra={"S": np.array([2, 3, 4], np.int64)}),
    case("reduce_log_sum_exp",
         [mk("ReduceLogSumExp", ["W"], ["Y"], axes=[1], keepdims=0)],
         n(3, 4)),
    case("gather", [mk("Gather", ["W", "I"], ["Y"], axis=0)], n(5, 3),
         extra={"I": np.array([[0, 2], [4, 2]], np.int64)}),
    case("split", [mk("Split", ["W", "P"], ["A", "B"], axis=1),
                   mk("Mul", ["A", "B"], ["Y"])], n(2, 6),
         extra={"P": np.array([3, 3], np.int64)}),
    case("concat", [mk("Concat", ["W", "X"], ["Y"], axis=0)], n(2, 3),
         x=n(1, 3)),
    case("layer_norm", [mk("LayerNormalization", ["X", "W", "Bn"], ["Y"],
                           axis=-1)], pos(4), x=n(3, 4),
         extra={"Bn": n(4)}, opset=17),
    case("layer_norm_x", [mk("LayerNormalization", ["W", "G", "Bn"], ["Y"],
                             axis=1)], n(2, 3, 4),
         extra={"G": pos(3, 4), "Bn": n(3, 4)}, opset=17),
    case("slice", [mk("Slice", ["W", "S0", "E0", "A0"], ["Y"])], n(3, 5),
         extra={"S0": np.array([1, -4], np.int64),
                "E0": np.array([3, 4], np.int64),
                "A0": np.array([0, 1], np.int64)}),
    # Steps 2 and 3 on two axes, one of them ending short of the input.
    case("slice_strided", [mk("Slice", ["W", "S0", "E0", "A0", "T0"], ["Y"])],
         n(4, 7, 3),
         extra={"S0": np.array([1, 0], np.int64),
                "E0": np.array([7, 5], np.int64),
                "A0": np.array([1, 0], np.int64),
                "T0": np.array([2, 3], np.int64)}),
    # Attention as exports write it, fused by mpc-fuse-attention: the
    # gradient w.r.t. Q (mpc.attention_grad), K, V, and a trainable additive
    # bias (built from forward ops); a causal where() mask with Sq < Skv.
    case("attention_q", [mk("Transpose", ["K"], ["KT"], perm=[0, 1, 3, 2]),
                         mk("MatMul", ["W", "KT"], ["S"]),
                         mk("Div", ["S", "C"], ["D"]),
                         mk("Where", ["M", "NI", "D"], ["Dm"]),
                         mk("Softmax", ["Dm"], ["P"], axis=-1),
                         mk("MatMul", ["P", "V"], ["Y"])], n(2, 3, 4, 8),
         extra={"K": n(2, 3, 6, 8), "V": n(2, 3, 6, 5),
                "C": np.array(2.0, np.float32),
                "M": np.triu(np.ones((4, 6), bool), k=3),
                "NI": np.array(-np.inf, np.float32)}),
    case("attention_k", [mk("Transpose", ["W"], ["KT"], perm=[0, 2, 1]),
                         mk("MatMul", ["Q", "KT"], ["S"]),
                         mk("Softmax", ["S"], ["P"], axis=-1),
                         mk("MatMul", ["P", "V"], ["Y"])], n(3, 5, 4),
         extra={"Q": n(3, 2, 4), "V": n(3, 5, 3)}),
    case("attention_v", [mk("Transpose", ["K"], ["KT"], perm=[0, 2, 1]),
                         mk("MatMul", ["Q", "KT"], ["S"]),
                         mk("Softmax", ["S"], ["P"], axis=-1),
                         mk("MatMul", ["P", "W"], ["Y"])], n(3, 5, 3),
         extra={"Q": n(3, 2, 4), "K": n(3, 5, 4)}),
    case("attention_bias", [mk("Transpose", ["K"], ["KT"], perm=[0, 2, 1]),
                            mk("MatMul", ["Q", "KT"], ["S"]),
                            mk("Add", ["S", "W"], ["B"]),
                            mk("Softmax", ["B"], ["P"], axis=-1),
                            mk("MatMul", ["P", "V"], ["Y"])], n(1, 2, 5),
         extra={"Q": n(3, 2, 4), "K": n(3, 5, 4), "V": n(3, 5, 3)}),
    case("attention_mask_then_scale",
         [mk("Transpose", ["K"], ["KT"], perm=[0, 2, 1]),
          mk("MatMul", ["Q", "KT"], ["S"]),
          mk("Add", ["S", "W"], ["B"]),
          mk("Div", ["B", "C"], ["D"]),
          mk("Softmax", ["D"], ["P"], axis=-1),
          mk("MatMul", ["P", "V"], ["Y"])], n(2, 5),
         extra={"Q": n(3, 2, 4), "K": n(3, 5, 4), "V": n(3, 5, 3),
                "C": np.array(3.0, np.float32)}),
    case("rms_norm_x", [mk("RMSNormalization", ["W", "G"], ["Y"], axis=1,
                           epsilon=1e-3)], n(2, 3, 4),
         extra={"G": pos(4)}, opset=23),
    case("rms_norm_scale", [mk("RMSNormalization", ["X", "W"], ["Y"],
                               axis=-1)], pos(5), x=n(3, 5), opset=23),
    # RMS normalization spelled out (fused back by mpc-fuse-decomposed).
    case("rms_decomposed", [mk("Pow", ["W", "Two"], ["P"]),
                            mk("ReduceMean", ["P"], ["V"], axes=[-1]),
                            mk("Add", ["V", "Eps"], ["E"]),
                            mk("Sqrt", ["E"], ["S"]),
                            mk("Reciprocal", ["S"], ["Rs"]),
                            mk("Mul", ["W", "Rs"], ["N"]),
                            mk("Mul", ["N", "G"], ["Y"])], n(3, 6),
         extra={"Two": np.array(2.0, np.float32),
                "Eps": np.array(1e-5, np.float32), "G": pos(6)}),
    case("pad", [mk("Pad", ["W", "P0"], ["Y"])], n(2, 3),
         extra={"P0": np.array([1, 0, 0, 2], np.int64)}),
    case("pad_reflect", [mk("Pad", ["W", "P0"], ["Y"], mode="reflect")],
         n(2, 4, 5), extra={"P0": np.array([0, 2, 1, 0, 3, 3], np.int64)}),
    case("pad_edge", [mk("Pad", ["W", "P0", "", "Ax"], ["Y"], mode="edge")],
         n(2, 3, 4), extra={"P0": np.array([3, 1, 0, 2], np.int64),
                            "Ax": np.array([2, 1], np.int64)}, opset=18),
    # Resize: one table per resized axis; its gradient, the transposed table.
    case("resize_nearest", [mk("Resize", ["W", "", "Sc"], ["Y"],
                               coordinate_transformation_mode="asymmetric",
                               nearest_mode="floor")], n(1, 2, 3, 2),
         extra={"Sc": np.array([1, 1, 2, 3], np.float32)}),
    case("resize_linear", [mk("Resize", ["W", "", "Sc"], ["Y"], mode="linear",
                              coordinate_transformation_mode="pytorch_half_pixel")],
         n(2, 1, 4, 5), extra={"Sc": np.array([1, 1, 1.5, 0.6], np.float32)}),
    case("resize_cubic_sizes", [mk("Resize", ["W", "", "", "Sz"], ["Y"],
                                   mode="cubic",
                                   coordinate_transformation_mode="align_corners")],
         n(1, 1, 4, 4), extra={"Sz": np.array([1, 1, 7, 3], np.int64)}),
    case("resize_linear_antialias", [mk("Resize", ["W", "", "Sc"], ["Y"],
                                        mode="linear", antialias=1)],
         n(1, 2, 8, 6), extra={"Sc": np.array([1, 1, 0.4, 0.5], np.float32)},
         opset=18),
    case("resize_crop_extrapolate", [mk("Resize", ["W", "Ro", "", "Sz"], ["Y"],
                                        mode="linear",
                                        coordinate_transformation_mode="tf_crop_and_resize",
                                        extrapolation_value=2.5, axes=[3, 2])],
         n(1, 1, 4, 4), extra={"Ro": np.array([-0.2, 0.1, 0.9, 1.2], np.float32),
                               "Sz": np.array([5, 3], np.int64)}, opset=18),
    case("upsample_linear", [mk("Upsample", ["W", "Sc"], ["Y"], mode="linear")],
         n(1, 1, 3, 2), extra={"Sc": np.array([1, 1, 2, 2.5], np.float32)},
         opset=9),
    # Clip's bound depends on W: it gets the gradient where it clamped.
    case("clip_trained_bound", [mk("ReduceMean", ["W"], ["Lo"], keepdims=0),
                                mk("Clip", ["X", "Lo"], ["Y"])],
         n(4), x=n(3, 4)),
    case("pad_wrap", [mk("Pad", ["W", "P0"], ["Y"], mode="wrap")],
         n(2, 3, 4), extra={"P0": np.array([0, 2, 5, 0, 4, 1], np.int64)},
         opset=19),
    case("gather_elements", [mk("GatherElements", ["W", "Ix"], ["Y"], axis=1)],
         n(3, 4), extra={"Ix": np.array([[0, 2, 2], [1, 1, 3], [3, 0, -1]],
                                        np.int64)}),
    case("gather_elements_part", [mk("GatherElements", ["W", "Ix"], ["Y"],
                                     axis=0)],
         n(4, 3), extra={"Ix": np.array([[3, 0], [3, 2]], np.int64)}),
    # GatherND: the slices' gradients added back, repeated tuples summed.
    case("gather_nd_rows", [mk("GatherND", ["W", "In"], ["Y"])],
         n(4, 3), extra={"In": np.array([[1], [3], [1]], np.int64)}),
    case("gather_nd_elements", [mk("GatherND", ["W", "In"], ["Y"])],
         n(4, 3, 2), extra={"In": np.array([[[0, 2], [3, 1]], [[0, 2], [-1, 0]]], np.int64)}),
    # Scatters: data keeps g where no update replaced it, updates gather g
    # (reduction none); under add data keeps all of g and repeated indices
    # each gather it.
    case("scatter_elements_data", [mk("ScatterElements", ["W", "Ix", "U"], ["Y"],
                                      axis=1)],
         n(3, 5), extra={"Ix": np.array([[0, 2], [4, -1], [1, 3]], np.int64),
                         "U": n(3, 2)}),
    case("scatter_elements_updates", [mk("ScatterElements", ["D", "Ix", "W"], ["Y"],
                                         axis=0)],
         n(2, 3), extra={"Ix": np.array([[3, 0, 1], [1, 2, -4]], np.int64),
                         "D": n(4, 3)}),
    case("scatter_elements_add", [mk("ScatterElements", ["D", "Ix", "W"], ["Y"],
                                     axis=-1, reduction="add")],
         n(2, 4), extra={"Ix": np.array([[1, 1, 0, 1], [2, -1, 2, 0]], np.int64),
                         "D": n(2, 3)}, opset=16),
    case("scatter_nd_data", [mk("ScatterND", ["W", "In", "U"], ["Y"])],
         n(4, 3), extra={"In": np.array([[1], [3]], np.int64), "U": n(2, 3)}),
    case("scatter_nd_updates", [mk("ScatterND", ["D", "In", "W"], ["Y"])],
         n(2), extra={"In": np.array([[0, 2], [3, 1]], np.int64), "D": n(4, 3)}),
    case("scatter_nd_add", [mk("ScatterND", ["W", "In", "U"], ["Y"],
                               reduction="add")],
         n(4, 3), extra={"In": np.array([[1], [1]], np.int64), "U": n(2, 3)},
         opset=16),
    case("scatter_nd_add_updates", [mk("ScatterND", ["D", "In", "W"], ["Y"],
                                       reduction="add")],
         n(3, 3), extra={"In": np.array([[2], [0], [2]], np.int64), "D": n(4, 3)},
         opset=16),
    case("sin", [mk("Sin", ["W"], ["Y"])], n(3, 4)),
    case("cos", [mk("Cos", ["W"], ["Y"])], n(3, 4)),
    case("global_maxpool", [mk("GlobalMaxPool", ["W"], ["Y"])],
         n(2, 3, 4, 5)),
    case("batch_norm_inference_x", [mk("BatchNormalization",
                                       ["W", "G", "Bb", "M", "V"], ["Y"])],
         n(2, 3, 2, 2), extra={"G": pos(3), "Bb": n(3), "M": n(3),
                               "V": pos(3)}, opset=15),
    case("batch_norm_inference_scale", [mk("BatchNormalization",
                                           ["X", "W", "Bb", "M", "V"], ["Y"])],
         pos(3), x=n(2, 3, 2, 2), extra={"Bb": n(3), "M": n(3), "V": pos(3)},
         opset=15),
    case("conv_w", [mk("Conv", ["X", "W", "Bc"], ["Y"], pads=[1, 0, 1, 2],
                       strides=[2, 1])], n(4, 2, 3, 2), x=n(2, 2, 5, 4),
         extra={"Bc": n(4)}),
    case("conv_x", [mk("Conv", ["W", "K"], ["Y"], pads=[1, 1, 1, 1],
                       dilations=[1, 2], group=2)], n(2, 4, 5, 6),
         extra={"K": n(6, 2, 3, 2)}),
    case("conv_bias", [mk("Conv", ["X", "K", "W"], ["Y"])], n(3),
         x=n(2, 2, 4, 4), extra={"K": n(3, 2, 3, 3)}),
    case("conv_transpose_x", [mk("ConvTranspose", ["W", "K"], ["Y"],
                                 strides=[2, 2], pads=[1, 0, 1, 1],
                                 output_padding=[1, 0], dilations=[1, 2],
                                 group=2)], n(2, 4, 3, 3),
         extra={"K": n(4, 3, 3, 2)}),
    case("conv_transpose_w", [mk("ConvTranspose", ["X", "W", "Bc"], ["Y"],
                                 strides=[2, 3], output_shape=[8, 8],
                                 auto_pad="SAME_UPPER")], n(3, 2, 4, 3),
         x=n(2, 3, 4, 3), extra={"Bc": n(2)}),
    case("conv_transpose_bias", [mk("ConvTranspose", ["X", "K", "W"], ["Y"],
                                    strides=[2, 2], pads=[1, 1, 1, 1])],
         n(4), x=n(2, 2, 3, 3), extra={"K": n(2, 4, 4, 4)}, opset=11),
    case("max_pool", [mk("MaxPool", ["W"], ["Y"], kernel_shape=[2, 2],
                         strides=[2, 2], pads=[0, 0, 1, 1])], n(2, 2, 5, 5)),
    case("average_pool", [mk("AveragePool", ["W"], ["Y"], kernel_shape=[3, 3],
                             strides=[2, 2], pads=[1, 1, 1, 1])],
         n(2, 2, 5, 5)),
    case("average_pool_pad", [mk("AveragePool", ["W"], ["Y"],
                                 kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                 count_include_pad=1)], n(1, 2, 4, 4)),
    case("global_average_pool", [mk("GlobalAveragePool", ["W"], ["Y"])],
         n(2, 3, 4, 4)),
    case("batch_norm_x", [mk("BatchNormalization", ["W", "G", "Bb", "M", "V"],
                             ["Y", "RM", "RV"], training_mode=1)],
         n(3, 2, 2, 3), extra={"G": pos(2), "Bb": n(2), "M": n(2),
                               "V": pos(2)}, opset=15),
    case("batch_norm_scale", [mk("BatchNormalization", ["X", "W", "Bb", "M",
                                                        "V"],
                                 ["Y", "RM", "RV"], training_mode=1)],
         pos(2), x=n(3, 2, 2, 3),
         extra={"Bb": n(2), "M": n(2), "V": pos(2)}, opset=15),
    case("instance_norm_x", [mk("InstanceNormalization", ["W", "G", "Bb"],
                                ["Y"], epsilon=1e-3)], n(2, 3, 4, 2),
         extra={"G": pos(3), "Bb": n(3)}),
    case("instance_norm_scale", [mk("InstanceNormalization", ["X", "W", "Bb"],
                                    ["Y"])], pos(3),
         x=n(2, 3, 5), extra={"Bb": n(3)}),
    case("group_norm_x", [mk("GroupNormalization", ["W", "G", "Bb"], ["Y"],
                             num_groups=2)], n(2, 4, 3, 2),
         extra={"G": pos(4), "Bb": n(4)}, opset=21, fd32=True),
    case("group_norm_bias", [mk("GroupNormalization", ["X", "G", "W"], ["Y"],
                                num_groups=3, epsilon=1e-2)], n(6),
         x=n(2, 6, 4), extra={"G": pos(6)}, opset=21, fd32=True),
    case("group_norm_18", [mk("GroupNormalization", ["W", "G", "Bb"], ["Y"],
                              num_groups=2)], n(2, 4, 3),
         extra={"G": pos(2), "Bb": n(2)}, opset=18),
    case("sce_mean", [mk("SoftmaxCrossEntropyLoss", ["W", "L"], ["loss"])],
         n(4, 5), labels=np.array([0, 3, 1, 4]), loss="direct"),
    case("sce_ignore", [mk("SoftmaxCrossEntropyLoss", ["W", "L"], ["loss"],
                           ignore_index=3, reduction="sum")],
         n(4, 5), labels=np.array([0, 3, 1, 4]), loss="direct"),
    case("nll_weighted", [mk("NegativeLogLikelihoodLoss", ["W", "L", "K"],
                             ["loss"])],
         n(4, 5), labels=np.array([0, 3, 1, 4]),
         extra={"K": pos(5)}, loss="direct"),
    # Spatial scores [N, C, H, W] against [N, H, W] labels (segmentation).
    case("sce_spatial", [mk("SoftmaxCrossEntropyLoss", ["W", "L", "K"], ["loss"],
                            ignore_index=2)],
         n(2, 4, 3, 2), labels=np.array([[[0, 3], [2, 1], [1, 1]],
                                          [[3, 0], [0, 2], [1, 3]]]),
         extra={"K": pos(4)}, loss="direct"),
    case("nll_spatial", [mk("NegativeLogLikelihoodLoss", ["W", "L"], ["loss"],
                            reduction="sum")],
         n(2, 4, 5), labels=np.array([[0, 3, 1, 1, 2], [2, 2, 0, 3, 1]]),
         loss="direct"),
    # TopK's values: the gradient goes back to the selected elements (a
    # mixture-of-experts router's top 2 of 6), the smallest 3 of 5 along
    # axis 0. (Drawn from their own generator: the cases above keep theirs.)
    case("top_k", [mk("TopK", ["W", "K"], ["Y", "Ix"], axis=1)], n2(4, 6),
         extra={"K": np.array([2], np.int64)}),
    case("top_k_smallest", [mk("TopK", ["W", "K"], ["Y", "Ix"], axis=0,
                               largest=0)], n2(5, 3),
         extra={"K": np.array([3], np.int64)}),
    # torch's pixel_shuffle (DepthToSpace, CRD) and pixel_unshuffle.
    case("depth_to_space", [mk("DepthToSpace", ["W"], ["Y"], blocksize=2,
                               mode="CRD")], n2(1, 8, 2, 3)),
    case("space_to_depth", [mk("SpaceToDepth", ["W"], ["Y"], blocksize=2)],
         n2(2, 2, 4, 2)),
    # Tan, the inverse and hyperbolic functions (their domains: |x| < 1
    # for asin, acos, atanh; x > 1 for acosh).
    case("tan", [mk("Tan", ["W"], ["Y"])], n2(5) * 0.5),
    case("asin", [mk("Asin", ["W"], ["Y"])], np.tanh(n2(5)) * 0.9),
    case("acos", [mk("Acos", ["W"], ["Y"])], np.tanh(n2(5)) * 0.9),
    case("sinh", [mk("Sinh", ["W"], ["Y"])], n2(5)),
    case("cosh", [mk("Cosh", ["W"], ["Y"])], n2(5)),
    case("asinh", [mk("Asinh", ["W"], ["Y"])], n2(5) * 2),
    case("acosh", [mk("Acosh", ["W"], ["Y"])], 1.5 + np.abs(n2(5))),
    case("atanh", [mk("Atanh", ["W"], ["Y"])], np.tanh(n2(5)) * 0.9),
    # (Last: their draws leave the cases above their inputs.)
    case("cum_prod", [mk("CumProd", ["W", "Ax"], ["Y"])], n(3, 4),
         extra={"Ax": np.array(1, np.int64)}, opset=26),
    case("cum_prod_reverse_exclusive", [mk("CumProd", ["W", "Ax"], ["Y"],
                                            reverse=1, exclusive=1)], n(4, 3),
         extra={"Ax": np.array(0, np.int64)}, opset=26),
    # Zeros (one, two, at either end) keep the gradient exact: cum_prod_grad
    # divides by nothing (the products are linear in each element).
    case("cum_prod_zeros", [mk("CumProd", ["W", "Ax"], ["Y"])],
         np.array([[0, 2, -1.5, 3], [1.5, 0, 0, 2], [2, -1, 0.5, 0]],
                  np.float32), extra={"Ax": np.array(-1, np.int64)}, opset=26),
]

# The ops imported as their ONNX definitions (drawn after the cases above,
# so theirs keep their draws).
cases += composed_cases(case, mk, n2, kinked, rng2)

worst, failed = 0.0, 0
for c in cases:
    # R weights the outputs so every element matters differently.
    sess_out = None
    if c["loss"] == "weighted":
        m = build({**c, "loss": "none", "r": None}, np.float32)
        m.graph.output[0].name = "Y"
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        feeds = {}
        if c["x"] is not None:
            feeds["X"] = c["x"]
        shape = ort.InferenceSession(
            m.SerializeToString(), opts,
            providers=["CPUExecutionProvider"]).run(None, feeds)[0].shape
        c["r"] = n(*shape) if shape else np.array(rng.standard_normal(),
                                                  np.float32)
        if c["want"] is not None:
            c["r"] = np.ones(shape, np.float32)
    model = build(c, np.float32)
    path = os.path.join(work, c["name"] + ".onnx")
    open(path, "wb").write(model.SerializeToString())
    args = []
    if c["x"] is not None:
        np.save(os.path.join(work, c["name"] + ".X.npy"), c["x"])
        args += ["--input", "X=" + os.path.join(work, c["name"] + ".X.npy")]
    if c["labels"] is not None:
        np.save(os.path.join(work, c["name"] + ".L.npy"), c["labels"])
        args += ["--input", "L=" + os.path.join(work, c["name"] + ".L.npy")]
    out = os.path.join(work, c["name"] + ".grad")
    p = subprocess.run([mpc, "grad", path, "--output-dir", out] + args,
                       capture_output=True, text=True)
    if p.returncode:
        print(f"{c['name']}: mpc grad failed: {p.stderr.strip()}")
        failed += 1
        continue
    got = np.load(os.path.join(out, "W.npy")).astype(np.float64)
    want = fd_grad(c)
    err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-12))
    worst = max(worst, err)
    ok = err <= c["tol"]
    failed += not ok
    fd32 = " (float32 differences)" if c["tol"] > 1e-4 else ""
    print(f"{c['name']}: relative error {err:.1e} {'ok' if ok else 'FAIL'}"
          f"{fd32}")
print(f"{len(cases) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
