#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds,
# imports examples/mlp.onnx (an MLP 64-128-64-10 with its cross-entropy loss,
# exported by torch) and prints its mpc IR, once with the symbolic batch and
# once specialised to batch 64.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh" >/dev/null
mpc=${MPC_BUILD_DIR:-$root/build}/bin/mpc
model=$root/examples/mlp.onnx

echo "== mpc import $model  (symbolic batch; weights elided)"
"$mpc" import "$model"
echo
echo "== mpc import $model --batch 64 --require-static"
"$mpc" import "$model" --batch 64 --require-static --elide-weights 8
