"""A Llama-style attention block with grouped-query heads as torch 1.13
exports it: Q, K and V projections, K and V repeated to Q's heads by
Hugging Face's repeat_kv (x[:, :, None].expand(...).reshape(...)), a
causal mask, softmax, the output projection. Writes DIR/gqa_block.onnx,
DIR/x.npy and torch's output DIR/y_torch.npy.

usage: gqa_torch.py DIR   (run with torch's python)
"""
import math
import sys

import numpy as np
import torch


class Block(torch.nn.Module):
    def __init__(self, d=64, hq=4, hk=2, hd=16):
        super().__init__()
        self.hq, self.hk, self.hd = hq, hk, hd
        self.q = torch.nn.Linear(d, hq * hd, bias=False)
        self.k = torch.nn.Linear(d, hk * hd, bias=False)
        self.v = torch.nn.Linear(d, hk * hd, bias=False)
        self.o = torch.nn.Linear(hq * hd, d, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.hq, self.hd).transpose(1, 2)
        k = self.k(x).view(b, n, self.hk, self.hd).transpose(1, 2)
        v = self.v(x).view(b, n, self.hk, self.hd).transpose(1, 2)
        rep = self.hq // self.hk  # repeat_kv
        k = k[:, :, None, :, :].expand(b, self.hk, rep, n, self.hd).reshape(b, self.hq, n, self.hd)
        v = v[:, :, None, :, :].expand(b, self.hk, rep, n, self.hd).reshape(b, self.hq, n, self.hd)
        s = q @ k.transpose(2, 3) / math.sqrt(self.hd)
        mask = torch.triu(torch.full((n, n), float("-inf")), 1)
        p = torch.softmax(s + mask, dim=-1)
        return self.o((p @ v).transpose(1, 2).reshape(b, n, self.hq * self.hd))


torch.manual_seed(0)
block = Block().eval()
x = torch.randn(2, 8, 64)
d = sys.argv[1]
torch.onnx.export(block, x, f"{d}/gqa_block.onnx", opset_version=17,
                  input_names=["x"], output_names=["y"])
np.save(f"{d}/x.npy", x.numpy())
with torch.no_grad():
    np.save(f"{d}/y_torch.npy", block(x).numpy())
