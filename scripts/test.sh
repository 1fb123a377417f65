#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: the lit
# suite (IR, passes, import, malformed corpus under ASan+UBSan, torch
# models, ONNX node-test conformance), through ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh"
build=${MPC_BUILD_DIR:-$root/build}
cd "$build"
ctest --output-on-failure --verbose
