#!/usr/bin/env bash
# Nsight Compute over the attention train steps' kernels, on the GPU
# machine after bench/gpu/run.sh built mpc-gpu-run (build-gpu/): per
# kernel its speed of light, occupancy, tensor-pipe use and why its warps
# stall (cycles a warp waits per issued instruction, by reason), one
# report a step under ${OUT:-/tmp}/ncu-STEP.txt and the stall table
# printed. Arguments: the train-manifest names of the steps (art/ folders
# of WORK, default bench/gpu/work), e.g. attention-fp16-train. Leaves the
# clocks alone (--clock-control none), as METHOD.md asks.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${WORK:-$root/bench/gpu/work}
run=${RUN:-$root/build-gpu/bin/mpc-gpu-run}
out=${OUT:-/tmp}
command -v ncu > /dev/null || { echo "profile_attention: no ncu here"; exit 0; }
stalls=""
for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle \
         wait not_selected selected lg_throttle membar dispatch_stall no_instruction; do
  stalls+="smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio,"
done
metrics="${stalls}sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
for art in "$@"; do
  target=$(grep -h " art/$art " "$work/train-manifest.txt" 2>/dev/null | grep -o 'target=[^ ]*' | head -1)
  [[ -z $target ]] && target="target=inputs/attention_long_d$(echo "$art" | sed -n 's/.*-d\([0-9]*\)-.*/\1/p').target.npy"
  profile() {
    (cd "$work" && timeout 120 ncu --clock-control none -k regex:attention -c 4 \
        --section SpeedOfLight --section Occupancy --section LaunchStats "$@" \
        "$run" "art/$art" --steps 1 "$target") > "$out/ncu-$art.txt" 2>&1
  }
  profile --metrics "$metrics"
  rc=$?
  if grep -q "==ERROR==" "$out/ncu-$art.txt"; then # a metric this ncu lacks
    profile --section WarpStateStats --section ComputeWorkloadAnalysis
    rc=$?
  fi
  echo "== $art (ncu exit $rc)"
  grep -E "^  [a-z_0-9]+ \(|Duration|Registers Per|Achieved Occupancy|hmma_cycles|stalled" "$out/ncu-$art.txt" |
    sed -e 's/smsp__average_warps_issue_stalled_//' -e 's/_per_issue_active.ratio//' | awk '{$1=$1; print}'
done
