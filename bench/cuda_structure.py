"""What fusion does to a CUDA train step, measured without a GPU: for the
fp16 train step (Adam, dynamic loss scaling) of each model, `mpc compile
--train --no-nvcc` with and without fusion (--fuse=false), and from the
artifacts' plans: kernel launches per step, the bytes every kernel's
arguments take (each read or written once: a floor on its DRAM traffic)
and the device memory plan. Writes the table to docs/performance.md.

usage: python3 bench/cuda_structure.py [--batch 16] [--out docs/performance.md]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(__file__))
from report import cpu_name, write_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPC = os.path.join(ROOT, "build", "bin", "mpc")
SIZE = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i1": 1}


def export_zoo(work, names):
    """Writes the test models `names` (scripts/export_torch_models.py
    --only, with Debian's torch) into `work`."""
    subprocess.run(["/usr/bin/python3",
                    os.path.join(ROOT, "scripts", "export_torch_models.py"),
                    work, "--only", ",".join(names)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def read_plan(plan_path):
    """The records of plan.txt the figures need (runtime/PlanText.h):
    each value's bytes, the steps with their `cuda` key=value tokens, the
    inputs and parameters by name, the outputs."""
    plan = {"values": [], "steps": [], "inputs": {}, "outputs": []}
    ids = lambda s: [int(v) for v in s.split(",") if v and v != "-1"]
    for line in open(plan_path):
        f = line.split()
        if f[0] == "value":
            n = 1
            for d in ([] if f[2] == "-" else f[2].split(",")):
                n *= int(d)
            plan["values"].append(n * SIZE[f[1]])
        elif f[0] == "step":
            plan["steps"].append({"in": ids(f[3]), "out": ids(f[4])})
        elif f[0] == "cuda" and plan["steps"]:
            plan["steps"][-1]["cuda"] = dict(t.partition("=")[::2] for t in f[1:])
        elif f[0] in ("input", "param"):
            plan["inputs"][f[1]] = int(f[2])
        elif f[0] == "output":
            plan["outputs"].append((f[1], int(f[2])))
    return plan


def kernel_traffic(plan):
    """Bytes of every launched kernel's arguments (inputs, outputs and the
    chain members' results it stores)."""
    values, total = plan["values"], 0
    for s in plan["steps"]:
        cuda = s.get("cuda", {})
        if "kernel" not in cuda:
            continue
        ins = s["in"]
        if "inputs" in cuda:  # a split read in the chain: its input
            # once a part, the parts tiling it (counted once)
            ins = list(dict.fromkeys(int(v) for v in cuda["inputs"].split(",")))
        if "prologue-add" in cuda:  # reads the Add's operands for input 0
            ab = [int(v) for v in cuda["prologue-add"].split(",")]
            extra = []
            if "prologue-dropout" in cuda:  # a dropout's input for one
                _, k, x, c = (int(v) for v in cuda["prologue-dropout"].split(","))
                ab[k] = x
                extra = [c] if c >= 0 else []
            ins = [ab[0]] + ins[1:] + [ab[1]] + extra
        # A chain's kernel also writes its members' results read later;
        # `written=N`: only its first N outputs (a dropout's mask unread).
        stores = [int(v) for v in cuda.get("stores", "").split(",") if v]
        outs = s["out"][:int(cuda.get("written", len(s["out"])))]
        total += sum(values[v] for v in ins + outs + stores)
    return total


def copied_back(plan):
    """Bytes the runtime copies each step feeding state outputs back into
    their inputs (runtime/TrainProtocol.cpp: the new weights, optimizer
    and loss-scale state), read and written: all but those a kernel wrote
    in the input's buffer (`overwrites=`)."""
    in_place, total = set(), 0
    for s in plan["steps"]:
        if "overwrites" in s.get("cuda", {}):
            v = [int(x) for x in s["cuda"]["overwrites"].split(",")]
            in_place.update(zip(v[::2], v[1::2]))
    for name, value in plan["outputs"]:
        if name.startswith("mpc.new."):
            name = name[len("mpc.new."):]
        elif not name.startswith(("mpc.opt.", "mpc.loss_scale")):
            continue
        state = plan["inputs"].get(name)
        if state is not None and (value, state) not in in_place:
            total += 2 * plan["values"][value]
    return total


RECURRENT_EXPORT = """
import sys, torch
sys.path.insert(0, sys.argv[2])
import export_torch_models as zoo
for kind in ("LSTM", "GRU"):
    torch.manual_seed(8)
    m = zoo.WithCrossEntropy(zoo.Recurrent(kind, True, dim=128, hidden=256,
                                           classes=10))
    zoo.export(m, (torch.randn(4, 16, 128), torch.randint(0, 10, (4,))),
               (["x", "labels"], ["loss", "logits"]),
               f"{sys.argv[1]}/{kind.lower()}.onnx", 17, training=True)
"""


def compile_step(model, out, batch, fuse, flags=()):
    subprocess.run([MPC, "compile", model, "-o", out, "--precision", "fp16",
                    "--batch", str(batch), "--train", "--optimizer", "adam",
                    "--lr", "0.01", "--no-nvcc", f"--fuse={str(fuse).lower()}",
                    *flags], check=True, stdout=subprocess.DEVNULL)
    summary = json.load(open(os.path.join(out, "summary.json")))
    plan = read_plan(os.path.join(out, "plan.txt"))
    return (summary["steps"], len(summary["launches"]),
            summary["launches_with_libraries"], kernel_traffic(plan),
            copied_back(plan), summary["memory_plan_bytes"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"))
    a = ap.parse_args()
    work = tempfile.mkdtemp()
    export_zoo(work, ["digits_cnn", "transformer", "bert", "gpt",
                      "transformer_train", "bert_train", "gpt_train",
                      "gpt_dropout_train", "resnet18_train"])
    models = [("mlp", os.path.join(ROOT, "examples", "mlp.onnx"), ())] + [
        (m, os.path.join(work, m + ".onnx"), ())
        for m in ("digits_cnn", "transformer", "bert", "gpt",
                  # exported in training mode (no constant folding: each
                  # Linear's weight transposed in the graph, no initializers
                  # merged), as a user who trains them should
                  "transformer_train", "bert_train", "gpt_train",
                  # GPT-2's dropouts (0.1), the attention's fused
                  "gpt_dropout_train", "resnet18_train")]
    # Recurrent layers at a realistic size: bidirectional, 128 -> 256,
    # 16 steps (each step's gates one chain, their gradients another).
    subprocess.run(["/usr/bin/python3", "-c", RECURRENT_EXPORT, work,
                    os.path.join(ROOT, "scripts")], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    models += [(f"{k} (bidirectional, 128 -> 256, 16 steps)",
                os.path.join(work, f"{k.lower()}.onnx"), ())
               for k in ("LSTM", "GRU")]
    # The ResNet channels last too (mpc-channels-last).
    models.append(("resnet18_train `--layout nhwc`",
                   os.path.join(work, "resnet18_train.onnx"),
                   ("--layout", "nhwc")))
    mib = lambda b: f"{b / 2 ** 20:.2f}"
    rows = []
    for i, (name, path, flags) in enumerate(models):
        steps, k0, _, t0, c0, m0 = compile_step(
            path, os.path.join(work, f"{i}-0"), a.batch, False, flags)
        _, k1, lib, t1, c1, m1 = compile_step(
            path, os.path.join(work, f"{i}-1"), a.batch, True, flags)
        rows.append(f"| {name} | {steps} | {k0} -> {k1} | {lib} | "
                    f"{mib(t0)} -> {mib(t1)} "
                    f"({100 * (1 - t1 / t0):.0f}% less) | {mib(c0)} -> {mib(c1)} "
                    f"| {mib(m0)} -> {mib(m1)} |")
        print(rows[-1])
    section = (
        "## CUDA train step structure (no GPU needed)\n\n"
        f"Measured {datetime.date.today()} on {cpu_name()} with "
        f"`python3 bench/cuda_structure.py --batch {a.batch}`: the fp16 train "
        "step (forward, backward, dynamic loss scaling, Adam on FP32 "
        "masters) of each model compiled without and with fusion "
        "(`mpc compile --fuse=false` / default). Kernel-argument MiB is the "
        "bytes every launched kernel reads and writes once (a chain's "
        "extra stores included, counted since 2026-12-02), a floor on its "
        "DRAM traffic; fused chains keep their intermediates in registers. "
        "Per step the host also uploads the batch and reads back 25 bytes "
        "(loss, all-finite flag, loss scale and its counter, underflow "
        "count); weights and optimizer state stay on the device. Copy-back "
        "MiB is what the runtime copies on the device after each step to "
        "feed the new weights and optimizer state into the next step's "
        "inputs (read and written), nothing where the update kernel wrote "
        "them over the old values (`overwrites=`). The memory "
        "plan can grow a little with fusion: a chain reads its inputs at its "
        "last step, so they live longer. Launches with libraries are the "
        "fused step's when cuBLASLt and cuDNN run the GEMMs and convolutions "
        "(each call one launch), without the steps their epilogues compute "
        "(bias gradients, GELU and its gradient, ReLU masks).\n\n"
        "| model (fp16, Adam) | plan steps | kernel launches | launches "
        "with libraries | kernel-argument MiB | copy-back MiB | memory plan "
        "MiB |\n|---|---|---|---|---|---|---|\n"
        + "\n".join(rows) + "\n\n" + textwrap.fill(
        "The `_train` rows are the same models (same weights) exported in "
        "training mode, as a user who trains them should "
        "(`scripts/export_torch_models.py --only bert_train`...): no "
        "initializers merged (the eval exports' fresh LayerNorms share one "
        "tied gamma and beta, whose gradient sums cost launches) and each "
        "Linear's weight transposed in the graph. Before "
        "`mpc-fold-linear-bias` read such weights with `transB` and "
        "`mpc-merge-sibling-linears` merged them along rows (2026-12-03), "
        "the transposes ran every step and BERT's Q/K/V stayed three GEMMs "
        "each way: bert_train 121 launches (108 with the libraries), then 85 "
        "(76), then 83 (74) with its fp16 Q/K/V weight copies written by the "
        "updates into the merged weight (the concat in place, "
        "2026-12-03: 13.07 -> 12.97 MiB); GPT-2 with the tanh GELU (bench/gpu's) 90 (78), then 72 (60); "
        "every transformer row has counted 4 launches more since, fused "
        "and unfused alike (prologue kernels, the attention backward's D "
        "among them, 2026-12-04); "
        "the Transformer's training-mode export (nn.TransformerEncoder with "
        "dropout=0.0 writes Dropout nodes of ratio 0) did not compile for "
        "CUDA before identity dropouts were folded at import and dropout got "
        "its kernel. `gpt_dropout_train` adds GPT-2's dropouts (0.1 on the "
        "attention probabilities and on both residual branches): the "
        "attention's fuses into mpc.attention (its mask redrawn by the "
        "backward, never stored); each residual one is drawn by the layer "
        "norm after it as it loads (with the residual Add: one kernel), its "
        "gradient (the dropout of dy with the same key) with its fp16 cast "
        "in one chain backward, drawing the keep bits in the kernel: no mask "
        "is written or read (until 2026-12-03 each was a kernel of its own "
        "forward whose mask the backward read: 80 launches, 13.67 MiB, a "
        "3.50 MiB plan). Until 2026-12-03 a dropout "
        "between softmax and V kept the attention unfused (measured with "
        "`--fuse-attention=false`: 134 launches, a 3.71 MiB plan), and each "
        "dropout's gradient computed 1 - ratio in a launch of its own every "
        "step (4 more).", 76, break_on_hyphens=False) + "\n\n" + textwrap.fill(
        "The LSTM and GRU rows (nn.LSTM and nn.GRU exported by torch, "
        "unrolled by mpc's importer): each step's GEMM, one kernel for the "
        "gates, c and h (the chain computing x W + h R once a gate from "
        "both products read at the gate's offsets) and one for the gate "
        "gradients (the chain whose last step is their Concat, storing "
        "each at its offset); the concats stacking the steps' outputs, "
        "their gradients and the reordered gate weights launch nothing (the "
        "kernels write each part where the concat puts it). Until "
        "2026-12-06 a split was a kernel of its own, the Add before it "
        "another, the gradients' concat another, a chain stored at most 4 "
        "results, every concat of computed values copied them, and the "
        "importer sliced GRU's candidate bias every step: 555 (LSTM) and "
        "693 (GRU) launches, 165.28 and 127.33 MiB.", 76,
        break_on_hyphens=False) + "\n")
    write_section(a.out, "## CUDA train step structure", section)
    print("wrote", a.out)


if __name__ == "__main__":
    sys.exit(main())
