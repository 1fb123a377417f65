#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: the lit
# suite (IR, passes, import, malformed corpus under ASan+UBSan, torch
# models, ONNX node-test conformance), through ctest. Fails when lit reports
# a test UNSUPPORTED that test/unsupported-allowed.txt does not list.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh"
build=${MPC_BUILD_DIR:-$root/build}
cd "$build"
log="$build/test/lit.log"
mkdir -p "$(dirname "$log")"
ctest --output-on-failure --verbose 2>&1 | tee "$log"
python3 "$root/scripts/check_unsupported.py" "$log" \
  "$root/test/unsupported-allowed.txt"
# Every op `mpc ops --details` lists must have been run by some test on each
# backend that claims it (the suite records them in test/op-trace).
python3 "$root/scripts/check_op_coverage.py" "$build/bin/mpc" "$build/test/op-trace"
