"""The loss onnxruntime computes on a LoRA-merged model (`mpc train
--lora-rank ... -o MERGED`) over held-out data, in batches of BATCH rows,
against the held-out loss mpc reported for the adapted model at its last
step (`eval_loss` in --metrics): the merge is the model the adapters
trained. Also the loss of the original model, which the merge must have
moved away from.

usage: lora_merged_loss.py ORIGINAL MERGED METRICS BATCH NAME=FILE.npy...
"""
import json
import sys

import numpy as np
import onnxruntime as ort

original, merged, metrics, batch = sys.argv[1:5]
batch = int(batch)
data = dict(a.split("=", 1) for a in sys.argv[5:])
data = {k: np.load(v) for k, v in data.items()}
rows = len(next(iter(data.values())))


def loss(path):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = {i.name for i in s.get_inputs()}
    total = 0.0
    for r in range(0, rows, batch):
        feed = {k: v[r:r + batch] for k, v in data.items() if k in names}
        total += float(s.run(["loss"], feed)[0]) * len(feed[next(iter(feed))])
    return total / rows


reported = [json.loads(l) for l in open(metrics)][-1]["eval_loss"]
got, before = loss(merged), loss(original)
err = abs(got - reported) / abs(reported)
moved = abs(got - before) / abs(before)
print(f"merged loss vs mpc's evaluation {err:.1e} "
      f"{'ok' if err <= 2e-3 else 'FAIL'} (bound 2e-3); "
      f"moved from the original's by {moved:.1e} "
      f"{'ok' if moved > 10 * err else 'FAIL'} (more than 10x that)")
sys.exit(0 if err <= 2e-3 and moved > 10 * err else 1)
