# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "MPC"
# MPC_LIT_EXTERNAL=1: bash runs each test from Output/NAME.script, which
# scripts/time_test_lines.py then times line by line (where a test's time
# goes).
external = bool(os.environ.get("MPC_LIT_EXTERNAL"))
config.test_format = lit.formats.ShTest(execute_external=external, force_execute_external=external)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mpc_obj_root, "test")
config.excludes = ["Inputs", "malformed", "regressions", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

llvm_config.use_default_substitutions()
# `not`, FileCheck and count live in the LLVM tools dir (Debian puts only
# FileCheck-19 on PATH).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.mpc_tools_dir, append_path=False)
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
# Each test is one of lit's workers, one per core: NumPy's and torch's
# thread pools would only contend (and OpenBLAS's start-up alone costs
# ~0.1 s of CPU at every `import numpy`).
config.environment["OPENBLAS_NUM_THREADS"] = "1"
config.environment["OMP_NUM_THREADS"] = "1"
# mpc's CPU backend too: its pool's workers spin before they sleep, which
# beside another test's process only burns the core it needs. Results do
# not depend on the thread count (test/models/cpu-threads.test).
config.environment["MPC_NUM_THREADS"] = "1"
# The kernel cache of `mpc compile` (safe to share between tests run in
# parallel), kept out of the user's home.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.mpc_obj_root, "test", "cache")

# Which ops each backend ran, for scripts/check_op_coverage.py (run by
# scripts/test.sh after the suite); emptied at the start of every lit run.
import shutil as _shutil
trace_dir = os.path.join(config.mpc_obj_root, "test", "op-trace")
_shutil.rmtree(trace_dir, ignore_errors=True)
os.makedirs(trace_dir, exist_ok=True)
config.environment["MPC_TRACE_OPS"] = trace_dir

# Host builds of emulated kernels.cu files, shared by the tests' processes
# (test/codegen/FakeCudaHostBuild.h; kernel by kernel);
# emptied at the start of every lit run.
fake_cuda_cache = os.path.join(config.mpc_obj_root, "test", "fake-cuda-cache")
_shutil.rmtree(fake_cuda_cache, ignore_errors=True)
config.environment["MPC_FAKE_CUDA_CACHE"] = fake_cuda_cache
# A line per host build (kernels compiled, seconds, kernels from the cache).
config.environment["MPC_FAKE_CUDA_BUILD_LOG"] = fake_cuda_cache + ".log"
if os.path.exists(fake_cuda_cache + ".log"):
    os.remove(fake_cuda_cache + ".log")

# check_sass.py's disassemblies, by image content (nvdisasm starts in ~0.4
# s a cubin; the kernel cache's modules are checked many times a run);
# emptied at the start of every lit run.
sass_cache = os.path.join(config.mpc_obj_root, "test", "sass-cache")
_shutil.rmtree(sass_cache, ignore_errors=True)
config.environment["SASS_CACHE"] = sass_cache

llvm_config.add_tool_substitutions(["mpc", "mpc-opt"], [config.mpc_tools_dir])
llvm_config.add_tool_substitutions(["split-file"], [config.llvm_tools_dir])
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%mpc_src", config.mpc_src_root))
config.substitutions.append(("%mpc_obj_root", config.mpc_obj_root))
config.substitutions.append(("%mpc_tools_dir", config.mpc_tools_dir))
config.substitutions.append(("%torch_python", "/usr/bin/python3"))
config.substitutions.append(("%onnx_testdata", "/usr/share/libonnx-testdata/data"))
if config.mpc_asan:
    config.available_features.add("asan")

# CUDA tools for the codegen tests: nvcc from the toolkit (/usr/local/cuda,
# $CUDA_HOME, PATH) or, on machines without one, from the CUDA 13 compiler
# wheels scripts/setup.sh installs; cuobjdump and nvdisasm from the PyPI
# wheels. Nothing is skipped when they are missing: the tests that use them
# fail, and this says what to install.
import shutil
import subprocess
cuda_bin = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin")
# nvcc and g++ run gcc, as and ld from the system PATH.
for system_dir in ("/usr/bin", "/bin"):
    llvm_config.with_environment("PATH", system_dir, append_path=True)
try:
    wheel_bin = subprocess.run(
        [config.python_executable, "-c",
         "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin'))"],
        capture_output=True, text=True).stdout.strip()
except OSError:
    wheel_bin = ""
for tool_dir in (cuda_bin, "/usr/local/cuda/bin", wheel_bin):
    if tool_dir and os.path.isdir(tool_dir):
        llvm_config.with_environment("PATH", tool_dir, append_path=True)
search_path = config.environment["PATH"]
missing = [t for t in ("nvcc", "cuobjdump", "nvdisasm")
           if not shutil.which(t, path=search_path)]
if missing:
    lit_config.warning(
        "CUDA tools missing: " + ", ".join(missing) + "; the codegen tests "
        "will fail. Run scripts/setup.sh (it installs the CUDA 13 compiler "
        "and binary-utility wheels when no toolkit is present).")
config.substitutions.append(("%cxx", shutil.which("g++") or "g++"))
# The toolkit's headers (cublasLt.h...), for the checks of the constants
# the runtime declares itself (it loads the libraries at run time).
config.substitutions.append(("%cuda_include", os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")))
# The race check (racecheck.test): kernels built with ThreadSanitizer run
# in a process that loads its runtime first.
tsan = subprocess.run([shutil.which("g++") or "g++", "-print-file-name=libtsan.so"],
                      capture_output=True, text=True).stdout.strip()
# Only the instrumented kernels' accesses count: NVRTC and the doubles,
# uninstrumented, are not checked.
# atexit_sleep_ms=0: ThreadSanitizer otherwise waits a second at every
# exit (for races with threads still running; the double joins its own).
tsan_options = "TSAN_OPTIONS=halt_on_error=1:exitcode=66:report_signal_unsafe=0:ignore_noninstrumented_modules=1:atexit_sleep_ms=0"
config.substitutions.append(("%tsan_options", tsan_options))
# The CUDA driver double (test/codegen/FakeCudaDriver.cpp): MPC_CUDA_DRIVER
# pointed at it runs --device cuda on the host.
# With it, MPC_CUBLASLT and MPC_CUDNN name the library doubles
# (test/codegen/FakeCublasLt.cpp, FakeCudnn.cpp), so GEMMs and convolution
# gradients take the library path.
lib_dir = os.path.join(config.mpc_obj_root, "lib")
# The doubles time nothing (every candidate ties): sessions on them skip
# --gemm auto's timing unless a test asks for it (library-tuning.test), so
# their call counts are the steps' own.
fake_cuda = "env MPC_TUNING=off MPC_CUDA_DRIVER=" + os.path.join(lib_dir, "libmpc-fake-cuda.so") + " MPC_CUBLASLT=" + os.path.join(lib_dir, "libmpc-fake-cublaslt.so") + " MPC_CUDNN=" + os.path.join(lib_dir, "libmpc-fake-cudnn.so") + " MPC_NCCL=" + os.path.join(lib_dir, "libmpc-fake-nccl.so") + " MPC_FAKE_CUDA_SRC=" + config.mpc_src_root
config.substitutions.append(("%racecheck", fake_cuda + " MPC_FAKE_CUDA_RACECHECK=1 LD_PRELOAD=" + os.path.realpath(tsan) + " " + tsan_options))
config.substitutions.append(("%fake_cuda", fake_cuda))
# What the tests' processes get, for scripts/time_test_lines.py to run a
# test's lines in (with MPC_LIT_EXTERNAL=1, as it needs).
if external:
    import json as _json
    with open(os.path.join(config.test_exec_root, "lit-environment.json"), "w") as _f:
        _json.dump(config.environment, _f, indent=1, sort_keys=True)
