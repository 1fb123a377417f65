#!/usr/bin/env bash
# Builds the libFuzzer targets (test/fuzz: clang, ASan + UBSan, every mpc
# source instrumented, in build-fuzz/) and runs each for SECONDS (default
# 60), seeded from the project's models, ONNX's node tests, .npy files and
# a compiled artifact. A crash, leak, UBSan report or multi-line error stops
# that target and leaves its input in build-fuzz/crashes/TARGET/; add it to
# test/fuzz/regressions/TARGET/ (test/fuzz/regressions.test replays them).
#
# usage: [MPC_FUZZ_PARALLEL=N] scripts/fuzz.sh [SECONDS] [TARGET...]
#   TARGET: model-binary model-text tensor npy plan (default: all)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(model-binary model-text tensor npy plan)
fuzz=${MPC_FUZZ_DIR:-$root/build-fuzz}

bash "$root/scripts/setup.sh"
if ! command -v clang++-19 >/dev/null ||
   [[ ! -e /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-x86_64.a ]]; then
  echo "fuzz: installing clang-19 and its sanitizer runtimes"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends clang-19 libclang-rt-19-dev >/dev/null
fi
if [[ ! -f $fuzz/build.ninja ]]; then
  cmake -G Ninja -S "$root" -B "$fuzz" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DMPC_ENABLE_FUZZERS=ON -DMPC_ENABLE_SANITIZED_IMPORTER=OFF \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DPython3_EXECUTABLE="$(command -v "${PYTHON:-python3}")" >/dev/null
fi
ninja -C "$fuzz" "${targets[@]/#/mpc-fuzz-}"

# Seeds (regenerated each run; the corpora grow in $fuzz/corpus).
seeds=$fuzz/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{model-binary,model-text,tensor,npy,plan}
cp "$root"/test/frontend/malformed/*.onnx "$root"/examples/*.onnx \
  "$seeds/model-binary/"
find /usr/share/libonnx-testdata/data/node -name model.onnx | sort |
  awk 'NR % 8 == 0' | while read -r m; do
    cp "$m" "$seeds/model-binary/$(basename "$(dirname "$m")").onnx"
  done
find "$root/test" "$root/examples" -name '*.onnxtxt' -exec cp {} "$seeds/model-text/" \;
find /usr/share/libonnx-testdata/data/node -name 'input_*.pb' | sort |
  awk 'NR % 16 == 0' | while read -r t; do
    cp "$t" "$seeds/tensor/$(basename "$(dirname "$(dirname "$t")")")-$(basename "$t")"
  done
python3 - "$seeds/npy" <<'PY'
import sys, numpy as np
d = sys.argv[1]
for i, a in enumerate([np.arange(6, dtype=np.float32).reshape(2, 3),
                       np.array([1, 2], np.int64), np.float16(3),
                       np.array([True, False]), np.zeros((2, 0, 3), np.int32)]):
    np.save(f"{d}/{i}.npy", a)
PY
if [[ -x $root/build/bin/mpc ]]; then
  for prec in fp32 fp16; do
    "$root/build/bin/mpc" compile "$root/examples/mlp.onnx" -o "$fuzz/art-$prec" \
      --precision $prec --train --optimizer adam --no-nvcc >/dev/null
    python3 -c "import sys; d = sys.argv[1]; open(sys.argv[2], 'wb').write(open(d + '/plan.txt', 'rb').read() + b'\0' + open(d + '/weights.bin', 'rb').read())" \
      "$fuzz/art-$prec" "$seeds/plan/mlp-$prec"
  done
fi
for t in model-binary model-text tensor npy; do
  cp "$root"/test/fuzz/regressions/$t/* "$seeds/$t/" 2>/dev/null || true
done
cp "$root"/test/fuzz/regressions/imports/* "$seeds/model-text/"

# One target: its corpus grows in $fuzz/corpus/TARGET; prints one line.
run_target() {
  local t=$1 log=$fuzz/$1.log runs cov
  mkdir -p "$fuzz/corpus/$t" "$fuzz/crashes/$t"
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      nice -n 19 "$fuzz/bin/mpc-fuzz-$t" -max_total_time="$seconds" \
      -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$fuzz/crashes/$t/" "$fuzz/corpus/$t" "$seeds/$t" \
      >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "fuzz $t: ${seconds}s, $runs inputs, $cov, no crash"
  else
    echo "fuzz $t: FAILED after $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?') inputs; see $log and $fuzz/crashes/$t/"
    grep -m3 -E 'ERROR|SUMMARY' "$log" || true
    return 1
  fi
}

# MPC_FUZZ_PARALLEL=N runs N targets at a time (default 1).
status=0
parallel=${MPC_FUZZ_PARALLEL:-1}
pids=()
for t in "${targets[@]}"; do
  run_target "$t" &
  pids+=($!)
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit $status
