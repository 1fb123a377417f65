"""mpc's attention backward against FlashAttention-2's, instruction by
instruction (no GPU): compiles FlashAttention-2's backward (its PyPI
source release, the kernels torch's SDPA flash backend ships) for sm_90
with nvcc, and mpc's causal train step at 4096 tokens (2 x 12 heads, fp16)
with each form of dQ, then reads the main loop of each backward kernel from
its SASS (bench/sass_loops.py) and prints, per 1024 scores a warp
computes, the tensor-core products, the ldmatrix reads and the
instructions issued on the loop's fast path (a tile no mask touches),
with each kernel's registers and stack.

Both kernels' time goes to these loops at 4096 tokens; the table says
how much each issues for the same work, not how fast a GPU runs it
(bench/gpu/run.sh times that).

usage: flash_sass.py MPC WORKDIR [HEAD_SIZE...]   (default 64 128)
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import urllib.request

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_loops  # noqa: E402

RELEASE = "flash_attn-2.8.3.post2"
URL = ("https://files.pythonhosted.org/packages/6c/b1/"
       "b77625e3d11260d2bd6a4fc249a4be9a3da97ff848e2222e810c4f0e0211/"
       f"{RELEASE}.tar.gz")
SHA256 = "d0f9f0b08a986cdeadbffcf5ec8b3a8f514366c68ad1853d3ab061bc83cc340b"
# Each head size's kernel as FlashAttention-2 launches it where a block
# may take 144 KiB (flash_bwd_launch_template.h: sm_80, sm_90): its
# traits (head size, query rows, key rows, warps, ...), the causal and
# even-shape instance.
TRAITS = {64: "ILi64ELi128ELi128ELi8ELi4ELi4ELi4ELb0ELb0EN7cutlass6half_t",
          128: "ILi128ELi64ELi128ELi8ELi2ELi4ELi2ELb0ELb0EN7cutlass6half_t"}
INSTANCE = r"EELb0ELb1ELb0ELb0ELb1ELb1ELb0E"  # no dropout, causal, even
SEQ, HEADS = 4096, 12


def run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        sys.exit(f"flash_sass.py: {' '.join(cmd[:3])} ... failed:\n"
                 f"{(out.stdout + out.stderr)[-3000:]}")
    return out.stdout


def flash_source(work):
    """FlashAttention-2's source release (with its CUTLASS), unpacked."""
    src = os.path.join(work, RELEASE)
    if os.path.isdir(src):
        return src
    tgz = os.path.join(work, f"{RELEASE}.tar.gz")
    if not os.path.exists(tgz):
        print(f"downloading {URL}")
        urllib.request.urlretrieve(URL, tgz + ".part")
        os.replace(tgz + ".part", tgz)
    if hashlib.sha256(open(tgz, "rb").read()).hexdigest() != SHA256:
        sys.exit(f"flash_sass.py: {tgz} is not the release (sha256 differs)")
    with tarfile.open(tgz) as t:
        t.extractall(work, members=[m for m in t.getmembers() if m.name.startswith(
            (f"{RELEASE}/csrc/flash_attn/src", f"{RELEASE}/csrc/cutlass/include"))])
    # The backward needs of torch only two checking macros and the type of
    # a parameter it does not read (dropout's Philox state).
    for path, text in (
            ("c10/cuda/CUDAException.h", "#define C10_CUDA_CHECK(x) (void)(x)\n"
             "#define C10_CUDA_KERNEL_LAUNCH_CHECK() (void)0\n"),
            ("ATen/cuda/CUDAGeneratorImpl.h", "#include <cstdint>\n"
             "namespace at { struct PhiloxCudaState { uint64_t seed = 0, "
             "offset = 0; uint32_t offset_intragraph = 0; bool captured = false; "
             "}; }\n")):
        path = os.path.join(src, "stub", path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("#pragma once\n" + text)
    return src


def flash_cubin(src, work, d):
    """FlashAttention-2's fp16 causal backward for head size d, sm_90, with
    its setup.py's flags (the features torch's copy lacks compiled out)."""
    cubin = os.path.join(work, f"flash_bwd_d{d}.cubin")
    if os.path.exists(cubin):
        return cubin
    kernels = os.path.join(src, "csrc", "flash_attn", "src")
    print(f"compiling FlashAttention-2's backward, head size {d} (about a minute)")
    run(["nvcc", "-gencode", "arch=compute_90,code=sm_90", "-std=c++17", "-O3",
         "--use_fast_math", "--expt-relaxed-constexpr", "--expt-extended-lambda",
         "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
         "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
         "-DFLASHATTENTION_DISABLE_ALIBI", "-DFLASHATTENTION_DISABLE_SOFTCAP",
         "-DFLASHATTENTION_DISABLE_UNEVEN_K",
         f"-I{os.path.join(src, 'csrc', 'cutlass', 'include')}",
         f"-I{os.path.join(src, 'stub')}", f"-I{kernels}", "-cubin", "-o", cubin + ".part",
         os.path.join(kernels, f"flash_bwd_hdim{d}_fp16_causal_sm80.cu")])
    os.replace(cubin + ".part", cubin)
    return cubin


def mpc_artifact(mpc, work, d, dq):
    """mpc's causal fp16 train step at SEQ tokens, head size d."""
    art = os.path.join(work, f"mpc-d{d}-{dq}")
    model = os.path.join(work, f"attention_d{d}.onnx")
    shape = [2, HEADS, SEQ, d]
    mk = helper.make_node
    g = helper.make_graph(
        [mk("Attention", ["q", "k", "v"], ["y"], is_causal=1),
         mk("Mul", ["y", "target"], ["yt"]),
         mk("ReduceSum", ["yt"], ["loss"], keepdims=0)], "attention",
        [helper.make_tensor_value_info("target", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(np.resize(np.float32([1, -1]), shape), n)
         for n in "qkv"])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]), model)
    run([mpc, "compile", model, "-o", art, "--train", "--precision", "fp16",
         "--optimizer", "sgd", "--loss-scale", "static:256", "--arch", "sm_90",
         "--weights", "seed:0", "--attention-dq", dq])
    return art


def resources(image, pattern):
    """(registers, stack bytes) of the first kernel matching pattern."""
    text = run(["cuobjdump", "-res-usage", image])
    for m in re.finditer(r"Function (\S+):\s*\n\s*REG:(\d+) STACK:(\d+)", text):
        if re.search(pattern, m.group(1)):
            return int(m.group(2)), int(m.group(3))
    return None, None


def per_scores(loop, products, d):
    """The loop's counts per 1024 scores a warp computes: a product of
    1024 scores costs d / 2 m16n8k16 (head size d)."""
    scores = loop["mma"] / (products * d / 2) * 1024
    return {k: loop[k] * 1024 / scores for k in ("mma", "ldmatrix", "fast")}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mpc, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    heads = [int(a) for a in sys.argv[3:]] or [64, 128]
    os.makedirs(work, exist_ok=True)
    src = flash_source(work)
    rows = []
    for d in heads:
        cubin = flash_cubin(src, work, d)
        pattern = "dq_dk_dv_loop_seqk_parallel_kernelI23Flash_bwd_kernel_traits" + TRAITS[d] + ".*" + INSTANCE
        loops = sass_loops.report(sass_loops.disassemble(cubin), pattern)
        reg, stack = resources(cubin, pattern)
        rows.append((d, "FlashAttention-2 (atomic dQ)", [per_scores(loops[0], 5, d)], reg, stack))
        for dq in ("atomic", "recompute"):
            art = mpc_artifact(mpc, work, d, dq)
            code = {}
            for image in sorted(os.listdir(art)):
                if image.endswith(".fatbin"):
                    code.update({k: v for k, v in sass_loops.disassemble(
                        os.path.join(art, image)).items()})
            launched = json.load(open(os.path.join(art, "summary.json")))["launches"]
            grad = next(k for k in launched if re.fullmatch(r"attention_grad_[0-9a-f]+", k))
            loops = sorted(sass_loops.report(code, grad + "$"), key=lambda r: -r["mma"])
            # The key blocks' loop: S, dP, dV, dK (and dQ's part); the
            # recomputing query blocks': S, dP, dQ.
            products = [5] if dq == "atomic" else [4, 3]
            parts = [per_scores(l, p, d) for l, p in zip(loops, products)]
            image = next(os.path.join(art, i) for i in sorted(os.listdir(art))
                         if i.endswith(".fatbin") and grad in
                         run(["cuobjdump", "-res-usage", os.path.join(art, i)]))
            reg, stack = resources(image, grad + "$")
            rows.append((d, f"mpc, dQ {dq}", parts, reg, stack))
    print(f"\ncausal fp16 backward, {SEQ} tokens, sm_90 SASS; per 1024 scores a warp "
          "computes, main loops' fast paths (sums over the kernel's loops)")
    print("| head size | kernel | mma.sync | ldmatrix | instructions | vs FlashAttention-2 "
          "| registers / stack |")
    print("|---|---|---|---|---|---|---|")
    base = {}
    for d, name, parts, reg, stack in rows:
        total = {k: sum(p[k] for p in parts) for k in ("mma", "ldmatrix", "fast")}
        base.setdefault(d, total["fast"])
        print(f"| {d} | {name} | {total['mma']:.0f} | {total['ldmatrix']:.0f} | "
              f"{total['fast']:.0f} | {total['fast'] / base[d]:.2f}x | {reg} / {stack} |")


if __name__ == "__main__":
    main()
