#!/usr/bin/env bash
# Installs every system and Python package mpc's build and tests need on a fresh
# Debian 12 machine. Idempotent: when everything is present it only checks.
set -euo pipefail

APT_PACKAGES=(
  g++ cmake ninja-build ccache
  libmlir-19-dev mlir-19-tools llvm-19-dev
  # mpc-tblgen links LLVM's static TableGen and Support libraries, whose
  # CMake targets name zstd.
  libzstd-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
  # torch exports of the reference models (ResNet-18, Transformer, GPT-style).
  python3-torch python3-torchvision python3-onnx
  # ONNX backend node tests (opset <= 17) for conformance.
  libonnx-testdata
  # Sanitizer runtimes for the malformed-model corpus under ASan + UBSan,
  # and ThreadSanitizer's for the emulated kernels' race check.
  libasan8 libubsan1 libtsan2
  # Data-parallel CPU ranks: gloo's TCP all-reduce (docs/distributed.md).
  libgloo-dev
  # Sample grids of image outputs as PNG (mpc train --samples).
  libpng-dev
)
# onnx is pinned: its node tests (scripts/gen_onnx_node_tests.py) and newest
# opset are what the conformance suite pins its counts on.
ONNX_PIN=1.23
# tensorboard: its descriptors generate mpc's event writer at build time,
# and its reader checks the event files in the tests.
# nvidia-nvfatbin: with the toolkit's NVRTC, mpc compiles kernels in
# process (tools/mpc/Nvrtc.h); the toolkit has no libnvfatbin.
# ml_dtypes (onnx's dependency) below 0.7: 0.7.0's import takes 1.2 s of
# CPU with numpy 2 (each ufunc loop it adds scans numpy's list), paid by every
# `import onnx`, which most of the tests' Python scripts do.
PIP_PACKAGES=("onnx==$ONNX_PIN.*" "ml_dtypes>=0.5.4,<0.7" numpy lit onnxruntime scikit-learn onnxconverter-common
  tensorboard nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm pillow "nvidia-nvfatbin==13.0.*")

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
# cuobjdump/nvdisasm (SASS checks of the CUDA artifacts) come as PyPI wheels
# under nvidia/cu13/bin; the CUDA toolkit here has no copy.
if ! "$PY" -c 'import onnx, numpy, lit, onnxruntime, sklearn, onnxconverter_common, tensorboard, nvidia, PIL, os, sys; import ml_dtypes; sys.exit(not onnx.__version__.startswith("'$ONNX_PIN'.") or tuple(map(int, ml_dtypes.__version__.split(".")[:2])) >= (0, 7) or not os.path.exists(os.path.join(list(nvidia.__path__)[0], "cu13", "bin", "cuobjdump")) or not os.path.exists(os.path.join(list(nvidia.__path__)[0], "cu13", "lib", "libnvfatbin.so.13")))' 2>/dev/null; then
  echo "setup: installing Python packages: ${PIP_PACKAGES[*]}"
  "$PY" -m pip install -q "${PIP_PACKAGES[@]}"
fi

# nvcc compiles the CUDA artifacts (mpc compile and the codegen tests). A
# machine without the CUDA 13 toolkit gets its compiler from NVIDIA's wheels
# (nvcc, cicc, the CUDA headers), beside cuobjdump under nvidia/cu13.
wheel_bin=$("$PY" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "bin"))')
if ! command -v nvcc >/dev/null && [[ ! -x ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc ]] \
    && [[ ! -x /usr/local/cuda/bin/nvcc ]] && [[ ! -x $wheel_bin/nvcc ]]; then
  echo "setup: no CUDA toolkit; installing the CUDA 13.0 compiler wheels"
  "$PY" -m pip install -q "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" \
    "nvidia-cuda-crt==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-nvrtc==13.0.*"
fi
echo "setup: all build and test dependencies present"
