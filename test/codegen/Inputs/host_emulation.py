"""Builds artifacts' kernels.cu for the host (cuda_host_shim.h), the
distinct kernels of several in one library, and runs them with
mpc-emulate-artifact against the CPU backend; shared by emulate_models.py,
emulate_node_tests.py and property_graphs.py."""
import concurrent.futures
import os
import re
import subprocess

# Softmax, the norms and the losses accumulate in FP32 on the GPU and in
# double on the CPU backend, and GEMMs in another order: a value can round
# to the neighbouring fp16/bf16 number, so the bound is two ulps of the
# computing type.
RTOL = {"fp32": 1e-5, "fp16": 2 * 2.0 ** -10, "bf16": 2 * 2.0 ** -7}
# No FMA contraction, as the CPU backend and nvcc (-fmad=false) compute
# (the driver double's builds, test/codegen/FakeCudaHostBuild.cpp, too).
# -O0 builds large generated files in half the time and computes the same
# (SSE arithmetic, no contraction); -O1 runs the kernels faster. Kernels
# neither throw nor unwind: without exception handling and unwind tables
# g++ builds them ~10% faster.
FLAGS = ["-std=c++17", "-ffp-contract=off", "-fPIC", "-fno-exceptions",
         "-fno-asynchronous-unwind-tables", "-DMPC_HOST_EMULATION"]


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


def split_kernels(art):
    """An artifact's kernels.cu as (prelude, {name: code}, {name: launcher})
    by the emitter's `// kernel NAME` and `// launcher NAME` lines."""
    src = open(os.path.join(art, "kernels.cu")).read()
    body, launchers = src.rsplit("#ifdef MPC_HOST_EMULATION\n", 1)
    launchers = launchers.rsplit("#endif", 1)[0]
    prelude, *blocks = re.split(r"^// kernel (\S+)\n", body, flags=re.M)
    code = dict(zip(blocks[0::2], blocks[1::2]))
    _, *blocks = re.split(r"^// launcher (\S+)\n", launchers, flags=re.M)
    return prelude, code, dict(zip(blocks[0::2], blocks[1::2]))


def build_merged(cxx, src, shim, arts, lib, opt="-O1"):
    """One host library LIB for the artifacts ARTS: their prelude (which
    must be the same), then each distinct kernel once (names hash the code,
    so a name is one kernel), so g++ and the shim's header load once for
    them all instead of once an artifact; at OPT (the shim's header's).
    Returns LIB."""
    prelude, code, launch = None, {}, {}
    for art in arts:
        p, c, l = split_kernels(art)
        if prelude is not None and p != prelude:
            raise ValueError(f"{art}: a prelude unlike the others'")
        prelude = p
        code.update(c)
        launch.update(l)
    cu = os.path.splitext(lib)[0] + ".cu"
    with open(cu, "w") as f:
        f.write(prelude + "".join(code.values()) + "#ifdef MPC_HOST_EMULATION\n"
                + "".join(launch.values()) + "#endif\n")
    return build(cxx, src, shim, cu, lib, opt)


def build_libraries(cxx, src, shim, batches, work, opt="-O1"):
    """One host library per batch of artifact directories (build_merged),
    built side by side as WORK/emu<i>.so; their paths in batch order."""
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        return list(pool.map(
            lambda ib: build_merged(cxx, src, shim, ib[1],
                                    os.path.join(work, f"emu{ib[0]}.so"), opt),
            enumerate(batches)))


def run_emulated(tools, art, lib, args):
    """mpc-emulate-artifact on ART with kernels from LIB and ARGS
    (NAME=FILE.npy); returns the finished process."""
    return subprocess.run([os.path.join(tools, "mpc-emulate-artifact"), art,
                           lib] + args, capture_output=True, text=True)


def differences(out):
    """Each output's largest difference relative to its magnitude."""
    return [float(x) for x in re.findall(r"max relative difference (\S+)", out)]


def ulps(out):
    """Each float output's largest elementwise distance in ulps of its
    storage format; None where one side is NaN and the other not."""
    return [None if x == "-1" else int(x)
            for x in re.findall(r": max ulps (-?\d+)", out)]
