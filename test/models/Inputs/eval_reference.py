"""The held-out loss of a model mpc trained, computed by torch: the trained
weights (running statistics included) of MODEL.onnx loaded into the torch
module it was exported from (scripts/torch_zoo.py), in eval mode, against
the last "eval_loss" of mpc's --metrics; and the same module in train mode,
to show that evaluation mode changed the loss. Runs under Debian's python3-torch.

usage: eval_reference.py MODEL.onnx CLASS X.npy Y.npy METRICS.jsonl --rtol R
                         [--field eval_loss_ema]  (the metric to check:
                         --ema-output's model against eval_loss_ema)
                         [--accuracy eval_accuracy]  (also the top-1
                         accuracy of torch's logits, to match exactly)
                         [--top-k K]  (and eval_top<K>_accuracy: labels
                         fewer than K classes outrank, ties to the first)
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "scripts"))
import torch_zoo as zoo  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("cls")
ap.add_argument("x")
ap.add_argument("y")
ap.add_argument("metrics")
ap.add_argument("--rtol", type=float, required=True)
ap.add_argument("--field", default="eval_loss")
ap.add_argument("--accuracy")
ap.add_argument("--top-k", type=int)
a = ap.parse_args()

net = zoo.WithCrossEntropy(getattr(zoo, a.cls)())
weights = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
           for t in onnx.load(a.model).graph.initializer}
state = net.state_dict()
loaded = [k for k in state if k in weights]
assert any("running_mean" in k for k in loaded), loaded
net.load_state_dict({**state, **{k: weights[k] for k in loaded}})
x, y = torch.from_numpy(np.load(a.x)), torch.from_numpy(np.load(a.y))
with torch.no_grad():
    net.eval()
    ref, logits = net(x, y)
    ref = float(ref)
    correct = int((logits.argmax(1) == y).sum())
    # Each label's rank: the classes scored higher, or as high and first.
    s = logits.numpy()
    mine = s[np.arange(len(y)), y.numpy()][:, None]
    first = np.arange(s.shape[1])[None, :] < y.numpy()[:, None]
    ranks = ((s > mine) | ((s == mine) & first)).sum(1)
    net.train()
    torch.manual_seed(0)
    train_mode = float(net(x, y)[0])
mine = [json.loads(l) for l in open(a.metrics)][-1][a.field]
err = abs(mine - ref) / abs(ref)
print(f"eval loss: mpc {mine:.6f}, torch eval() {ref:.6f}: relative "
      f"difference {err:.2e} {'ok' if err <= a.rtol else 'FAIL'} "
      f"(bound {a.rtol:g})")
print(f"train mode would give {train_mode:.6f}: "
      f"{'differs' if abs(train_mode - ref) > 1e-3 * abs(ref) else 'SAME'}")
ok = err <= a.rtol
if a.accuracy:
    acc = [json.loads(l) for l in open(a.metrics)][-1][a.accuracy]
    same = round(acc * len(y)) == correct and abs(acc - correct / len(y)) < 1e-12
    print(f"accuracy: mpc {acc:.6f}, torch eval() {correct}/{len(y)}: "
          f"{'same' if same else 'DIFFERENT'}")
    ok = ok and same
if a.top_k:
    field = f"eval_top{a.top_k}_accuracy"
    acc = [json.loads(l) for l in open(a.metrics)][-1][field]
    among = int((ranks < a.top_k).sum())
    # (--metrics prints 9 significant digits)
    same = round(acc * len(y)) == among and abs(acc - among / len(y)) < 1e-8
    print(f"top-{a.top_k} accuracy: mpc {acc:.6f}, torch eval() "
          f"{among}/{len(y)} (top-1 {int((ranks == 0).sum())}): "
          f"{'same' if same else 'DIFFERENT'}")
    ok = ok and same
sys.exit(0 if ok else 1)
