#!/usr/bin/env bash
# Installs what is missing, configures (once) and builds mpc.
# MPC_BUILD_DIR (default: build/) and MPC_JOBS override the defaults.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
build=${MPC_BUILD_DIR:-$root/build}
if [[ ! -f $build/build.ninja ]]; then
  # The Python setup.sh installed packages into (lit, and tensorboard,
  # whose descriptors the build reads).
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DPython3_EXECUTABLE="$(command -v "${PYTHON:-python3}")" >/dev/null
fi
ninja -C "$build" ${MPC_JOBS:+-j "$MPC_JOBS"}
