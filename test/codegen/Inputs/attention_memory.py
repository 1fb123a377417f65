#!/usr/bin/python3
"""The train step of a 4k-token GPT-2 block holds no sequence x sequence
tensor once attention is fused: exports the zoo's GPT (one block, context
4096) with torch, compiles its fp16 train step for CUDA (no device code)
with and without --fuse-attention, with GPT-2's dropouts (0.1 on the
attention probabilities, fused, their mask redrawn by the backward), and
with the backward's dQ from partial sums (--attention-dq accumulate) and
atomic adds (--attention-dq atomic), and prints the largest value each plan holds and its attention backward's
kernel scratch.

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
# dQ of the 4 heads in FP32: the unit of the accumulating backward's
# partial sums (--attention-dq accumulate), which grow with the sequence.
dq32 = 4 * S * 16 * 4
for label, path, fuse, dq in (("", path, "true", "auto"), ("", path, "false", "auto"),
                              ("dropout 0.1, ", dropped, "true", "auto"),
                              ("attention-dq accumulate, ", path, "true", "accumulate"),
                              ("attention-dq atomic, ", path, "true", "atomic")):
    art = os.path.join(work, f"gpt4k-{len(label)}-fuse-{fuse}")
    subprocess.run([mpc, "compile", path, "-o", art, "--train", "--precision",
                    "fp16", "--batch", "1", "--no-nvcc", "--optimizer", "adam",
                    f"--fuse-attention={fuse}", f"--attention-dq={dq}"], check=True,
                   stdout=subprocess.DEVNULL)
    largest, shape, scratch = 0, "", 0
    for line in open(os.path.join(art, "plan.txt")):
        # The attention backward's (the embedding gradient's token sort
        # takes 8 bytes a token of scratch too).
        attention_grad = line.startswith("cuda kernel=attention_grad")
        for word in line.split() if attention_grad else []:
            if word.startswith("scratch="):
                scratch = max(scratch, int(word[len("scratch="):]))
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
          f" {largest / (S * S):.3f} of S x S); kernel scratch {scratch} bytes"
          f" ({scratch / dq32:g} x dQ in FP32); memory plan "
          f"{plan['memory_plan_bytes'] / 2**20:.1f} MiB")
