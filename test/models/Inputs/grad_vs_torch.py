#!/usr/bin/python3
"""`mpc grad` against torch autograd: exports each named model, feeds both
the same seeded batch, and prints per parameter the normwise relative error
max|mpc - torch| / max|torch|. Runs under Debian's python3-torch.

usage: grad_vs_torch.py MPC WORKDIR MODEL... [--rtol R] [--opset N]
       [--autocast bf16|fp16]
"""
import argparse
import contextlib
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../scripts"))
import export_torch_models as zoo  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("mpc")
ap.add_argument("workdir")
ap.add_argument("models", nargs="+")
ap.add_argument("--rtol", type=float, default=1e-4)
ap.add_argument("--autocast", choices=["bf16", "fp16"],
                help="export under torch.autocast (CPU: bfloat16): FP32 "
                     "weights cast to BF16 at their uses; fp16: the same "
                     "export with its BF16 casts made FP16 (torch 1.13's CPU "
                     "autocast has no FP16; CUDA's writes this form); compared "
                     "with torch's FP32 gradients")
ap.add_argument("--opset", type=int, default=17,
                help="export opset (below 17 torch spells LayerNorm out, "
                     "below 20 Gelu)")
a = ap.parse_args()

MODELS = {
    "mlp": lambda: (zoo.WithCrossEntropy(zoo.Mlp()),
                    (torch.randn(16, 64), torch.randint(0, 10, (16,))),
                    (["x", "labels"], ["loss", "logits"])),
    "lenet": lambda: (zoo.WithCrossEntropy(zoo.LeNet()),
                      (torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,))),
                      (["x", "labels"], ["loss", "logits"])),
    "rescnn": lambda: (zoo.WithCrossEntropy(zoo.ResCnn()),
                       (torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))),
                       (["x", "labels"], ["loss", "logits"])),
    "unet": lambda: (zoo.WithCrossEntropy(zoo.UNet()),
                     (torch.randn(2, 3, 8, 8), torch.randint(0, 10, (2,))),
                     (["x", "labels"], ["loss", "logits"])),
    "subpixel": lambda: (zoo.WithCrossEntropy(zoo.SubPixelCnn()),
                         (torch.randn(2, 3, 6, 6), torch.randint(0, 10, (2,))),
                         (["x", "labels"], ["loss", "logits"])),
    "moe": lambda: (zoo.WithCrossEntropy(zoo.Moe()),
                    (torch.randn(16, 16), torch.randint(0, 10, (16,))),
                    (["x", "labels"], ["loss", "logits"])),
    "lstm": lambda: (zoo.WithCrossEntropy(zoo.Recurrent("LSTM")),
                     (torch.randn(3, 7, 6), torch.randint(0, 3, (3,))),
                     (["x", "labels"], ["loss", "logits"])),
    "gru_bi": lambda: (zoo.WithCrossEntropy(zoo.Recurrent("GRU", True)),
                       (torch.randn(3, 7, 6), torch.randint(0, 3, (3,))),
                       (["x", "labels"], ["loss", "logits"])),
    "rnn_bi": lambda: (zoo.WithCrossEntropy(zoo.Recurrent("RNN", True)),
                       (torch.randn(3, 7, 6), torch.randint(0, 3, (3,))),
                       (["x", "labels"], ["loss", "logits"])),
    "transformer": lambda: (zoo.WithCrossEntropy(zoo.Encoder()),
                            (torch.randint(0, 100, (4, 16)),
                             torch.randint(0, 10, (4,))),
                            (["x", "labels"], ["loss", "logits"])),
    "bert": lambda: (zoo.WithCrossEntropy(zoo.Bert()),
                     (torch.randint(0, 100, (4, 16)),
                      torch.randint(0, 10, (4,))),
                     (["x", "labels"], ["loss", "logits"])),
    "gpt": lambda: (zoo.Gpt(),
                    (torch.randint(0, 128, (2, 16)),
                     torch.randint(0, 128, (2, 16))),
                    (["tokens", "targets"], ["loss", "logp"])),
    "llama": lambda: (zoo.Llama(),
                      (torch.randint(0, 128, (2, 16)),
                       torch.randint(0, 128, (2, 16))),
                      (["tokens", "targets"], ["loss", "logp"])),
    "llama_hf_softmax": lambda: (zoo.Llama(softmax_fp32=True),
                                 (torch.randint(0, 128, (2, 16)),
                                  torch.randint(0, 128, (2, 16))),
                                 (["tokens", "targets"], ["loss", "logp"])),
    "gemma": lambda: (zoo.Llama(gemma=True),
                      (torch.randint(0, 128, (2, 16)),
                       torch.randint(0, 128, (2, 16))),
                      (["tokens", "targets"], ["loss", "logp"])),
    "neox_rotary": lambda: (zoo.Llama(rotary_dims=4),
                            (torch.randint(0, 128, (2, 16)),
                             torch.randint(0, 128, (2, 16))),
                            (["tokens", "targets"], ["loss", "logp"])),
    "mistral_window": lambda: (zoo.Llama(window=5),
                               (torch.randint(0, 128, (2, 16)),
                                torch.randint(0, 128, (2, 16))),
                               (["tokens", "targets"], ["loss", "logp"])),
    "gpt_tanh": lambda: (zoo.Gpt(gelu="tanh"),
                         (torch.randint(0, 128, (2, 16)),
                          torch.randint(0, 128, (2, 16))),
                         (["tokens", "targets"], ["loss", "logp"])),
}

autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.autocast \
    else contextlib.nullcontext
worst = 0.0
for name in a.models:
    torch.manual_seed(0)
    model, args, names = MODELS[name]()
    path = os.path.join(a.workdir, name + ".onnx")
    with autocast():
        zoo.export(model, args, names, path, a.opset, training=True)
    if a.autocast == "fp16":  # BF16 casts and constants made FP16
        import onnx
        from onnx import numpy_helper
        BF16, F16 = onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT16
        m = onnx.load(path)
        for node in m.graph.node:
            for at in node.attribute:
                if node.op_type == "Cast" and at.name == "to" and at.i == BF16:
                    at.i = F16
                if at.name == "value" and at.t.data_type == BF16:
                    v = numpy_helper.to_array(at.t).astype(np.float32)
                    at.t.CopyFrom(numpy_helper.from_array(v.astype(np.float16), at.t.name))
        onnx.save(m, path)
    feeds = []
    for n, t in zip(names[0], args):
        f = os.path.join(a.workdir, f"{name}.{n}.npy")
        np.save(f, t.numpy())
        feeds += ["--input", f"{n}={f}"]
    out = os.path.join(a.workdir, name + ".grads")
    subprocess.run([a.mpc, "grad", path, "--output-dir", out] + feeds,
                   check=True, stdout=subprocess.DEVNULL)
    # (Under --autocast too, torch's FP32 gradients: the higher-precision
    # run. torch's own BF16 ones are 3x further from them than mpc's.)
    model.zero_grad()
    model(*args)[0].backward()
    # Relative to each gradient's magnitude, but not below 1e-3 of the
    # model's largest: a gradient zero in exact arithmetic (BERT's key
    # bias: softmax ignores a shift of its row) is rounding noise on both
    # sides.
    floor = 1e-3 * max(float(np.abs(p.grad.numpy()).max())
                       for p in model.parameters())
    for pname, p in model.named_parameters():
        got = np.load(os.path.join(out, pname + ".npy"))
        want = p.grad.numpy()
        err = float(np.abs(got - want).max() /
                    max(np.abs(want).max(), floor, 1e-30))
        worst = max(worst, err)
        print(f"{name} {pname}: relative error {err:.2e}"
              f" {'ok' if err <= a.rtol else 'FAIL'}")
print(f"worst relative error {worst:.2e} (bound {a.rtol:g})")
sys.exit(0 if worst <= a.rtol else 1)
