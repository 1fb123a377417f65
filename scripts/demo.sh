#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds, then
# on examples/mlp.onnx (an MLP 64-128-64-10 with its cross-entropy loss,
# exported by torch):
#   1. imports it and prints its mpc IR (symbolic batch, then batch 64);
#   2. runs it on the CPU backend on a batch of the 8x8 digits set;
#   3. trains it in FP32 (SGD, 200 steps) and checks the loss curve step by
#      step against PyTorch, then reports test accuracy of the trained model;
#   4. trains it again in fp16 (dynamic loss scaling) and bf16, loss curves
#      side by side with FP32, with test accuracy and step health, and as
#      transformer recipes train (AdamW, cosine schedule with warmup,
#      gradients clipped after the unscale);
#   5. explains the precision chosen for every node (mpc explain);
#   6. compiles the fp16 CUDA artifact (plan, weights, kernels.cu, fatbin
#      for sm_80/sm_90), shows a tensor-core GEMM kernel, checks its SASS
#      for HMMA (mpc doctor) and runs the artifact on the CPU backend;
#   7. compiles the whole fp16 train step (forward, backward, loss scaling,
#      Adam on FP32 masters) to CUDA and shows a fused kernel: Adam's
#      update of one weight, seven steps in one kernel;
#   8. transformers: an opset-23 block (RMSNormalization, RotaryEmbedding,
#      grouped-query causal Attention) checked against onnxruntime and
#      finite differences and trained in fp32/fp16/bf16, then the memory
#      plan of a 4k-token GPT-2 train step with attention fused and not;
#   9. GANs: BCE-with-logits as torch exports it, with logits of +-20,
#      finite in fp16 and bf16 (mpc-stable-logs), in mpc and in the ONNX
#      mpc convert writes; a tiny torch-exported GAN trained in phases
#      (discriminator, then generator) in fp16, against torch's loop, and
#      a DCGAN on the digits with its Frechet-distance score; step
#      4's fp16 run is logged for TensorBoard;
#  10. data parallelism: SGD on the digits as 2 ranks x 32 rows (mpc launch,
#      gloo) against one process with 64 rows: the same loss curve,
#      bit-identical weights on both ranks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ -n ${MPC_DEMO_NO_BUILD:-} ]] || bash "$root/scripts/build.sh" >/dev/null
mpc=${MPC_BUILD_DIR:-$root/build}/bin/mpc
py=${PYTHON:-python3} # the one scripts/setup.sh installed onnx and numpy for
model=$root/examples/mlp.onnx
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== 1. mpc import $model  (symbolic batch; weights elided)"
"$mpc" import "$model"
echo
echo "== mpc import --batch 64 --require-static (every type static)"
"$mpc" import "$model" --batch 64 --require-static --elide-weights 8 | grep -E "func.func|mpc\.(gemm|relu|softmax)" | cut -c1-150

echo
echo "== 2. mpc run on 64 digits (CPU reference backend)"
"$py" "$root/scripts/digits_data.py" "$work" >/dev/null
"$py" -c "import numpy as n; d='$work'; n.save(d+'/x64.npy', n.load(d+'/digits_test_x.npy')[:64]); n.save(d+'/y64.npy', n.load(d+'/digits_test_y.npy')[:64])"
"$mpc" run "$model" --input x="$work/x64.npy" --input labels="$work/y64.npy"

echo
echo "== 3. mpc train: FP32, SGD lr 0.1, batch 64, 200 steps, file order"
"$mpc" train "$model" --data x="$work/digits_train_x.npy" \
  --data labels="$work/digits_train_y.npy" --steps 200 --batch 64 \
  --optimizer sgd --lr 0.1 --no-shuffle --metrics "$work/mpc.jsonl" \
  -o "$work/trained.onnx"
/usr/bin/python3 "$root/scripts/torch_reference_train.py" "$model" \
  "$work/digits_train_x.npy" "$work/digits_train_y.npy" --steps 200 \
  --batch 64 --lr 0.1 > "$work/torch.jsonl" 2>/dev/null
echo
echo "loss curve, mpc vs PyTorch (every 20 steps):"
"$py" - "$work" <<'PY'
import json, sys
d = sys.argv[1]
m = [json.loads(l)["loss"] for l in open(d + "/mpc.jsonl")]
t = [json.loads(l)["loss"] for l in open(d + "/torch.jsonl")]
print(f"{'step':>6} {'mpc fp32':>12} {'pytorch':>12}")
for i in list(range(0, len(m), 20)) + [len(m) - 1]:
    print(f"{i + 1:>6} {m[i]:>12.6f} {t[i]:>12.6f}")
print(f"max relative difference over {len(m)} steps: "
      f"{max(abs(a - b) / abs(b) for a, b in zip(m, t)):.2e}")
PY
"$py" "$root/test/models/Inputs/compare_losses.py" "$work/mpc.jsonl" \
  "$work/torch.jsonl" --model "$work/trained.onnx" \
  --x "$work/digits_test_x.npy" --y "$work/digits_test_y.npy" | tail -1

echo
echo "== 4. mixed precision: the same run in fp16 (dynamic loss scaling) and bf16"
for p in fp16 bf16; do
  "$mpc" train "$model" --data x="$work/digits_train_x.npy" \
    --data labels="$work/digits_train_y.npy" --steps 200 --batch 64 \
    --optimizer sgd --lr 0.1 --no-shuffle --precision $p \
    --metrics "$work/$p.jsonl" -o "$work/trained-$p.onnx" \
    --tensorboard "$work/runs/$p" | grep -E "^precision|^tensorboard"
done
"$py" - "$work" <<'PY'
import json, sys
import numpy as np, onnxruntime as ort
d = sys.argv[1]
runs = {p: [json.loads(l) for l in open(f"{d}/{p}.jsonl")]
        for p in ("mpc", "fp16", "bf16")}
print(f"{'step':>6} {'fp32':>10} {'fp16':>10} {'bf16':>10} {'fp16 scale':>11}")
n = len(runs["mpc"])
for i in list(range(0, n, 20)) + [n - 1]:
    print(f"{i + 1:>6} {runs['mpc'][i]['loss']:>10.5f} "
          f"{runs['fp16'][i]['loss']:>10.5f} {runs['bf16'][i]['loss']:>10.5f} "
          f"{runs['fp16'][i]['loss_scale']:>11g}")
x, y = np.load(d + "/digits_test_x.npy"), np.load(d + "/digits_test_y.npy")
for p, f in (("fp32", "trained"), ("fp16", "trained-fp16"), ("bf16", "trained-bf16")):
    s = ort.InferenceSession(f"{d}/{f}.onnx", providers=["CPUExecutionProvider"])
    acc = (s.run(["logits"], {"x": x, "labels": y})[0].argmax(1) == y).mean()
    print(f"test accuracy {p}: {acc:.4f}")
PY

echo "-- fp16 as transformer recipes train: AdamW (no decay on the biases),"
echo "   cosine schedule with warmup, the gradients' norm clipped to 1 after"
echo "   the unscale (clip_grad_norm_), each batch of 64 as 4 accumulated"
echo "   micro-batches of 16 (the update once a group), the held-out loss and"
echo "   accuracy every 50 steps, of the model and of its weights' moving"
echo "   average (timm's model EMA)"
"$mpc" train "$model" --data x="$work/digits_train_x.npy" \
  --data labels="$work/digits_train_y.npy" --steps 200 --batch 16 \
  --grad-accumulation 4 --eval-every 50 --eval-data x="$work/digits_test_x.npy" \
  --eval-data labels="$work/digits_test_y.npy" --eval-accuracy --ema 0.98 \
  --optimizer adamw --lr 0.003 --weight-decay 0.01 --no-weight-decay '.*bias' \
  --no-shuffle --precision fp16 --lr-schedule cosine,warmup=20 --clip-grad-norm 1.0 \
  --metrics "$work/recipe.jsonl" | grep -E "^precision"
"$py" - "$work/recipe.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
for i in (0, 9, 19, 49, 99, 149, 199):
    held = (f"  held-out {r[i]['eval_loss']:.5f}, accuracy "
            f"{r[i]['eval_accuracy']:.4f} (average {r[i]['eval_loss_ema']:.5f}, "
            f"{r[i]['eval_accuracy_ema']:.4f})" if "eval_loss" in r[i] else "")
    print(f"  step {r[i]['step']:>3}: lr {r[i]['lr']:.6f}  grad norm "
          f"{r[i]['grad_norm']:.4f}  loss {r[i]['loss']:.5f}{held}")
PY

echo
echo "== 5. mpc explain --precision fp16 (why each node got its precision)"
"$mpc" explain "$model" --precision fp16

echo
echo "== 6. mpc compile --precision fp16: the CUDA artifact"
"$mpc" compile "$model" -o "$work/mlp-cuda" --precision fp16 --batch 64 --arch sm_80,sm_90
ls -l "$work/mlp-cuda" | awk 'NR > 1 {print "  " $5 "\t" $9}'
echo "-- one tensor-core GEMM kernel of kernels.cu (bias and Relu in its epilogue):"
gemm=$(grep -o "^struct gemm_[0-9a-f]*_ctx" "$work/mlp-cuda/kernels.cu" | head -1 | cut -d' ' -f2)
grep -A5 "^struct $gemm" "$work/mlp-cuda/kernels.cu" | cut -c1-160
grep "tc_gemm_mma<__half, 64, 64, false, true, 4, 40960>(64, 128, 64" "$work/mlp-cuda/kernels.cu"
# cuobjdump and nvdisasm come from PyPI wheels (scripts/setup.sh).
wheel_bin=$("$py" -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin'))" 2>/dev/null || true)
echo "-- mpc doctor: GPU, toolkit, and tensor-core instructions in the SASS"
PATH="$PATH:$wheel_bin" "$mpc" doctor "$work/mlp-cuda" || true
echo "-- the artifact on the CPU backend (the GPU runs it with --device cuda):"
"$mpc" run "$work/mlp-cuda" --input x="$work/x64.npy" --input labels="$work/y64.npy"

echo
echo "== 7. mpc compile --train: the whole fp16 train step as CUDA kernels"
"$mpc" compile "$model" -o "$work/mlp-train" --precision fp16 --batch 64 --arch sm_80 --train --optimizer adam --lr 0.01
echo "-- fused elementwise chains (chain<steps>_<last op>_<hash of what it computes>):"
grep "__global__" "$work/mlp-train/kernels.cu" | grep -o "chain[0-9]*_[a-z_]*_[0-9a-f]*" | tr '\n' ' '; echo
echo "-- Adam's update of a weight in one kernel: its fp16 gradient unscaled as it loads, both moments, the skip-step selects, the weight and its fp16 copy for the next step (intermediates in registers, four stores); all six weights' updates are one multi-tensor launch (_x6):"
kernel=$(grep "__global__" "$work/mlp-train/kernels.cu" | grep -o "chain[0-9]*_cast_[0-9a-f]*_x[0-9]*" | tail -1)
echo "$kernel"
sed -n "/void ${kernel}_op(/,/^}/p" "$work/mlp-train/kernels.cu" | grep -E "^  (float t|\{ float|y[0-9]+ = )" | cut -c1-150
echo "-- on a GPU: mpc train $model --device cuda ... (weights stay on the device, one CUDA graph per step)"

echo
echo "== 8. transformers: opset-23 Attention, RMSNormalization, RotaryEmbedding; fused attention"
"$py" "$root/test/models/Inputs/opset23_block.py" "$mpc" "$work"
echo "-- a GPT-2 block at 4096 tokens, fp16 train step: attention fused (mpc.attention) and not"
/usr/bin/python3 "$root/test/codegen/Inputs/attention_memory.py" "$mpc" "$work"

echo
echo "== 9. GANs: BCE-with-logits and cross-entropy with logits of +-20; training in phases"
"$py" "$root/test/models/Inputs/stable_losses.py" "$mpc" "$work"
echo "-- a tiny GAN trained in phases (discriminator, then generator), fp16, vs torch's fp32 loop"
/usr/bin/python3 "$root/test/tools/Inputs/tiny_gan.py" make "$work"
/usr/bin/python3 "$root/test/tools/Inputs/tiny_gan.py" reference "$work" 8 0.01 adam > "$work/gan-torch.jsonl"
"$mpc" train "$work/gan.onnx" --data x="$work/x.npy" --data z="$work/z.npy" --batch 8 \
  --steps 8 --no-shuffle --optimizer adam --adam-betas 0.5,0.999 --lr 0.01 \
  --precision fp16 --phase 'loss=d_loss,params=D\..*' --phase 'loss=g_loss,params=G\..*' \
  --metrics "$work/gan-fp16.jsonl"
"$py" "$root/test/tools/Inputs/tiny_gan.py" compare "$work/gan-fp16.jsonl" "$work/gan-torch.jsonl" --rtol 2e-3
echo "-- the same phased step for CUDA: an artifact per phase, run in order by mpc-gpu-run"
"$mpc" compile "$work/gan.onnx" -o "$work/gan-art" --train --batch 8 --optimizer adam \
  --adam-betas 0.5,0.999 --lr 0.01 --precision fp16 --phase 'loss=d_loss,params=D\..*' \
  --phase 'loss=g_loss,params=G\..*' --arch sm_90 | sed 's/, memory plan[^;]*//g'
cat "$work/gan-art/phases.txt"
echo "-- a DCGAN on the 8x8 digits (ConvTranspose generator) trained in phases, fp16, 100 steps"
"$py" "$root/scripts/dcgan_digits.py" "$mpc" "$work/dcgan" --steps 100 --precisions fp16 --seeds 0

echo
echo "== 10. data parallelism: 2 ranks x 32 rows (mpc launch, gloo) vs 1 process x 64"
"$mpc" train "$model" --data x="$work/digits_train_x.npy" --data labels="$work/digits_train_y.npy" \
  --batch 64 --steps 100 --optimizer sgd --lr 0.1 --seed 1 --metrics "$work/dp1.jsonl" > /dev/null
"$mpc" launch --nproc 2 -- "$mpc" train "$model" --data x="$work/digits_train_x.npy" \
  --data labels="$work/digits_train_y.npy" --batch 32 --steps 100 --optimizer sgd --lr 0.1 \
  --seed 1 --metrics "$work/dp2.jsonl" | grep -E "data parallel|step 100/|identical"
"$py" -c "
import json, sys
one, two = ([json.loads(l) for l in open(f)] for f in sys.argv[1:])
worst = max(abs(a['loss'] - b['loss']) / a['loss'] for a, b in zip(one, two))
comm = sum(r['comm_ms'] for r in two) / len(two)
print(f'2 ranks vs 1 process, 100 steps: worst relative loss difference {worst:.1e}; '
      f'{comm:.2f} ms a step in collectives')" "$work/dp1.jsonl" "$work/dp2.jsonl"
