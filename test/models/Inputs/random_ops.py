"""mpc.random's draws checked against the distributions they claim.

usage: random_ops.py make DIR        writes random.onnx (forward) and
                                      random_step.onnx (a loss that reads a draw)
       random_ops.py check DIR OUT   the outputs in OUT against their laws

Every output is drawn from x's shape or an attribute's: uniform in
[-2, 3), normal of mean 1 and deviation 2 (float32 and float16), a seeded
uniform, and stochastic depth as torch exports bernoulli (a sample's rows
kept with probability 0.8, scaled by 1 / 0.8). Kolmogorov-Smirnov against
scipy's laws at the 1e-4 level (a wrong scale, offset or a repeated word
fails by orders of magnitude); the draws of different nodes uncorrelated.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from scipy import stats

F, H = TensorProto.FLOAT, TensorProto.FLOAT16


def make(d):
    nodes = [
        helper.make_node("RandomUniformLike", ["x"], ["u"], low=-2.0, high=3.0),
        helper.make_node("RandomUniformLike", ["x"], ["u_other"]),
        helper.make_node("RandomNormalLike", ["x"], ["n"], mean=1.0, scale=2.0),
        helper.make_node("RandomNormalLike", ["x"], ["n16"], mean=1.0, scale=2.0, dtype=H),
        helper.make_node("RandomUniform", [], ["s"], shape=[50, 100], seed=5.0),
        helper.make_node("RandomUniform", [], ["s_seed6"], shape=[50, 100], seed=6.0),
        helper.make_node("RandomNormal", [], ["z"], shape=[5000]),
        # torch's bernoulli(0.8) over [samples, 1], then x * mask / 0.8
        helper.make_node("ConstantOfShape", ["rows"], ["empty"],
                         value=numpy_helper.from_array(np.zeros(1, np.float32))),
        helper.make_node("RandomUniformLike", ["empty"], ["r"]),
        helper.make_node("Less", ["r", "p"], ["sampled"]),
        helper.make_node("Cast", ["sampled"], ["kept"], to=F),
        helper.make_node("Div", ["kept", "p"], ["scale"]),
        helper.make_node("Mul", ["x", "scale"], ["dropped"]),
    ]
    inits = [numpy_helper.from_array(np.array([64, 1], np.int64), "rows"),
             numpy_helper.from_array(np.array(0.8, np.float32), "p")]
    X, S = [64, 1000], [50, 100]
    outs = [helper.make_tensor_value_info(n, t, shape) for n, t, shape in
            (("u", F, X), ("u_other", F, X), ("n", F, X), ("n16", H, X), ("s", F, S),
             ("s_seed6", F, S), ("z", F, [5000]), ("dropped", F, X))]
    g = helper.make_graph(nodes, "random", [helper.make_tensor_value_info("x", F, [64, 1000])],
                          outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)])
    m.ir_version = 10
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, os.path.join(d, "random.onnx"))
    np.save(os.path.join(d, "x.npy"), np.ones((64, 1000), np.float32))
    # A train step's loss reads a fresh draw each step: loss = sum(w * u),
    # u uniform in [0, 1) of w's shape, so the loss moves though lr is 0.
    nodes = [helper.make_node("Add", ["w", "x"], ["wx"]),
             helper.make_node("RandomUniformLike", ["wx"], ["u"]),
             helper.make_node("Mul", ["wx", "u"], ["wu"]),
             helper.make_node("ReduceSum", ["wu"], ["loss"], keepdims=0)]
    g = helper.make_graph(nodes, "random_step",
                          [helper.make_tensor_value_info("x", F, ["batch", 1000])],
                          [helper.make_tensor_value_info("loss", F, [])],
                          [numpy_helper.from_array(np.ones((1, 1000), np.float32), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)])
    m.ir_version = 10
    onnx.save(m, os.path.join(d, "random_step.onnx"))
    np.save(os.path.join(d, "rows.npy"), np.zeros((8, 1000), np.float32))


def ks(name, values, law):
    p = stats.kstest(values.astype(np.float64).ravel(), law).pvalue
    print(f"{name}: {values.size} draws, KS p {p:.2e} {'ok' if p > 1e-4 else 'FAIL'}")


def check(d, out):
    v = {n[:-4]: np.load(os.path.join(out, n)) for n in os.listdir(out) if n.endswith(".npy")}
    ks("uniform [-2, 3)", v["u"], stats.uniform(-2, 5).cdf)
    ks("uniform [0, 1), another node", v["u_other"], stats.uniform(0, 1).cdf)
    ks("normal (1, 2)", v["n"], stats.norm(1, 2).cdf)
    print("normal (1, 2) float16:", v["n16"].dtype)
    ks("normal (1, 2) float16", v["n16"], stats.norm(1, 2).cdf)
    ks("uniform, seed 5, shape attribute", v["s"], stats.uniform(0, 1).cdf)
    ks("normal, shape attribute", v["z"], stats.norm(0, 1).cdf)
    r = np.corrcoef(v["u"].ravel(), v["u_other"].ravel())[0, 1]
    print(f"two nodes' draws: correlation {r:.1e} {'ok' if abs(r) < 0.02 else 'FAIL'}")
    same = np.array_equal(v["s"], v["s_seed6"])
    print(f"seeds 5 and 6: {'FAIL same' if same else 'ok different'}")
    rows = v["dropped"]
    per_row = np.unique(rows, axis=1)
    values = set(np.unique(per_row).tolist())
    kept = (per_row[:, 0] != 0).sum()
    print(f"stochastic depth: each row all 0 or all 1/0.8: "
          f"{'ok' if per_row.shape[1] == 1 and values <= {0.0, np.float32(1 / np.float32(0.8))} else 'FAIL'}; "
          f"{kept} of 64 rows kept "
          f"{'ok' if stats.binomtest(int(kept), 64, 0.8).pvalue > 1e-4 else 'FAIL'}")


if __name__ == "__main__":
    make(sys.argv[2]) if sys.argv[1] == "make" else check(sys.argv[2], sys.argv[3])
