"""Builds an artifact's kernels.cu for the host (cuda_host_shim.h) and runs
it with mpc-emulate-artifact against the CPU backend; shared by
emulate_models.py and emulate_node_tests.py."""
import os
import re
import subprocess

# Softmax, the norms and the losses accumulate in FP32 on the GPU and in
# double on the CPU backend, and GEMMs in another order: a value can round
# to the neighbouring fp16/bf16 number, so the bound is two ulps of the
# computing type.
RTOL = {"fp32": 1e-5, "fp16": 2 * 2.0 ** -10, "bf16": 2 * 2.0 ** -7}
# No FMA contraction, as the CPU backend and nvcc (-fmad=false) compute.
# -O0 builds large generated files in half the time and computes the same
# (SSE arithmetic, no contraction); -O1 runs the kernels faster.
FLAGS = ["-std=c++17", "-ffp-contract=off", "-fPIC", "-DMPC_HOST_EMULATION"]


def precompile_shim(cxx, src, work, opt="-O1"):
    """The shim as a precompiled header in WORK (most of a small kernels.cu's
    build time), for builds at OPT; returns what to -include."""
    shim = os.path.join(work, "pch", "shim.h")
    os.makedirs(os.path.dirname(shim), exist_ok=True)
    with open(shim, "w") as f:
        f.write('#include "%s"\n' % os.path.join(
            src, "test/codegen/Inputs/cuda_host_shim.h"))
    subprocess.run([cxx, opt] + FLAGS + ["-I" + src, "-x", "c++-header", shim,
                                    "-o", shim + ".gch"], check=True)
    return shim


def build(cxx, src, shim, cu, lib, opt="-O1"):
    """Builds CU (a kernels.cu) into the host library LIB at OPT (the shim's
    header's); returns LIB."""
    subprocess.run([cxx, opt] + FLAGS + ["-I" + src, "-shared", "-include", shim,
                                    "-x", "c++", cu, "-o", lib, "-lpthread"],
                   check=True)
    return lib


def run_emulated(tools, art, lib, args):
    """mpc-emulate-artifact on ART with kernels from LIB and ARGS
    (NAME=FILE.npy); returns the finished process."""
    return subprocess.run([os.path.join(tools, "mpc-emulate-artifact"), art,
                           lib] + args, capture_output=True, text=True)


def emulate(tools, cxx, src, shim, art, args, opt="-O1"):
    """Builds ART/emu.so at OPT and runs it on ARGS (NAME=FILE.npy); returns
    the finished mpc-emulate-artifact process."""
    lib = build(cxx, src, shim, os.path.join(art, "kernels.cu"),
                os.path.join(art, "emu.so"), opt)
    return run_emulated(tools, art, lib, args)


def differences(out):
    """Each output's largest difference relative to its magnitude."""
    return [float(x) for x in re.findall(r"max relative difference (\S+)", out)]


def ulps(out):
    """Each float output's largest elementwise distance in ulps of its
    storage format; None where one side is NaN and the other not."""
    return [None if x == "-1" else int(x)
            for x in re.findall(r": max ulps (-?\d+)", out)]
