#!/usr/bin/python3
"""The train step of a 4k-token GPT-2 block holds no sequence x sequence
tensor once attention is fused: exports the zoo's GPT (one block, context
4096) with torch, compiles its fp16 train step for CUDA (no device code)
with and without --fuse-attention, and with GPT-2's dropouts (0.1 on the
attention probabilities, fused, their mask redrawn by the backward), and
prints the largest value each plan holds.

usage: attention_memory.py MPC WORKDIR
"""
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../scripts"))
import export_torch_models as zoo  # noqa: E402

mpc, work = sys.argv[1], sys.argv[2]
S = 4096
torch.manual_seed(0)
model = zoo.Gpt(vocab=64, d=64, heads=4, layers=1, ctx=S)
toks = (torch.randint(0, 64, (1, S)), torch.randint(0, 64, (1, S)))
names = (["tokens", "targets"], ["loss", "logp"])
path = os.path.join(work, "gpt4k.onnx")
zoo.export(model, toks, names, path, 17, training=True)
torch.manual_seed(0)
dropped = os.path.join(work, "gpt4k-dropout.onnx")
zoo.export(zoo.Gpt(vocab=64, d=64, heads=4, layers=1, ctx=S, dropout=0.1),
           toks, names, dropped, 17, training=True)
for label, path, fuse in (("", path, "true"), ("", path, "false"),
                          ("dropout 0.1, ", dropped, "true")):
    art = os.path.join(work, f"gpt4k-{len(label)}-fuse-{fuse}")
    subprocess.run([mpc, "compile", path, "-o", art, "--train", "--precision",
                    "fp16", "--batch", "1", "--no-nvcc", "--optimizer", "adam",
                    f"--fuse-attention={fuse}"], check=True,
                   stdout=subprocess.DEVNULL)
    largest, shape = 0, ""
    for line in open(os.path.join(art, "plan.txt")):
        if not line.startswith("value "):
            continue
        dims = line.split()[2]
        n = 1
        for d in ([] if dims == "-" else dims.split(",")):
            n *= int(d)
        if n > largest:
            largest, shape = n, dims
    plan = json.load(open(os.path.join(art, "summary.json")))
    print(f"{label}fuse-attention={fuse}: largest value {shape} ({largest} elements,"
          f" {largest / (S * S):.3f} of S x S); memory plan "
          f"{plan['memory_plan_bytes'] / 2**20:.1f} MiB")
