#!/usr/bin/env bash
# GPU benchmark, part 2, on a machine with an NVIDIA GPU (no MLIR needed):
# builds the MLIR-free runtime and mpc-gpu-run (CMake -DMPC_RUNTIME_ONLY=ON),
# runs every artifact bench/gpu/prepare.sh made, compares its outputs with
# the CPU backend's, times it (median of --repeat runs); trains each
# train-step artifact for the prepared number of steps (weights on the
# device, one CUDA graph a step), compares its losses with `mpc train` on
# the CPU backend and times a step (and REPLAYS, default 10, replays of it
# on the device alone); runs softmax and layer norm over 8192 x 8192 fp16
# against NumPy, and causal attention at prepare.sh's ATTN_LONG tokens
# (the forward against torch's float64 attention there, the train steps
# timed); then times PyTorch on the same models and batch (fp32,
# autocast fp16 and bf16 AMP train steps eager and torch.compile'd, the
# latter within what is left of BUDGET seconds, default 300, of the whole
# run), torch.matmul at 4096^3 against the GEMM artifact, torch's
# softmax, layer norm and a copy of the rows, and SDPA and torch's AMP
# attention step at both attention lengths. RUN names a built
# mpc-gpu-run (skips the build). Writes the tables (the train steps side
# by side with torch's; the row kernels as a share of the copy's
# bandwidth) to ${OUT:-bench/gpu/work}/gpu-results.md and prints them.
# Each artifact run is cut at CALL_TIMEOUT seconds (default 90).
# Without a GPU it builds, says so in one line per artifact, and exits 0.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${WORK:-$root/bench/gpu/work}
out=${OUT:-$work}
repeat=${REPEAT:-50}
replays=${REPLAYS:-10} # the train step replayed on the device alone
batch=${BATCH:-64}
[[ -f $work/manifest.txt ]] || { echo "run bench/gpu/prepare.sh first"; exit 1; }
# The large random inputs travel as recipes (bench/gpu/inputs.py): drawn
# again here, checked against prepare.sh's digests.
"${TORCH_PYTHON:-python3}" "$root/bench/gpu/inputs.py" restore "$work" || exit 1
run=${RUN:-}
if [[ -z $run ]]; then
  cmake -S "$root" -B "$root/build-gpu" -G Ninja -DMPC_RUNTIME_ONLY=ON \
    -DMPC_OP_LIST="$work/MpcOpList.h.inc" \
    -DCMAKE_BUILD_TYPE=Release > /dev/null && ninja -C "$root/build-gpu" > /dev/null \
    || { echo "runtime build failed"; exit 1; }
  run=$root/build-gpu/bin/mpc-gpu-run
fi
# cuDNN from NVIDIA's wheel loads its sub-libraries by name: put the
# wheel's folder on the loader's path (mpc finds libcudnn.so.9 there too).
tpy=${TORCH_PYTHON:-python3}
dnn=$("$tpy" -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
[[ -n $dnn && -d $dnn ]] && export LD_LIBRARY_PATH=$dnn${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gpu=$("$run" --probe 2>&1 | sed -n 's/^gpu: //p')
# Each run of an artifact gets at most CALL_TIMEOUT seconds (default 90):
# kernels first run on a real GPU here, and one that hangs must cost one
# line ("timed out"), not the lent GPU's whole budget.
limited() {
  timeout -k 5 "${CALL_TIMEOUT:-90}" "$@"
  local rc=$?
  ((rc == 124 || rc == 137)) && echo "timed out after ${CALL_TIMEOUT:-90} s"
  return $rc
}
mkdir -p "$out"
results=$out/gpu-results.md
{
  echo "## GPU: mpc artifacts vs PyTorch"
  echo
  echo "Measured $(date -u +%F) on ${gpu:-no GPU}, batch $batch, median of $repeat runs. Command: \`bench/gpu/prepare.sh\` (build machine), then \`bench/gpu/run.sh\` (GPU machine)."
  echo
  echo "| model | precision | mpc forward+loss (ms) | max rel diff vs CPU backend (logits) |"
  echo "|---|---|---|---|"
} > "$results"
declare -A fwdms # model-precision: the forward
while read -r model prec art ins; do
  expect=""
  for f in "$work/expected/$model-$prec"/*.npy; do
    expect="$expect --expect $(basename "$f" .npy)=$f"
  done
  args=()
  for i in $ins; do args+=("${i%%=*}=$work/${i#*=}"); done
  line=$(cd "$work" && limited "$run" "$art" --repeat "$repeat" $expect "${args[@]}" 2>&1)
  echo "$model $prec: $line" | tr '\n' ' '; echo
  ms=$(echo "$line" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p')
  diff=$(echo "$line" | sed -n 's/^\(logits\|logp\): max relative difference vs CPU backend \(.*\)/\2/p')
  echo "| $model | $prec | ${ms:-n/a} | ${diff:-n/a} |" >> "$results"
  fwdms[$model-$prec]=${ms:-n/a}
done < "$work/manifest.txt"
steps=$(cat "$work/steps.txt")
declare -A stepms devms # model-precision: the train step, with and without the upload
profiles=""
{
  echo
  echo "(fp16-accum4: --grad-accumulation 4, a step is a group of 4 micro-batches, the first 3 skipping the update: compare with 4 x the fp16 row; its device column replays one micro-batch that applies the update.)"
  echo
  echo "(fp16-adamw-clip: AdamW, weight decay 0.01, the gradients' global norm clipped at 1, as transformers train; the other rows take SGD.)"
  echo
  echo "| model | precision | mpc train step (ms) | losses over $steps steps (attention: 3, ResNets: 5): max rel diff vs CPU backend | on mpc's kernels only, \`--gemm mpc --conv mpc\` (ms) | its losses' diff | step on the device, no batch upload (ms) |"
  echo "|---|---|---|---|---|---|---|"
} >> "$results"
# Each train step twice: GEMMs and convolutions as the artifact
# chose (cuBLASLt and cuDNN where they load) and on mpc's own kernels.
while read -r model prec art ins; do
  args=()
  n=$steps # an entry's steps=N overrides
  choices="auto mpc" # kernels=auto: the libraries' run only
  for i in $ins; do
    case $i in
      steps=*) n=${i#steps=} ;;
      kernels=*) choices=${i#kernels=} ;;
      *) args+=("${i%%=*}=$work/${i#*=}") ;;
    esac
  done
  row="| $model | $prec |"
  for choice in $choices; do
    prof=() # where the time goes, each launching step alone (after the steps)
    [[ $choice == auto ]] && prof=(--profile 6)
    line=$(cd "$work" && limited "$run" "$art" --gemm $choice --conv $choice --steps "$n" --replays "$replays" "${prof[@]}" --expect-losses "expected/$model-$prec-train.jsonl" "${args[@]}" 2>&1)
    echo "$model $prec train (--gemm/--conv $choice): $line" | tr '\n' ' '; echo
    ms=$(echo "$line" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p')
    diff=$(echo "$line" | sed -n 's/^losses: max relative difference vs CPU backend \(.*\)/\1/p')
    row="$row ${ms:-n/a} | ${diff:-n/a} |"
    if [[ $choice == auto ]]; then
      dev=$(echo "$line" | sed -n 's/^device: median \([0-9.]*\) ms.*/\1/p')
      stepms[$model-$prec]=${ms:-n/a} devms[$model-$prec]=${dev:-n/a}
      if [[ $prec =~ ^(fp16|bf16|fp16-nhwc)$ && $model =~ ^(mlp|bert|gpt|llama|vit|vitrel|resnet18|resnet50|attention.*)$ ]]; then
        profiles+=$'\n'"$model $prec:"$'\n'"$(echo "$line" | sed -n 's/^profile: //p')"
      fi
    fi
  done
  [[ $choices == auto ]] && row="$row - | - |"
  row="$row ${dev:-n/a} |"
  echo "$row" >> "$results"
  [[ $model-$prec == transformer-fp16 ]] && last=("$art" "${args[@]}")
done < "$work/train-manifest.txt"
# One data-parallel rank (WORLD_SIZE=1): NCCL (libnccl.so.2, the wheel's
# or the toolkit's) averages the bucket on its own stream; the losses must
# be the single process's.
if [[ -d $work/art/mlp-fp16-dp-train ]]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  dp=$(cd "$work" && RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port limited "$run" art/mlp-fp16-dp-train --steps "$steps" --expect-losses expected/mlp-fp16-train.jsonl x=inputs/mlp.x.npy labels=inputs/mlp.labels.npy 2>&1)
  echo "mlp fp16 data-parallel rank (NCCL): $dp" | tr '\n' ' '; echo
  ms=$(echo "$dp" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p')
  diff=$(echo "$dp" | sed -n 's/^losses: max relative difference vs CPU backend \(.*\)/\1/p')
  lib=$(echo "$dp" | sed -n 's/.*averaged over 1 rank by \(NCCL [0-9.]*\).*/\1/p')
  { echo; echo "mlp fp16 train step as one data-parallel rank (${lib:-NCCL not loaded}): ${ms:-n/a} ms, losses vs CPU backend ${diff:-n/a}"; } >> "$results"
fi
# compute-sanitizer memcheck over two steps of the fp16 Transformer's,
# where the machine has it.
if command -v compute-sanitizer > /dev/null && [[ -n ${last:-} ]]; then
  san=$(cd "$work" && timeout 120 compute-sanitizer --tool memcheck "$run" "${last[0]}" --steps 2 "${last[@]:1}" 2>&1 | grep -E "ERROR SUMMARY|^=========.*(Invalid|error)" | head -5)
  echo "memcheck (${last[0]}, 2 steps): ${san:-no summary}"
  { echo; echo "compute-sanitizer memcheck, ${last[0]}, 2 train steps: ${san:-no summary}"; } >> "$results"
fi
if [[ -d $work/art/gemm-fp16 ]]; then
python3 - "$work" <<'PY'
import numpy as np, sys
w = sys.argv[1]
r = np.random.default_rng(0)
for k in "ab":
    np.save(f"{w}/inputs/gemm.{k}.npy", r.standard_normal((4096, 4096)).astype(np.float16))
a, b = (np.load(f"{w}/inputs/gemm.{k}.npy").astype(np.float32) for k in "ab")
np.save(f"{w}/inputs/gemm.c.npy", (a @ b).astype(np.float16))
PY
gemm=$(cd "$work" && limited "$run" art/gemm-fp16 --repeat "$repeat" --expect c=inputs/gemm.c.npy a=inputs/gemm.a.npy b=inputs/gemm.b.npy 2>&1)
echo "gemm (cuBLASLt): $gemm" | tr '\n' ' '; echo
gemmk=$(cd "$work" && limited "$run" art/gemm-fp16 --gemm mpc --repeat "$repeat" --expect c=inputs/gemm.c.npy a=inputs/gemm.a.npy b=inputs/gemm.b.npy 2>&1)
echo "gemm (mpc kernel): $gemmk" | tr '\n' ' '; echo
gemm2=$(cd "$work" && limited "$run" art/gemm-fp16-2stages --gemm mpc --repeat "$repeat" --expect c=inputs/gemm.c.npy a=inputs/gemm.a.npy b=inputs/gemm.b.npy 2>&1)
echo "gemm (mpc kernel, 2 stages): $gemm2" | tr '\n' ' '; echo
fi
# Softmax and layer norm over the rows prepare.sh drew, checked against
# NumPy (FP32) here: the reference would not travel.
declare -A rowms rowdiff
rowshape=
while read -r op art ins; do
  x=$work/${ins#x=}
  ref=$work/inputs/rows.$op.ref.npy
  rowshape=$(python3 - "$x" "$work/inputs" "$op" "$ref" <<'PY'
import sys
import numpy as np
x = np.load(sys.argv[1]).astype(np.float32)
if sys.argv[3] == "softmax":
    e = np.exp(x - x.max(-1, keepdims=True))
    y = e / e.sum(-1, keepdims=True)
else:
    g, b = (np.load(f"{sys.argv[2]}/rows.{k}.npy").astype(np.float32) for k in "gb")
    m = x.mean(-1, keepdims=True)
    y = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
np.save(sys.argv[4], y.astype(np.float16))
print("x".join(map(str, x.shape)))
PY
  )
  line=$(cd "$work" && limited "$run" "$art" --repeat "$repeat" --expect y="$ref" x="$x" 2>&1)
  echo "$op $rowshape: $line" | tr '\n' ' '; echo
  rowms[$op]=$(echo "$line" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p')
  rowdiff[$op]=$(echo "$line" | sed -n 's/^y: max relative difference vs CPU backend \(.*\)/\1/p')
  rm -f "$ref"
done < "$work/rows-manifest.txt"
"$tpy" -c "import torch" 2>/dev/null || tpy=/usr/bin/python3
# Causal attention at prepare.sh's ATTN_LONG tokens (the top of issue
# 14's 1k-4k range, where the CPU backend would take minutes a step): the
# forward checked against attention computed here by torch in float64;
# the train steps (head sizes 64 and 128) timed on the device, on the
# kernels the 1k steps check against the CPU backend.
long=$(cat "$work/attention-long.txt" 2>/dev/null || echo 0)
declare -A longms
if [[ $long != 0 && -d $work/art/attention-long-fp16 ]]; then
  "$tpy" - "$work/inputs" <<'PY'
import sys
import numpy as np, torch
d = sys.argv[1]
dev = "cuda" if torch.cuda.is_available() else "cpu"
q, k, v = (torch.from_numpy(np.load(f"{d}/attention_long.{n}.npy")).to(dev).double()
           for n in "qkv")
s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
n = s.shape[-1]
s.masked_fill_(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1),
               float("-inf"))
np.save(f"{d}/attention_long.ref.npy", (s.softmax(-1) @ v).float().cpu().numpy())
PY
  line=$(cd "$work" && limited "$run" art/attention-long-fp16 --repeat "$repeat" --expect logits=inputs/attention_long.ref.npy q=inputs/attention_long.q.npy k=inputs/attention_long.k.npy v=inputs/attention_long.v.npy 2>&1)
  echo "attention fp16 at $long tokens: $line" | tr '\n' ' '; echo
  longms[forward]=$(echo "$line" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p')
  longdiff=$(echo "$line" | sed -n 's/^logits: max relative difference vs CPU backend \(.*\)/\1/p')
  for form in 64 64-recompute 64-atomic 64-rows64 128 128-recompute 128-atomic 128-sm80; do
    d=${form%%-*}
    line=$(cd "$work" && limited "$run" "art/attention-long-d$d-fp16-train${form#$d}" --steps 3 --replays "$replays" --profile 8 "target=inputs/attention_long_d$d.target.npy" 2>&1)
    echo "attention fp16 train at $long tokens, head size $d${form#$d}: $line" | tr '\n' ' '; echo
    longms[train$form]=$(echo "$line" | sed -n 's/^device: median \([0-9.]*\) ms.*/\1/p')
    # The attention kernels alone (forward and backward steps, each run
    # alone by --profile): what SDPA's forward + backward times.
    longms[kernels$form]=$(echo "$line" | sed -n 's/^profile: //p' |
      awk '$NF == "attention" || $NF == "attention_grad" { s += $2; n++ } END { if (n == 2) printf "%.4f", s }')
    profiles+=$'\n'"attention at $long tokens, head size $d${form#$d}:"$'\n'"$(echo "$line" | sed -n 's/^profile: //p')"
  done
  for d in 64 128; do
    [[ -d $work/art/attention-long-d$d-bf16-train ]] || continue
    line=$(cd "$work" && limited "$run" "art/attention-long-d$d-bf16-train" --steps 3 --replays "$replays" "target=inputs/attention_long_d$d.target.npy" 2>&1)
    echo "attention bf16 train at $long tokens, head size $d: $line" | tr '\n' ' '; echo
    longms[train$d-bf16]=$(echo "$line" | sed -n 's/^device: median \([0-9.]*\) ms.*/\1/p')
  done
fi
# torch.compile takes what is left of BUDGET seconds (the whole script's
# share of a lent GPU's 15 minutes, start-up and a rerun aside).
left=$(( ${BUDGET:-300} - SECONDS - 20 ))
seq=$(cat "$work/attention-seq.txt" 2>/dev/null || echo 1024)
heads=$(cat "$work/attention-heads.txt" 2>/dev/null || echo 12)
torch=$("$tpy" "$root/bench/gpu/torch_amp.py" "$root/scripts" --batch "$batch" --repeat "$repeat" --rows "$(r=${rowshape%%x*}; echo "${r:-0}")" --attn-seq "$seq" --attn-heads "$heads" --attn-long "$long" --compile-budget $(( left > 0 ? left : 0 )) 2>&1)
gemm=${gemm:-} gemmk=${gemmk:-} gemm2=${gemm2:-}
echo "$torch"
{
  echo
  echo "PyTorch on the same GPU and batch (ms):"
  echo
  echo '```'
  echo "$torch"
  [[ -z $gemm ]] || echo "mpc gemm 4096^3 fp16, cuBLASLt: $(echo "$gemm" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1 ms/p')"
  [[ -z $gemm ]] || echo "mpc gemm 4096^3 fp16, mpc kernel: $(echo "$gemmk" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1 ms/p')"
  [[ -z $gemm ]] || echo "mpc gemm 4096^3 fp16, mpc kernel on 2 stages (as for sm_89): $(echo "$gemm2" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1 ms/p')"
  echo '```'
} >> "$results"
# Side by side, what users would pick instead: the AMP train steps (fp16
# with GradScaler, bf16) eager and torch.compile'd, against mpc's step on
# the batch already on the device (as torch's) and with its upload; the
# models torch_amp.py builds.
tms() { echo "$torch" | sed -n "s/^torch $1 $2 \([0-9.]*\)\$/\1/p"; }
ratio() { python3 -c "import sys; a, b = sys.argv[1:]; print(f'{float(a) / float(b):.2f}x')" "$1" "$2" 2>/dev/null || echo n/a; }
share() { python3 -c "import sys; a, b = sys.argv[1:]; print(f'{100 * float(a) / float(b):.0f}%')" "$1" "$2" 2>/dev/null || echo n/a; }
# Rows "LABEL;MPC_MS;KEY" against torch's attention timing KEY, each as
# | LABEL | mpc | torch | torch / mpc |; with skip-empty first, a row
# with neither time is left out.
attention_rows() {
  local skip=0 row label mine key t
  [[ $1 == skip-empty ]] && { skip=1; shift; }
  for row in "$@"; do
    IFS=';' read -r label mine key <<< "$row"
    t=$(tms attention "$key")
    ((skip)) && [[ $mine == n/a && -z $t ]] && continue
    echo "| $label | $mine | ${t:-n/a} | $(ratio "${t:-x}" "$mine") |"
  done
}
{
  echo
  echo "Train steps side by side (ms; ratios: torch's time over mpc's on the device):"
  echo
  echo "| model | precision | mpc, batch on the device | mpc, batch uploaded | PyTorch eager AMP | torch.compile AMP | eager / mpc | compile / mpc |"
  echo "|---|---|---|---|---|---|---|---|"
  for key in "${!devms[@]}"; do echo "$key"; done | sort | while read -r key; do
    [[ $key =~ ^(mlp|rescnn|transformer|bert|gpt|llama|vit|vitrel|resnet18|resnet50)-(.*)$ ]] || continue
    model=${BASH_REMATCH[1]} prec=${BASH_REMATCH[2]}
    case $prec in # channels last: against torch's channels_last step
      fp16) what=amp-train-step ;;
      bf16) what=amp-bf16-train-step ;;
      fp16-nhwc) what=amp-train-step-channels-last ;;
      fp16-adamw-clip) what=amp-adamw-clip-train-step ;;
      *) continue ;;
    esac
    eager=$(tms "$model" "$what") comp=$(tms "$model" "compile-$what")
    echo "| $model | $prec | ${devms[$key]} | ${stepms[$key]} | ${eager:-n/a} | ${comp:-n/a} | $(ratio "${eager:-x}" "${devms[$key]}") | $(ratio "${comp:-x}" "${devms[$key]}") |"
  done
  if [[ -n ${fwdms[attention-fp16]:-} ]]; then
    shape=2x${heads}x${seq}x64
    echo
    echo "Causal attention, fp16 at $shape unless a row says otherwise: mpc's fused kernels against torch's scaled_dot_product_attention (the train steps: forward, backward and SGD on q, k and v, on the device):"
    echo
    echo "| what | mpc (ms) | torch SDPA (ms) | torch / mpc |"
    echo "|---|---|---|---|"
    attention_rows "forward;${fwdms[attention-fp16]:-n/a};sdpa-causal-$shape" \
      "forward + backward;${devms[attention-fp16]:-n/a};sdpa-causal-fwd-bwd-$shape" \
      "forward + backward, dQ as partial sums (\`--attention-dq accumulate\`);${devms[attention_accumulate-fp16]:-n/a};sdpa-causal-fwd-bwd-$shape" \
      "forward + backward, dQ by atomic adds (\`--attention-dq atomic\`);${devms[attention_atomic-fp16]:-n/a};sdpa-causal-fwd-bwd-$shape" \
      "forward + backward, blocks of 64 rows (\`--attention-rows 64\`);${devms[attention_rows64-fp16]:-n/a};sdpa-causal-fwd-bwd-$shape" \
      "forward + backward, dropout 0.1;${devms[attention_dropout-fp16]:-n/a};sdpa-causal-dropout-fwd-bwd-$shape" \
      "forward + backward, dropout 0.1, dQ by atomic adds;${devms[attention_dropout_atomic-fp16]:-n/a};sdpa-causal-dropout-fwd-bwd-$shape" \
      "forward + backward, head size 128 (2x${heads}x${seq}x128);${devms[attention_d128-fp16]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${seq}x128" \
      "forward + backward, head size 128 as built for sm_89 (16 query rows a warp, dK and dV blocks apart);${devms[attention_d128_sm89-fp16]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${seq}x128" \
      "forward + backward, head size 128, blocks of 64 rows (\`--attention-rows 64\`);${devms[attention_d128_rows64-fp16]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${seq}x128" \
      "forward + backward, head size 128, dQ by atomic adds (\`--attention-dq atomic\`);${devms[attention_d128_atomic-fp16]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${seq}x128" \
      "forward + backward, head size 128, dQ recomputed (\`--attention-dq recompute\`);${devms[attention_d128_recompute-fp16]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${seq}x128" \
      "forward + backward, head size 40 (Stable Diffusion's, computed on 48 by mpc, on 64 by FlashAttention-2);${devms[attention_d40-fp16]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${seq}x40" \
      "forward + backward, head size 256 (Gemma's);${devms[attention_d256-fp16]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${seq}x256" \
      "forward + backward, head size 256 as built for sm_89 (the backward's 16-row tiles);${devms[attention_d256_sm89-fp16]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${seq}x256" \
      "forward + backward, grouped-query heads (4 q heads a K and V head, torch with enable_gqa);${devms[attention_gqa-fp16]:-n/a};sdpa-causal-gqa-fwd-bwd-2x$((4 * (heads / 4 > 0 ? heads / 4 : 1)))x${seq}x64" \
      "forward + backward, bf16;${devms[attention-bf16]:-n/a};sdpa-causal-bf16-fwd-bwd-$shape" \
      "forward + backward, head size 128, bf16;${devms[attention_d128-bf16]:-n/a};sdpa-causal-bf16-fwd-bwd-2x${heads}x${seq}x128"
  fi
  # The same train step in torch (SDPA under autocast, SGD on FP32 q, k
  # and v: what a user of torch writes), beside mpc's on the device.
  if [[ -n ${devms[attention-fp16]:-} || -n ${longms[train64]:-} ]]; then
    echo
    echo "Attention train steps side by side (forward, backward and SGD on FP32 q, k and v; mpc on the device against torch's AMP step with SDPA):"
    echo
    echo "| shape | precision | mpc (ms) | torch AMP step (ms) | torch / mpc |"
    echo "|---|---|---|---|---|"
    attention_rows skip-empty \
      "2x${heads}x${seq}x64 | fp16;${devms[attention-fp16]:-n/a};amp-train-step-2x${heads}x${seq}x64" \
      "2x${heads}x${seq}x128 | fp16;${devms[attention_d128-fp16]:-n/a};amp-train-step-2x${heads}x${seq}x128" \
      "2x${heads}x${seq}x64 | bf16;${devms[attention-bf16]:-n/a};amp-bf16-train-step-2x${heads}x${seq}x64" \
      "2x${heads}x${seq}x128 | bf16;${devms[attention_d128-bf16]:-n/a};amp-bf16-train-step-2x${heads}x${seq}x128" \
      "2x${heads}x${long}x64 | fp16;${longms[train64]:-n/a};amp-train-step-2x${heads}x${long}x64" \
      "2x${heads}x${long}x64 | bf16;${longms[train64-bf16]:-n/a};amp-bf16-train-step-2x${heads}x${long}x64" \
      "2x${heads}x${long}x128 | fp16;${longms[train128]:-n/a};amp-train-step-2x${heads}x${long}x128" \
      "2x${heads}x${long}x128 | bf16;${longms[train128-bf16]:-n/a};amp-bf16-train-step-2x${heads}x${long}x128"
  fi
  if [[ -n ${longms[forward]:-} ]]; then
    echo
    echo "Causal attention at 2x${heads}x${long} fp16 (the forward's output against attention computed there by torch in float64: max relative difference ${longdiff:-n/a}):"
    echo
    echo "| what | mpc (ms) | torch SDPA (ms) | torch / mpc |"
    echo "|---|---|---|---|"
    attention_rows "forward, head size 64;${longms[forward]};sdpa-causal-2x${heads}x${long}x64" \
      "train step, head size 64, vs SDPA forward + backward;${longms[train64]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x64" \
      "train step, head size 64, dQ recomputed (\`--attention-dq recompute\`);${longms[train64-recompute]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x64" \
      "train step, head size 64, dQ by atomic adds (\`--attention-dq atomic\`);${longms[train64-atomic]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x64" \
      "train step, head size 64, blocks of 64 rows (\`--attention-rows 64\`);${longms[train64-rows64]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x64" \
      "train step, head size 64, bf16;${longms[train64-bf16]:-n/a};sdpa-causal-bf16-fwd-bwd-2x${heads}x${long}x64" \
      "the forward and backward kernels alone, head size 64;${longms[kernels64]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x64" \
      "train step, head size 128, vs SDPA forward + backward;${longms[train128]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x128" \
      "the forward and backward kernels alone, head size 128;${longms[kernels128]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x128" \
      "train step, head size 128, dQ recomputed (\`--attention-dq recompute\`);${longms[train128-recompute]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x128" \
      "train step, head size 128, dQ by atomic adds (\`--attention-dq atomic\`);${longms[train128-atomic]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x128" \
      "the forward and backward kernels alone, head size 128, dQ by atomic adds;${longms[kernels128-atomic]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x128" \
      "train step, head size 128, built for sm_80 too (P^T and dS^T in one buffer);${longms[train128-sm80]:-n/a};sdpa-causal-fwd-bwd-2x${heads}x${long}x128" \
      "train step, head size 128, bf16;${longms[train128-bf16]:-n/a};sdpa-causal-bf16-fwd-bwd-2x${heads}x${long}x128"
  fi
  if [[ -n $rowshape ]]; then
    copy=$(tms rows "copy-$rowshape")
    echo
    echo "Row kernels over $rowshape fp16 (each reads and writes the tensor once at best; share: of the device-to-device copy's bandwidth, ${copy:-n/a} ms):"
    echo
    echo "| op | mpc (ms) | mpc share of copy | max rel diff vs NumPy | torch (ms) | torch share of copy |"
    echo "|---|---|---|---|---|---|"
    for op in softmax layernorm; do
      t=$(tms rows "$op-$rowshape")
      echo "| $op | ${rowms[$op]:-n/a} | $(share "${copy:-x}" "${rowms[$op]:-x}") | ${rowdiff[$op]:-n/a} | ${t:-n/a} | $(share "${copy:-x}" "${t:-x}") |"
    done
  fi
  if [[ -n $profiles ]]; then
    echo
    echo "Where the train steps' time goes (mpc-gpu-run --profile: each launching step run alone, summed by kernel or library call, the 6 largest; every step of the long attention):"
    echo
    echo '```'"$profiles"
    echo '```'
  fi
  echo
  echo "run.sh took $SECONDS s."
} >> "$results"
cat "$results"
