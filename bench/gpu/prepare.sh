#!/usr/bin/env bash
# GPU benchmark, part 1, on the machine that builds mpc (MLIR, no GPU):
# exports the MLP, a residual CNN (ResNet-style, BatchNorm folded), a
# TransformerEncoder, a U-Net (Resize nearest and bilinear), a GPT-2
# style decoder (causal attention, GPT-2's tanh GELU, its own NLL loss) and
# torchvision's ResNet-18 and ResNet-50 (64x64 images, batch norm in
# training mode; their weights travel as seeds: `--weights seed:0` draws
# them on both sides, runtime/SeededWeights.h) with their losses, compiles
# fp32 and fp16 CUDA
# artifacts for sm_90 (`mpc compile`), runs each artifact on the CPU backend
# for the reference outputs, and adds a GEMM-only artifact (4096^3, fp16)
# for the cuBLASLt-vs-mpc-kernel-vs-torch comparison. For training, each
# model also gets a train-step artifact (`mpc compile --train`, SGD lr 0.01, as the
# PyTorch step; bf16 too for the MLP, BERT, GPT-2 and the ResNets) and its
# losses over $STEPS steps on the batch from `mpc train` on the CPU
# backend; and the digits DCGAN as a phased fp16 step (GAN=0 leaves it
# out); softmax and layer norm over ROWS (default 8192, 0: none) rows of
# 8192 fp16; causal attention at ATTN_SEQ (default 1024) tokens checked
# against the CPU backend and at ATTN_LONG (default 4096, 0: none) checked
# on the GPU machine. MODELS (default "mlp rescnn transformer bert unet
# gpt llama vit vitrel resnet18 resnet50"; bert: Hugging Face's form, separate
# query, key and value Linears; llama: a Llama-style decoder as Hugging
# Face writes it, RMSNorm, rotary, grouped-query heads, SwiGLU; vit: timm's
# ViT at ViT-Tiny's width, Q, K and V unbound from one permuted
# projection; vitrel: the same with a learned relative position bias in
# each attention, as Swin, LeViT and T5 train one; none: no models) and
# GEMM=0 make a smaller set. Everything lands in
# bench/gpu/work/ (a few MiB), which bench/gpu/run.sh reads on the GPU
# machine. NVCC=0 leaves the device code out (an empty kernels.fatbin
# each: the CUDA driver double builds kernels.cu on the host instead, as
# test/codegen/bench-gpu.test runs it).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mpc=${MPC:-$root/build/bin/mpc}
arch=${ARCH:-sm_90}
# `mpc compile` with NVCC=0's --no-nvcc and its stand-in fatbins (in each
# phase's directory too).
mpc_compile() {
  if [[ ${NVCC:-1} != 0 ]]; then
    "$mpc" compile "$@"
    return
  fi
  "$mpc" compile "$@" --no-nvcc
  local out= prev= a
  for a in "$@"; do
    [[ $prev == -o ]] && out=$a
    prev=$a
  done
  find "$out" -name plan.txt -exec sh -c 'touch "$(dirname "$1")/kernels.fatbin"' _ {} \;
}
batch=${BATCH:-64}
steps=${STEPS:-20}
models=${MODELS:-mlp rescnn transformer bert unet gpt llama vit vitrel resnet18 resnet50}
[[ $models == none ]] && models= # attention alone (with GEMM=0 GAN=0 ROWS=0)
work=${WORK:-$root/bench/gpu/work}
rm -rf "$work" && mkdir -p "$work/models" "$work/inputs"
/usr/bin/python3 - "$work/models" "$root/scripts" "$models" <<'PY'
import sys, torch
sys.path.insert(0, sys.argv[2])
import export_torch_models as zoo
out = sys.argv[1]
torch.manual_seed(0)
lbl = lambda b: torch.randint(0, 10, (b,))
xy = (["x", "labels"], ["loss", "logits"])
wanted = sys.argv[3].split()  # only the models asked for (MODELS)
# The transformers in training mode, as a user who trains them exports
# them: each parameter its own (an eval-mode export merges initializers of
# equal value, so a fresh model's LayerNorms would train one tied gamma
# and beta where torch trains one each) and the same count as the torch
# models run.sh times against.
tok = lambda b: torch.randint(0, 128, (b, 16))
if "mlp" in wanted:
    zoo.export(zoo.WithCrossEntropy(zoo.Mlp()), (torch.randn(4, 64), lbl(4)), xy, f"{out}/mlp.onnx", 14)
if "rescnn" in wanted:
    zoo.export(zoo.WithCrossEntropy(zoo.ResCnn()), (torch.randn(4, 3, 32, 32), lbl(4)), xy, f"{out}/rescnn.onnx", 17)
if "transformer" in wanted:
    zoo.export(zoo.WithCrossEntropy(zoo.Encoder()), (torch.randint(0, 100, (4, 16)), lbl(4)), xy, f"{out}/transformer.onnx", 17, training=True)
if "bert" in wanted:
    zoo.export(zoo.WithCrossEntropy(zoo.Bert()), (torch.randint(0, 100, (4, 16)), lbl(4)), xy, f"{out}/bert.onnx", 17, training=True)
if "unet" in wanted:
    zoo.export(zoo.WithCrossEntropy(zoo.UNet(ch=16)), (torch.randn(4, 3, 32, 32), lbl(4)), xy, f"{out}/unet.onnx", 17)
if "gpt" in wanted:
    zoo.export(zoo.Gpt(gelu="tanh"), (tok(4), tok(4)), (["tokens", "targets"], ["loss", "logp"]), f"{out}/gpt.onnx", 17, training=True)
if "llama" in wanted:
    zoo.export(zoo.Llama(), (tok(4), tok(4)), (["tokens", "targets"], ["loss", "logp"]), f"{out}/llama.onnx", 17, training=True)
if "vit" in wanted:
    zoo.export(zoo.WithCrossEntropy(zoo.Vit()), (torch.randn(4, 3, 32, 32), lbl(4)), xy, f"{out}/vit.onnx", 17, training=True)
if "vitrel" in wanted:
    zoo.export(zoo.WithCrossEntropy(zoo.Vit(rel=True)), (torch.randn(4, 3, 32, 32), lbl(4)), xy, f"{out}/vitrel.onnx", 17, training=True)
for name in ("resnet18", "resnet50"):
    if name in wanted:
        import torchvision
        net = getattr(torchvision.models, name)(num_classes=10)
        zoo.export(zoo.WithCrossEntropy(net), (torch.randn(2, 3, 64, 64), lbl(2)), xy, f"{out}/{name}.onnx", 17, training=True)
PY
python3 - "$work" "$batch" "$root/bench/gpu" <<'PY'
import os, sys
import numpy as np, onnx
from onnx import helper, TensorProto
work, batch = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
import inputs  # noqa: E402 (large inputs travel as recipes)
rng = np.random.default_rng(0)
shapes = {"mlp": {"x": (batch, 64)}, "rescnn": {"x": (batch, 3, 32, 32)},
          "transformer": {"x": (batch, 16)}, "bert": {"x": (batch, 16)},
          "unet": {"x": (batch, 3, 32, 32)}, "vit": {"x": (batch, 3, 32, 32)},
          "vitrel": {"x": (batch, 3, 32, 32)}}
for name, inp in shapes.items():
    for k, shape in inp.items():
        v = (rng.integers(0, 100, shape) if name in ("transformer", "bert")
             else rng.standard_normal(shape).astype(np.float32))
        np.save(f"{work}/inputs/{name}.{k}.npy", v)
    np.save(f"{work}/inputs/{name}.labels.npy", rng.integers(0, 10, batch))
# ResNet-50 reads ResNet-18's images.
inputs.make(work, "resnet18.x.npy", 18, "normal", (batch, 3, 64, 64), np.float32)
np.save(f"{work}/inputs/resnet18.labels.npy", rng.integers(0, 10, batch))
# The decoders read tokens and predict the next ones (their targets).
for m in ("gpt", "llama"):
    for k in ("tokens", "targets"):
        np.save(f"{work}/inputs/{m}.{k}.npy", rng.integers(0, 128, (batch, 16)))
# One 4096x4096x4096 fp16 MatMul: the GEMM alone (cuBLASLt or mpc's kernel).
n = 4096
g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"], name="gemm")], "gemm",
    [helper.make_tensor_value_info(i, TensorProto.FLOAT16, [n, n]) for i in "ab"],
    [helper.make_tensor_value_info("c", TensorProto.FLOAT16, [n, n])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          f"{work}/models/gemm.onnx")
PY
: > "$work/manifest.txt"
: > "$work/train-manifest.txt"
: > "$work/rows-manifest.txt"
for m in $models; do
  x=x y=labels # the decoder's inputs: tokens and next tokens
  [[ $m == gpt || $m == llama ]] && x=tokens y=targets
  seed=() n=$steps # the ResNets: weights as seeds, fewer reference steps
  [[ $m == resnet* ]] && seed=(--weights seed:0) && n=$((steps < 5 ? steps : 5))
  [[ $m == vit* ]] && seed=(--weights seed:0) # 7 MiB an artifact otherwise
  for p in fp32 fp16 bf16; do
    # BERT in fp16 alone: what travels stays under the budget below.
    [[ $m == bert && $p == fp32 ]] && continue
    # bf16: train steps of issue 17's five models, against torch's bf16
    # autocast; on the libraries only (run.sh: kernels=auto).
    [[ $p == bf16 && ! $m =~ ^(mlp|bert|gpt|llama|resnet18|resnet50)$ ]] && continue
    # From fresh weights a ResNet's fp16 gradients overflow at 65536 for
    # the first steps (every one of 5 skipped): start lower, on both sides.
    ls=()
    [[ $m == resnet* && $p == fp16 ]] && ls=(--loss-scale dynamic:init=1024)
    art=$work/art/$m-$p
    d=$m # the batch's files: both ResNets read one (3 MiB less to carry)
    [[ $m == resnet50 ]] && d=resnet18
    ins="$x=inputs/$d.$x.npy $y=inputs/$d.$y.npy"
    if [[ $p != bf16 ]]; then
      mpc_compile "$work/models/$m.onnx" -o "$art" --precision $p --batch "$batch" --arch "$arch" "${seed[@]}" | tail -1
      (cd "$work" && "$mpc" run "art/$m-$p" --input $x=inputs/$d.$x.npy --input $y=inputs/$d.$y.npy --output-dir "expected/$m-$p" > /dev/null)
      echo "$m $p art/$m-$p $ins" >> "$work/manifest.txt"
    fi
    mpc_compile "$work/models/$m.onnx" -o "$art-train" --precision $p --batch "$batch" --arch "$arch" --train --optimizer sgd --lr 0.01 "${seed[@]}" "${ls[@]}" | tail -1
    (cd "$work" && "$mpc" train "models/$m.onnx" --data $x=inputs/$d.$x.npy --data $y=inputs/$d.$y.npy --batch "$batch" --steps "$n" --no-shuffle --optimizer sgd --lr 0.01 --precision $p "${seed[@]}" "${ls[@]}" --metrics "expected/$m-$p-train.jsonl" > /dev/null)
    echo "$m $p art/$m-$p-train $ins$([[ $n != "$steps" ]] && echo " steps=$n")$([[ $p == bf16 ]] && echo " kernels=auto")" >> "$work/train-manifest.txt"
    # The CNNs' fp16 step channels last (--layout nhwc), to decide the
    # default by measurement: the CPU backend's losses are NCHW's bit for
    # bit (channels-last.test), so the reference is shared.
    if [[ $p == fp16 && $m =~ ^(rescnn|resnet18|resnet50)$ ]]; then
      mpc_compile "$work/models/$m.onnx" -o "$art-nhwc-train" --layout nhwc --precision $p --batch "$batch" --arch "$arch" --train --optimizer sgd --lr 0.01 "${seed[@]}" "${ls[@]}" | tail -1
      cp "$work/expected/$m-$p-train.jsonl" "$work/expected/$m-$p-nhwc-train.jsonl"
      echo "$m $p-nhwc art/$m-$p-nhwc-train $ins$([[ $n != "$steps" ]] && echo " steps=$n")" >> "$work/train-manifest.txt"
    fi
  done
done
# The fp16 GPT step under --grad-accumulation 4: a row's time is a group
# of 4 micro-batches, whose first 3 skip the update (runtime/
# AppliedOnly.h), beside 4 x the plain gpt fp16 row; 3 groups.
if [[ " $models " == *" gpt "* ]]; then
  art=art/gpt-fp16-accum4-train
  mpc_compile "$work/models/gpt.onnx" -o "$work/$art" --precision fp16 --batch "$batch" --arch "$arch" --train --optimizer sgd --lr 0.01 --grad-accumulation 4 | tail -1
  (cd "$work" && "$mpc" train models/gpt.onnx --data tokens=inputs/gpt.tokens.npy --data targets=inputs/gpt.targets.npy --batch "$batch" --steps 3 --no-shuffle --optimizer sgd --lr 0.01 --precision fp16 --grad-accumulation 4 --metrics expected/gpt-fp16-accum4-train.jsonl > /dev/null)
  echo "gpt fp16-accum4 $art tokens=inputs/gpt.tokens.npy targets=inputs/gpt.targets.npy steps=3" >> "$work/train-manifest.txt"
fi
# The fp16 step as transformers are trained: AdamW (lr 1e-3, weight decay
# 0.01) after the gradients' global norm is clipped at 1 (torch_amp.py:
# fused AdamW after GradScaler's unscale_ and clip_grad_norm_), for the
# MLP and the GPT.
for m in mlp gpt; do
  [[ " $models " == *" $m "* ]] || continue
  x=x y=labels
  [[ $m == gpt ]] && x=tokens y=targets
  opts=(--precision fp16 --optimizer adamw --lr 0.001 --weight-decay 0.01 --clip-grad-norm 1)
  mpc_compile "$work/models/$m.onnx" -o "$work/art/$m-fp16-adamw-clip-train" --batch "$batch" --arch "$arch" --train "${opts[@]}" | tail -1
  (cd "$work" && "$mpc" train "models/$m.onnx" --data $x=inputs/$m.$x.npy --data $y=inputs/$m.$y.npy --batch "$batch" --steps "$steps" --no-shuffle "${opts[@]}" --metrics "expected/$m-fp16-adamw-clip-train.jsonl" > /dev/null)
  echo "$m fp16-adamw-clip art/$m-fp16-adamw-clip-train $x=inputs/$m.$x.npy $y=inputs/$m.$y.npy" >> "$work/train-manifest.txt"
done
# The fp16 MLP step as one rank of a data-parallel job (run.sh runs it
# with WORLD_SIZE=1: its gradient bucket goes through NCCL on its own
# stream, and its losses must be the single process's).
if [[ " $models " == *" mlp "* ]]; then
  mpc_compile "$work/models/mlp.onnx" -o "$work/art/mlp-fp16-dp-train" --precision fp16 --batch "$batch" --arch "$arch" --train --optimizer sgd --lr 0.01 --data-parallel | tail -1
fi
# Causal attention alone (2 x ATTN_HEADS (default 12) heads x ATTN_SEQ
# (default 1024) x 64, fp16; bench-gpu.test runs 1 x 32 under emulation), written as exports write it; mpc-fuse-attention makes it one
# mpc.attention kernel. Its output is named logits so run.sh's table reads
# its difference.
seq=${ATTN_SEQ:-1024} heads=${ATTN_HEADS:-12}
# VARIANTS=0 leaves out the short attention's alternative forms (other dQ
# forms, 64-row blocks, sm_89 builds, dropout, bf16 at head size 128), so
# that the attention alone (MODELS=none GEMM=0 GAN=0 ROWS=0) travels: 33
# MiB against 79.
variants=${VARIANTS:-1}
some() { [[ $variants != 0 ]] && echo "$@"; true; }
echo "$seq" > "$work/attention-seq.txt"
echo "$heads" > "$work/attention-heads.txt"
if [[ ${ATTENTION:-1} != 0 ]]; then
python3 - "$work" "$root/bench/gpu" "$seq" "$heads" <<'PY'
import sys
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
work = sys.argv[1]
B, H, S, D = 2, int(sys.argv[4]), int(sys.argv[3]), 64
shape = [B, H, S, D]
mk = helper.make_node
nodes = [mk("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
         mk("MatMul", ["q", "kt"], ["s"]),
         mk("Mul", ["s", "scale"], ["ss"]),
         mk("Where", ["upper", "ninf", "ss"], ["m"]),
         mk("Softmax", ["m"], ["p"], axis=-1),
         mk("MatMul", ["p", "v"], ["logits"])]
inits = [numpy_helper.from_array(np.array(D ** -0.5, np.float16), "scale"),
         numpy_helper.from_array(np.triu(np.ones((S, S), bool), 1), "upper"),
         numpy_helper.from_array(np.array(-np.inf, np.float16), "ninf")]
g = helper.make_graph(nodes, "attention",
    [helper.make_tensor_value_info(n, TensorProto.FLOAT16, shape) for n in "qkv"],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT16, shape)], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          f"{work}/models/attention.onnx")
sys.path.insert(0, sys.argv[2])
import inputs  # noqa: E402 (large inputs travel as recipes)
for seed, n in enumerate("qkv"):
    inputs.make(work, f"attention.{n}.npy", seed, "normal", shape, np.float16)
PY
mpc_compile "$work/models/attention.onnx" -o "$work/art/attention-fp16" --arch "$arch" | tail -1
(cd "$work" && "$mpc" run art/attention-fp16 --input q=inputs/attention.q.npy --input k=inputs/attention.k.npy --input v=inputs/attention.v.npy --output-dir expected/attention-fp16 > /dev/null)
echo "attention fp16 art/attention-fp16 q=inputs/attention.q.npy k=inputs/attention.k.npy v=inputs/attention.v.npy" >> "$work/manifest.txt"
# The same attention trained (forward and backward kernels): q, k and v
# are the model's initializers (19 MiB: they travel as seeds, drawn the
# same on both sides), the loss sum(y * target); 3 steps (the CPU
# backend's reference takes seconds a step at this size). As ONNX
# Attention, and as a training-mode export writes attention with dropout
# (Softmax -> Dropout(0.1) -> MatMul, fused with its mask redrawn in the
# backward): beside SDPA with dropout_p=0.1 in run.sh's table.
python3 - "$work" "$root/bench/gpu" "$seq" "$heads" <<'PY'
import sys
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
work = sys.argv[1]
S, H = int(sys.argv[3]), int(sys.argv[4])
shape = [2, H, S, 64]
rng = np.random.default_rng(1)
inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), n) for n in "qkv"]
mk = helper.make_node
loss = [mk("Mul", ["y", "target"], ["yt"]), mk("ReduceSum", ["yt"], ["loss"], keepdims=0)]
dropout = [mk("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
           mk("MatMul", ["q", "kt"], ["s"]),
           mk("Mul", ["s", "scale"], ["ss"]),
           mk("Where", ["upper", "ninf", "ss"], ["m"]),
           mk("Softmax", ["m"], ["p"], axis=-1),
           mk("Dropout", ["p", "ratio", "training"], ["pd"]),
           mk("MatMul", ["pd", "v"], ["y"])]
consts = [numpy_helper.from_array(np.array(64 ** -0.5, np.float32), "scale"),
          numpy_helper.from_array(np.triu(np.ones((S, S), bool), 1), "upper"),
          numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf"),
          numpy_helper.from_array(np.array(0.1, np.float32), "ratio"),
          numpy_helper.from_array(np.array(True), "training")]
for name, nodes, extra, opset in (
        ("attention_train", [mk("Attention", ["q", "k", "v"], ["y"], is_causal=1)], [], 23),
        ("attention_dropout_train", dropout, consts, 17)):
    g = helper.make_graph(nodes + loss, name,
        [helper.make_tensor_value_info("target", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits + extra)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]),
              f"{work}/models/{name}.onnx")
# Head size 128 (issue 14's target names 64 and 128), 40 (Stable
# Diffusion's; the mma kernels compute it on 48) and 256 (Gemma's): ONNX
# Attention.
for D in (128, 40, 256):
    g = helper.make_graph([mk("Attention", ["q", "k", "v"], ["y"], is_causal=1)] + loss,
        f"attention_d{D}_train",
        [helper.make_tensor_value_info("target", TensorProto.FLOAT, [2, H, S, D])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(rng.standard_normal([2, H, S, D]).astype(np.float32), n)
         for n in "qkv"])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]),
              f"{work}/models/attention_d{D}_train.onnx")
# Grouped-query heads (Llama 3's group of 4: 4 q heads a K and V head),
# head size 64: K and V read unrepeated.
KV = max(1, H // 4)
g = helper.make_graph([mk("Attention", ["q", "k", "v"], ["y"], is_causal=1)] + loss,
    "attention_gqa_train",
    [helper.make_tensor_value_info("target", TensorProto.FLOAT, [2, 4 * KV, S, 64])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    [numpy_helper.from_array(rng.standard_normal([2, heads, S, 64]).astype(np.float32), n)
     for n, heads in (("q", 4 * KV), ("k", KV), ("v", KV))])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]),
          f"{work}/models/attention_gqa_train.onnx")
sys.path.insert(0, sys.argv[2])
import inputs  # noqa: E402 (large inputs travel as recipes)
inputs.make(work, "attention_train.target.npy", 4, "normal:0.001", shape,
            np.float32)
inputs.make(work, "attention_gqa_train.target.npy", 8, "normal:0.001",
            [2, 4 * KV, S, 64], np.float32)
inputs.make(work, "attention_d128_train.target.npy", 5, "normal:0.001",
            [2, H, S, 128], np.float32)
inputs.make(work, "attention_d40_train.target.npy", 6, "normal:0.001",
            [2, H, S, 40], np.float32)
inputs.make(work, "attention_d256_train.target.npy", 7, "normal:0.001",
            [2, H, S, 256], np.float32)
PY
# (kernels=auto: no GEMM or convolution, so `--gemm mpc` would run the
# same kernels again.)
for m in attention $(some attention_dropout); do
  art=art/${m//_/-}-fp16-train
  mpc_compile "$work/models/${m}_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 | tail -1
  (cd "$work" && "$mpc" train "models/${m}_train.onnx" --data target=inputs/attention_train.target.npy --batch 2 --steps 3 --no-shuffle --optimizer sgd --lr 0.01 --precision fp16 --loss-scale static:256 --weights seed:0 --metrics "expected/$m-fp16-train.jsonl" > /dev/null)
  echo "$m fp16 $art steps=3 kernels=auto target=inputs/attention_train.target.npy" >> "$work/train-manifest.txt"
done
# The backward's other dQ (--attention-dq accumulate: the key blocks'
# partial sums) beside auto's choice at this size (at 1024 tokens and 12
# heads, query blocks that recompute the scores): run.sh times both; the
# same CPU losses check each.
if [[ $variants != 0 ]]; then
art=art/attention-fp16-train-accumulate
mpc_compile "$work/models/attention_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 --attention-dq accumulate | tail -1
cp "$work/expected/attention-fp16-train.jsonl" "$work/expected/attention_accumulate-fp16-train.jsonl"
echo "attention_accumulate fp16 $art steps=3 kernels=auto target=inputs/attention_train.target.npy" >> "$work/train-manifest.txt"
fi
# dQ by atomic adds into one FP32 dQ (--attention-dq atomic, as
# FlashAttention-2's default): five products a tile, no partial sums;
# with dropout too, where only the key blocks draw the mask (the
# recomputing query blocks draw it again).
for m in attention $(some attention_dropout); do
  art=art/${m//_/-}-fp16-train-atomic
  mpc_compile "$work/models/${m}_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 --attention-dq atomic | tail -1
  cp "$work/expected/$m-fp16-train.jsonl" "$work/expected/${m}_atomic-fp16-train.jsonl"
  echo "${m}_atomic fp16 $art steps=3 kernels=auto target=inputs/attention_train.target.npy" >> "$work/train-manifest.txt"
done
# Blocks of 64 rows (--attention-rows 64: 16 a warp, twice the blocks,
# each with half the work) beside the default 128: at 1024 tokens and 12
# heads the 128-row forward has 192 blocks for an H200's 264 slots, and
# the step waits on its longest block (bench/attention_schedule.py).
if [[ $variants != 0 ]]; then
art=art/attention-fp16-train-rows64
mpc_compile "$work/models/attention_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 --attention-rows 64 | tail -1
cp "$work/expected/attention-fp16-train.jsonl" "$work/expected/attention_rows64-fp16-train.jsonl"
echo "attention_rows64 fp16 $art steps=3 kernels=auto target=inputs/attention_train.target.npy" >> "$work/train-manifest.txt"
fi
# Head size 128 in fp16 and bf16 and head size 64 in bf16, beside SDPA at
# the same shapes (issue 14's target: head sizes 64 and 128, fp16 and
# bf16).
specs=("attention_d128 fp16 attention_d128_train --loss-scale static:256")
[[ $variants != 0 ]] && specs+=("attention_d128 bf16 attention_d128_train")
specs+=("attention bf16 attention_train")
for spec in "${specs[@]}"; do
  read -r m prec model scale <<< "$spec"
  art=art/${m//_/-}-$prec-train
  mpc_compile "$work/models/$model.onnx" -o "$work/$art" --train --precision "$prec" --optimizer sgd --lr 0.01 $scale --batch 2 --arch "$arch" --weights seed:0 | tail -1
  (cd "$work" && "$mpc" train "models/$model.onnx" --data "target=inputs/$model.target.npy" --batch 2 --steps 3 --no-shuffle --optimizer sgd --lr 0.01 --precision "$prec" $scale --weights seed:0 --metrics "expected/$m-$prec-train.jsonl" > /dev/null)
  echo "$m $prec $art steps=3 kernels=auto target=inputs/$model.target.npy" >> "$work/train-manifest.txt"
done
if [[ $variants != 0 ]]; then
# Head size 128 as mpc builds it where an SM has 100 KiB (compiled for
# sm_89 too; the GPU runs the code of its own architecture): the forward's
# 16 query rows a warp holding Q in registers, the backward's dK and dV in
# blocks of their own (K and V fragments in registers). run.sh times it
# beside the default (32 rows a warp reading Q from shared memory; dK and
# dV in one block reading K and V from shared memory).
art=art/attention-d128-fp16-train-sm89
mpc_compile "$work/models/attention_d128_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "sm_89,$arch" --weights seed:0 | tail -1
cp "$work/expected/attention_d128-fp16-train.jsonl" "$work/expected/attention_d128_sm89-fp16-train.jsonl"
echo "attention_d128_sm89 fp16 $art steps=3 kernels=auto target=inputs/attention_d128_train.target.npy" >> "$work/train-manifest.txt"
# And in blocks of 64 rows (--attention-rows 64: the forward's 64-query
# blocks, 16 rows a warp, Q in registers, 64-key tiles), where the
# scheduler model gives the short grid's forward the most
# (bench/attention_schedule.py).
art=art/attention-d128-fp16-train-rows64
mpc_compile "$work/models/attention_d128_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 --attention-rows 64 | tail -1
cp "$work/expected/attention_d128-fp16-train.jsonl" "$work/expected/attention_d128_rows64-fp16-train.jsonl"
echo "attention_d128_rows64 fp16 $art steps=3 kernels=auto target=inputs/attention_d128_train.target.npy" >> "$work/train-manifest.txt"
# And with dQ added atomically, and recomputed.
for dq in atomic recompute; do
  art=art/attention-d128-fp16-train-$dq
  mpc_compile "$work/models/attention_d128_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 --attention-dq $dq | tail -1
  cp "$work/expected/attention_d128-fp16-train.jsonl" "$work/expected/attention_d128_$dq-fp16-train.jsonl"
  echo "attention_d128_$dq fp16 $art steps=3 kernels=auto target=inputs/attention_d128_train.target.npy" >> "$work/train-manifest.txt"
done
fi
# Head size 40 (Stable Diffusion's), which FlashAttention-2 computes on 64
# and mpc on 48 (a multiple of 8, not 16: zero past each row).
art=art/attention-d40-fp16-train
mpc_compile "$work/models/attention_d40_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 | tail -1
(cd "$work" && "$mpc" train models/attention_d40_train.onnx --data target=inputs/attention_d40_train.target.npy --batch 2 --steps 3 --no-shuffle --optimizer sgd --lr 0.01 --precision fp16 --loss-scale static:256 --weights seed:0 --metrics expected/attention_d40-fp16-train.jsonl > /dev/null)
echo "attention_d40 fp16 $art steps=3 kernels=auto target=inputs/attention_d40_train.target.npy" >> "$work/train-manifest.txt"
# Grouped-query heads (4 q heads a K and V head), head size 64.
art=art/attention-gqa-fp16-train
mpc_compile "$work/models/attention_gqa_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 | tail -1
(cd "$work" && "$mpc" train models/attention_gqa_train.onnx --data target=inputs/attention_gqa_train.target.npy --batch 2 --steps 3 --no-shuffle --optimizer sgd --lr 0.01 --precision fp16 --loss-scale static:256 --weights seed:0 --metrics expected/attention_gqa-fp16-train.jsonl > /dev/null)
echo "attention_gqa fp16 $art steps=3 kernels=auto target=inputs/attention_gqa_train.target.npy" >> "$work/train-manifest.txt"
# Head size 256 (Gemma's): past 128 the forward reads Q from a shared
# tile a warp at a time and the backward computes dK and dV in blocks of
# their own (a block an SM).
art=art/attention-d256-fp16-train
mpc_compile "$work/models/attention_d256_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 | tail -1
(cd "$work" && "$mpc" train models/attention_d256_train.onnx --data target=inputs/attention_d256_train.target.npy --batch 2 --steps 3 --no-shuffle --optimizer sgd --lr 0.01 --precision fp16 --loss-scale static:256 --weights seed:0 --metrics expected/attention_d256-fp16-train.jsonl > /dev/null)
echo "attention_d256 fp16 $art steps=3 kernels=auto target=inputs/attention_d256_train.target.npy" >> "$work/train-manifest.txt"
# And as built for sm_89 too (SMs of 100 KiB): the backward's compact
# tiles (16 queries, 16 keys, lse and D in registers; 99 KiB a block)
# beside the default's 32-row tiles (135 KiB).
if [[ $variants != 0 ]]; then
art=art/attention-d256-fp16-train-sm89
mpc_compile "$work/models/attention_d256_train.onnx" -o "$work/$art" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "sm_89,$arch" --weights seed:0 | tail -1
cp "$work/expected/attention_d256-fp16-train.jsonl" "$work/expected/attention_d256_sm89-fp16-train.jsonl"
echo "attention_d256_sm89 fp16 $art steps=3 kernels=auto target=inputs/attention_d256_train.target.npy" >> "$work/train-manifest.txt"
fi
fi
# Causal attention at ATTN_LONG tokens (default 4096; 0: none), the top of
# issue 14's 1k-4k range, where the CPU backend would take minutes a step:
# run.sh checks the forward (ONNX Attention, inputs q, k and v drawn from
# recipes) against attention computed there by torch in float64 and times
# the train steps of head sizes 64 and 128 (q, k and v initializers as
# seeds of std 1, the loss sum(y * target)) with their losses printed, on the
# kernels the steps above check against the CPU backend. The models are
# built outside the work folder (their initializers would not travel).
long=${ATTN_LONG:-4096}
echo "$long" > "$work/attention-long.txt"
if [[ ${ATTENTION:-1} != 0 && $long != 0 ]]; then
  models_long=$(mktemp -d)
  python3 - "$work" "$root/bench/gpu" "$long" "$heads" "$models_long" <<'PY'
import sys
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
work, S, H, out = sys.argv[1], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
sys.path.insert(0, sys.argv[2])
import inputs  # noqa: E402 (large inputs travel as recipes)
mk = helper.make_node
shape = [2, H, S, 64]
g = helper.make_graph([mk("Attention", ["q", "k", "v"], ["logits"], is_causal=1)],
    "attention_long",
    [helper.make_tensor_value_info(n, TensorProto.FLOAT16, shape) for n in "qkv"],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT16, shape)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]),
          f"{out}/attention_long.onnx")
for seed, n in enumerate("qkv"):
    inputs.make(work, f"attention_long.{n}.npy", 20 + seed, "normal", shape, np.float16)
for D in (64, 128):
    shape = [2, H, S, D]
    loss = [mk("Mul", ["y", "target"], ["yt"]),
            mk("ReduceSum", ["yt"], ["loss"], keepdims=0)]
    g = helper.make_graph([mk("Attention", ["q", "k", "v"], ["y"], is_causal=1)] + loss,
        f"attention_long_d{D}_train",
        [helper.make_tensor_value_info("target", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        # +-1: the mean and std --weights seed:0 draws with (no bytes travel)
        [numpy_helper.from_array(np.resize(np.float32([1, -1]), shape), n)
         for n in "qkv"])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]),
              f"{out}/attention_long_d{D}_train.onnx")
    inputs.make(work, f"attention_long_d{D}.target.npy", 30 + D, "normal:0.001",
                shape, np.float32)
PY
  mpc_compile "$models_long/attention_long.onnx" -o "$work/art/attention-long-fp16" --arch "$arch" | tail -1
  # Each head size with dQ as auto picks it (partial sums at 4096
  # tokens), recomputed and added atomically; d64 also in blocks of 64
  # rows (--attention-rows 64).
  for spec in "64 auto 128" "64 recompute 128" "64 atomic 128" "64 auto 64" \
              "128 auto 128" "128 recompute 128" "128 atomic 128"; do
    read -r d dq rows <<< "$spec"
    suffix=; [[ $dq != auto ]] && suffix=-$dq
    [[ $rows == 64 ]] && suffix=-rows64
    mpc_compile "$models_long/attention_long_d${d}_train.onnx" -o "$work/art/attention-long-d$d-fp16-train$suffix" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$arch" --weights seed:0 --attention-dq "$dq" --attention-rows "$rows" | tail -1
  done
  # Head size 128 as the default targets build it (sm_80 too): the
  # backward's P^T and dS^T share one buffer (two barriers more a tile).
  both=sm_80; [[ $arch != sm_80 ]] && both="sm_80,$arch"
  mpc_compile "$models_long/attention_long_d128_train.onnx" -o "$work/art/attention-long-d128-fp16-train-sm80" --train --precision fp16 --optimizer sgd --lr 0.01 --loss-scale static:256 --batch 2 --arch "$both" --weights seed:0 | tail -1
  # And both head sizes in bf16 (issue 14's range: fp16 and bf16).
  for d in 64 128; do
    mpc_compile "$models_long/attention_long_d${d}_train.onnx" -o "$work/art/attention-long-d$d-bf16-train" --train --precision bf16 --optimizer sgd --lr 0.01 --batch 2 --arch "$arch" --weights seed:0 | tail -1
  done
  rm -rf "$models_long"
fi
# Softmax and layer norm over ROWS rows of 8192 fp16 (default 8192: 128
# MiB, drawn again on the GPU machine from its recipe), each one row
# kernel; run.sh checks them against NumPy there and sets their bandwidth
# beside torch's ops and a device-to-device copy of the same tensor.
rows=${ROWS:-8192}
if [[ $rows != 0 ]]; then
python3 - "$work" "$root/bench/gpu" "$rows" <<'PY'
import sys
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
work, rows, cols = sys.argv[1], int(sys.argv[3]), 8192
sys.path.insert(0, sys.argv[2])
import inputs  # noqa: E402 (large inputs travel as recipes)
rng = np.random.default_rng(5)
g = (1 + 0.1 * rng.standard_normal(cols)).astype(np.float16)
b = (0.1 * rng.standard_normal(cols)).astype(np.float16)
np.save(f"{work}/inputs/rows.g.npy", g)
np.save(f"{work}/inputs/rows.b.npy", b)
io = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT16, [rows, cols])
for name, node, inits in (
        ("softmax", helper.make_node("Softmax", ["x"], ["y"], axis=-1), []),
        ("layernorm", helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"],
                                       axis=-1, epsilon=1e-5),
         [numpy_helper.from_array(g, "g"), numpy_helper.from_array(b, "b")])):
    graph = helper.make_graph([node], name, [io("x")], [io("y")], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              f"{work}/models/{name}.onnx")
inputs.make(work, "rows.x.npy", 7, "normal", (rows, cols), np.float16)
PY
for op in softmax layernorm; do
  mpc_compile "$work/models/$op.onnx" -o "$work/art/$op-fp16" --arch "$arch" | tail -1
  echo "$op art/$op-fp16 x=inputs/rows.x.npy" >> "$work/rows-manifest.txt"
done
fi
# The digits DCGAN as a phased fp16 step (discriminator, then generator,
# each with DCGAN's Adam): `mpc compile --train --phase`, one artifact per
# phase, which mpc-gpu-run runs in order; references from `mpc train
# --phase` on the same batch.
if [[ ${GAN:-1} != 0 ]]; then
  /usr/bin/python3 "$root/scripts/dcgan_digits.py" "$mpc" "$work/models/gan" --export-only --seeds 0 > /dev/null
  gbatch=32 # the export's batch
  python3 - "$work" "$gbatch" <<'PY'
import sys
import numpy as np
work, batch = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(9)
# "Real" 8x8 images in [0, 1]: the step's cost and numerics, not a GAN's
# quality (that is scripts/dcgan_digits.py).
np.save(f"{work}/inputs/dcgan.x.npy", rng.random((batch, 64)).astype(np.float32))
np.save(f"{work}/inputs/dcgan.z.npy", rng.standard_normal((batch, 16)).astype(np.float32))
PY
  gan=(--optimizer adam --adam-betas 0.5,0.999 --lr 0.002 --precision fp16 --phase 'loss=d_loss,params=D\..*' --phase 'loss=g_loss,params=G\..*')
  mpc_compile "$work/models/gan/seed0/dcgan.onnx" -o "$work/art/dcgan-fp16-train" --train --batch "$gbatch" --arch "$arch" "${gan[@]}" | tail -1
  (cd "$work" && "$mpc" train models/gan/seed0/dcgan.onnx --data x=inputs/dcgan.x.npy --data z=inputs/dcgan.z.npy --batch "$gbatch" --steps "$steps" --no-shuffle "${gan[@]}" --metrics expected/dcgan-fp16-train.jsonl > /dev/null)
  echo "dcgan fp16 art/dcgan-fp16-train x=inputs/dcgan.x.npy z=inputs/dcgan.z.npy" >> "$work/train-manifest.txt"
  rm -rf "$work/models/gan"
fi
echo "$steps" > "$work/steps.txt"
# The runtime-only build on the GPU machine (no MLIR, so no tblgen) takes
# the op list this build generated from the ODS.
cp "$(dirname "$mpc")/../ir/MpcOpList.h.inc" "$work/MpcOpList.h.inc"
[[ ${GEMM:-1} == 0 ]] || mpc_compile "$work/models/gemm.onnx" -o "$work/art/gemm-fp16" --arch "$arch" | tail -1
# The same with mpc's GEMM kernel on two stages, as sized where an SM has
# 100 KiB (sm_89 too; the GPU runs its own code): run.sh times both.
[[ ${GEMM:-1} == 0 ]] || mpc_compile "$work/models/gemm.onnx" -o "$work/art/gemm-fp16-2stages" --arch "sm_89,$arch" | tail -1
# run.sh reads artifacts and inputs alone, not the models (the attention
# model is 18 MiB of initializers, ResNet-50's 94 MiB); inputs of a MiB or
# more travel as recipes (bench/gpu/inputs.py restore draws them there).
rm -rf "$work/models"
python3 "$root/bench/gpu/inputs.py" shrink "$work" "${SHRINK_BYTES:-1048576}"
echo "prepared $(du -sh "$work" | cut -f1) in $work"
# What a lent GPU machine takes along with the checkout (the device
# tool's carry): 64 MiB in all.
mib=$(du -sm "$work" | cut -f1)
(( mib <= 60 )) || { echo "prepare.sh: $work is $mib MiB; a GPU machine takes at most 64 MiB with the code"; exit 1; }
