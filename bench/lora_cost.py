"""What LoRA fine-tuning (`--lora-rank`) saves against training every
weight, measured without a GPU: the fp16 AdamW train step of a GPT-2
small-width decoder (d 768, 12 heads, 4 blocks, 128 tokens; Llama's
projection names, exported by Debian's torch in training mode so the
initializers keep them) compiled as a full fine-tune and with adapters of
rank 8 on every linear weight and on q_proj and v_proj alone (`mpc
compile --train --no-nvcc`). From each artifact: the parameters that
train, the optimizer state (Adam's m and v, `mpc.opt.*` inputs), the
memory plan (the arena of what the step computes: activations and
gradients), kernel launches and FLOPs.

usage: python3 bench/lora_cost.py [--batch 8]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from cuda_structure import MPC, read_plan  # noqa: E402

EXPORT = """
import sys, torch
from torch import nn
d, heads, blocks, tokens, vocab = 768, 12, 4, 128, 1000
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (
            nn.Linear(d, d) for _ in range(4))
        self.up_proj, self.down_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
    def forward(self, x):
        b, t, _ = x.shape
        h = self.ln1(x)
        split = lambda y: y.view(b, t, heads, d // heads).transpose(1, 2)
        q, k, v = split(self.q_proj(h)), split(self.k_proj(h)), split(self.v_proj(h))
        s = q @ k.transpose(-1, -2) / (d // heads) ** 0.5
        s = s + torch.triu(torch.full((t, t), float("-inf")), 1)
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.o_proj(a)
        return x + self.down_proj(nn.functional.gelu(self.up_proj(self.ln2(x))))
class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Block() for _ in range(blocks))
        self.head = nn.Linear(d, vocab)
    def forward(self, ids, labels):
        x = self.tok(ids)
        for layer in self.layers:
            x = layer(x)
        return nn.functional.cross_entropy(self.head(x).flatten(0, 1),
                                           labels.flatten())
ids = torch.zeros(2, tokens, dtype=torch.long)
torch.onnx.export(Gpt(), (ids, ids), sys.argv[1], input_names=["ids", "labels"],
                  output_names=["loss"], opset_version=17,
                  training=torch.onnx.TrainingMode.TRAINING,
                  do_constant_folding=False)
"""


def compile_step(model, out, batch, extra):
    subprocess.run([MPC, "compile", model, "-o", out, "--precision", "fp16",
                    "--batch", str(batch), "--train", "--optimizer", "adamw",
                    "--lr", "0.001", "--no-nvcc"] + extra, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    summary = json.load(open(os.path.join(out, "summary.json")))
    plan = read_plan(os.path.join(out, "plan.txt"))
    trained = sum(plan["values"][int(f[2])] // 4 for f in
                  (l.split() for l in open(os.path.join(out, "plan.txt")))
                  if f[0] == "param" and f[3] == "1")
    state = sum(plan["values"][v] for name, v in plan["inputs"].items()
                if name.startswith(("mpc.opt.m.", "mpc.opt.v.")))
    return summary, trained, state


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    work = tempfile.mkdtemp()
    model = os.path.join(work, "gpt.onnx")
    subprocess.run(["/usr/bin/python3", "-c", EXPORT, model], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mib = lambda b: f"{b / 2 ** 20:.2f}"
    print(f"| d 768, 4 blocks, fp16 AdamW, batch {a.batch} | parameters that train | "
          "optimizer state MiB | memory plan MiB | launches | GFLOP a step |\n"
          "|---|---|---|---|---|---|")
    for name, extra in [("every weight", []),
                        ("LoRA r=8, every linear weight", ["--lora-rank", "8"]),
                        ("LoRA r=8, q_proj and v_proj",
                         ["--lora-rank", "8", "--lora-targets",
                          ".*(q_proj|v_proj).weight"])]:
        s, trained, state = compile_step(
            model, os.path.join(work, str(len(extra))), a.batch, extra)
        print(f"| {name} | {trained} | {mib(state)} | "
              f"{mib(s['memory_plan_bytes'])} | {len(s['launches'])} | "
              f"{s['flops'] / 1e9:.2f} |")


if __name__ == "__main__":
    main()
