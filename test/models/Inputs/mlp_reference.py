"""The digits MLP of examples/mlp.onnx in float64 (Gemm with transB, ReLU,
Gemm, ReLU, Gemm, mean softmax cross-entropy), forward and backward,
optionally with LoRA adapters on its three weights: the reference that
half_model_training.py and lora_training.py train against."""
import os

import numpy as np

LAYERS = ["model.0", "model.2", "model.4"]
PARAMS = [l + suffix for l in LAYERS for suffix in (".weight", ".bias")]


def write_data(workdir, rows, seed):
    """`rows` random inputs (x, 64 features) and labels (10 classes),
    returned and saved as WORKDIR/x.npy and WORKDIR/y.npy."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 64)).astype(np.float32)
    y = rng.integers(0, 10, rows).astype(np.int64)
    np.save(os.path.join(workdir, "x.npy"), x)
    np.save(os.path.join(workdir, "y.npy"), y)
    return x, y


def loss_and_grads(p, xb, yb, adapters=None, scale=1.0, half_input=False,
                   grads=True):
    """The loss at weights `p` (W [out, in] and biases, by ONNX name) on
    rows `xb` with labels `yb`, and its gradients: of the weights and
    biases, or with `adapters` (A [in, r] and B [r, out] as "<layer>.A",
    "<layer>.B"; each layer's result gains scale * (x A) B) of the
    adapters alone. `half_input`: x rounded to FP16 first, as a converted
    model's input cast does."""
    h = xb.astype(np.float16) if half_input else xb
    hs, acts = [h.astype(np.float64)], []
    for i, l in enumerate(LAYERS):
        z = hs[-1] @ p[l + ".weight"].T + p[l + ".bias"]
        if adapters:
            z = z + scale * (hs[-1] @ adapters[l + ".A"]) @ adapters[l + ".B"]
        acts.append(z)
        hs.append(np.maximum(z, 0) if i < 2 else z)
    z = hs[-1] - hs[-1].max(1, keepdims=True)
    e = np.exp(z)
    sm = e / e.sum(1, keepdims=True)
    n = len(yb)
    loss = -np.log(sm[np.arange(n), yb]).mean()
    if not grads:
        return loss, None
    dz = sm.copy()
    dz[np.arange(n), yb] -= 1
    dz /= n
    g = {}
    for i in reversed(range(len(LAYERS))):
        l, h = LAYERS[i], hs[i]
        if i < 2:
            dz = dz * (acts[i] > 0)
        if adapters:
            a, b = adapters[l + ".A"], adapters[l + ".B"]
            g[l + ".B"] = scale * (h @ a).T @ dz
            g[l + ".A"] = scale * h.T @ (dz @ b.T)
            dz_in = dz @ p[l + ".weight"] + scale * (dz @ b.T) @ a.T
        else:
            g[l + ".weight"], g[l + ".bias"] = dz.T @ h, dz.sum(0)
            dz_in = dz @ p[l + ".weight"]
        dz = dz_in
    return loss, g
