#!/usr/bin/env bash
# GPU benchmark, part 2, on a machine with an NVIDIA GPU (no MLIR needed):
# builds the MLIR-free runtime and mpc-gpu-run (CMake -DMPC_RUNTIME_ONLY=ON),
# runs every artifact bench/gpu/prepare.sh made, compares its outputs with
# the CPU backend's, times it (median of --repeat runs), times PyTorch
# (fp32, autocast fp16, an AMP train step) on the same models and batch, and
# the GEMM kernel against torch.matmul (cuBLASLt); trains each train-step
# artifact for the prepared number of steps (weights on the device, one
# CUDA graph a step), compares its losses with `mpc train` on the CPU
# backend and times a step (and REPLAYS, default 10, replays of it on the
# device alone). RUN names a built mpc-gpu-run (skips the build). Writes
# the table to
# ${OUT:-bench/gpu/work}/gpu-results.md and prints it.
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
while read -r model prec art ins; do
  expect=""
  for f in "$work/expected/$model-$prec"/*.npy; do
    expect="$expect --expect $(basename "$f" .npy)=$f"
  done
  args=()
  for i in $ins; do args+=("${i%%=*}=$work/${i#*=}"); done
  line=$(cd "$work" && "$run" "$art" --repeat "$repeat" $expect "${args[@]}" 2>&1)
  echo "$model $prec: $line" | tr '\n' ' '; echo
  ms=$(echo "$line" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p')
  diff=$(echo "$line" | sed -n 's/^\(logits\|logp\): max relative difference vs CPU backend \(.*\)/\2/p')
  echo "| $model | $prec | ${ms:-n/a} | ${diff:-n/a} |" >> "$results"
done < "$work/manifest.txt"
steps=$(cat "$work/steps.txt")
{
  echo
  echo "| model | precision | mpc train step (ms) | losses over $steps steps (attention: 3, ResNets: 5): max rel diff vs CPU backend | on mpc's kernels only, \`--gemm mpc --conv mpc\` (ms) | its losses' diff | step on the device, no batch upload (ms) |"
  echo "|---|---|---|---|---|---|---|"
} >> "$results"
# Each train step twice: GEMMs and convolutions as the artifact
# chose (cuBLASLt and cuDNN where they load) and on mpc's own kernels.
while read -r model prec art ins; do
  args=()
  n=$steps # an entry's steps=N overrides
  for i in $ins; do
    if [[ $i == steps=* ]]; then n=${i#steps=}; else args+=("${i%%=*}=$work/${i#*=}"); fi
  done
  row="| $model | $prec |"
  for choice in auto mpc; do
    line=$(cd "$work" && "$run" "$art" --gemm $choice --conv $choice --steps "$n" --replays "$replays" --expect-losses "expected/$model-$prec-train.jsonl" "${args[@]}" 2>&1)
    echo "$model $prec train (--gemm/--conv $choice): $line" | tr '\n' ' '; echo
    ms=$(echo "$line" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1/p')
    diff=$(echo "$line" | sed -n 's/^losses: max relative difference vs CPU backend \(.*\)/\1/p')
    row="$row ${ms:-n/a} | ${diff:-n/a} |"
    [[ $choice == auto ]] && dev=$(echo "$line" | sed -n 's/^device: median \([0-9.]*\) ms.*/\1/p')
  done
  row="$row ${dev:-n/a} |"
  echo "$row" >> "$results"
  [[ $model-$prec == transformer-fp16 ]] && last=("$art" "${args[@]}")
done < "$work/train-manifest.txt"
# One data-parallel rank (WORLD_SIZE=1): NCCL (libnccl.so.2, the wheel's
# or the toolkit's) averages the bucket on its own stream; the losses must
# be the single process's.
if [[ -d $work/art/mlp-fp16-dp-train ]]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  dp=$(cd "$work" && RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$run" art/mlp-fp16-dp-train --steps "$steps" --expect-losses expected/mlp-fp16-train.jsonl x=inputs/mlp.x.npy labels=inputs/mlp.labels.npy 2>&1)
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
gemm=$(cd "$work" && "$run" art/gemm-fp16 --repeat "$repeat" --expect c=inputs/gemm.c.npy a=inputs/gemm.a.npy b=inputs/gemm.b.npy 2>&1)
echo "gemm (cuBLASLt): $gemm" | tr '\n' ' '; echo
gemmk=$(cd "$work" && "$run" art/gemm-fp16 --gemm mpc --repeat "$repeat" --expect c=inputs/gemm.c.npy a=inputs/gemm.a.npy b=inputs/gemm.b.npy 2>&1)
echo "gemm (mpc kernel): $gemmk" | tr '\n' ' '; echo
fi
"$tpy" -c "import torch" 2>/dev/null || tpy=/usr/bin/python3
torch=$("$tpy" "$root/bench/gpu/torch_amp.py" "$root/scripts" --batch "$batch" --repeat "$repeat" 2>&1)
gemm=${gemm:-} gemmk=${gemmk:-}
echo "$torch"
{
  echo
  echo "PyTorch on the same GPU and batch (ms):"
  echo
  echo '```'
  echo "$torch"
  [[ -z $gemm ]] || echo "mpc gemm 4096^3 fp16, cuBLASLt: $(echo "$gemm" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1 ms/p')"
  [[ -z $gemm ]] || echo "mpc gemm 4096^3 fp16, mpc kernel: $(echo "$gemmk" | sed -n 's/^time: median \([0-9.]*\) ms.*/\1 ms/p')"
  echo '```'
} >> "$results"
cat "$results"
