"""How `mpc compile` scales with depth: GPT-2 style decoders of 1, 12 and 48
blocks (scripts/export_torch_models.py, gpt_l<N>), each compiled to its fp16
Adam train step for one architecture. For each: ONNX nodes, import + passes
+ plan (`--target cpu`), the whole compile with a cold kernel cache (NVRTC
and nvcc side by side) and again with the warm cache, the device compiler's
share, a recompile at another batch, peak memory of mpc, launches and
distinct kernels, and each time as a ratio to the 1-block model. Writes the
table to docs/performance.md.

usage: python3 bench/compile_scale.py [--layers 1,12,48] [--arch sm_90]
                                      [--out docs/performance.md]
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from report import cpu_name, write_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPC = os.path.join(ROOT, "build", "bin", "mpc")


def run(args):
    """Wall seconds and peak RSS (MiB) of one mpc process."""
    start = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        sys.exit(f"failed: {' '.join(args)}: {p.stderr.read().decode()}")
    return seconds, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default="1,12,48")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--mpc", default=MPC, help="the mpc binary to measure")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs",
                                                  "performance.md"))
    a = ap.parse_args()
    mpc = a.mpc
    layers = [int(n) for n in a.layers.split(",")]
    work = tempfile.mkdtemp()
    names = ",".join(f"gpt_l{n}" for n in layers)
    subprocess.run(["/usr/bin/python3",
                    os.path.join(ROOT, "scripts", "export_torch_models.py"),
                    work, "--only", names], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import onnx  # noqa: E402 (after the export, which needs Debian's torch)
    rows, base = [], None
    for n in layers:
        model = os.path.join(work, f"gpt_l{n}.onnx")
        nodes = len(onnx.load(model, load_external_data=False).graph.node)
        common = [mpc, "compile", model, "--train", "--precision", "fp16",
                  "--optimizer", "adam"]
        plan_s, plan_mb = run(common + ["--batch", "4", "--target", "cpu",
                                        "-o", os.path.join(work, f"cpu{n}")])
        times, peak = {}, plan_mb
        for compiler in ("nvrtc", "nvcc"):
            cache = os.path.join(work, f"cache{n}{compiler}")
            art = os.path.join(work, f"art{n}{compiler}")
            cuda = common + ["--arch", a.arch, "--cache-dir", cache, "-o", art,
                             "--device-compiler", compiler]
            cold, mb = run(cuda + ["--batch", "4"])
            summary = json.load(open(os.path.join(art, "summary.json")))
            device = summary["device_compile"]["seconds"]
            warm, _ = run(cuda + ["--batch", "4"])
            # Another batch: the elementwise kernels (count argument) are
            # found, the rest compile.
            other, _ = run(cuda + ["--batch", "8"])
            times[compiler] = (cold, device, warm, other)
            peak = max(peak, mb)
        cold, device, warm, other = times["nvrtc"]
        base = base or (plan_s, cold, warm)
        rows.append(
            f"| {n} | {nodes} | {len(summary['launches'])} | "
            f"{len(summary['kernels'])} | {plan_s:.2f} ({plan_s / base[0]:.1f}x) "
            f"| {cold:.1f} ({cold / base[1]:.1f}x) | {device:.1f} | "
            f"{times['nvcc'][0]:.1f} | {times['nvcc'][1]:.1f} | "
            f"{warm:.2f} ({warm / base[2]:.1f}x) | {other:.1f} / "
            f"{times['nvcc'][3]:.1f} | {peak:.0f} |")
        print(rows[-1], flush=True)
    shutil.rmtree(work, ignore_errors=True)
    section = (
        "## Compile at scale (no GPU needed)\n\n"
        f"Measured {datetime.date.today()} on {cpu_name()} "
        f"({os.cpu_count()} cores) with `python3 bench/compile_scale.py "
        f"--layers {a.layers} --arch {a.arch}`: GPT-2 style decoders "
        "(`scripts/export_torch_models.py`, `gpt_l<N>`: d=64, 4 heads, "
        "vocabulary 128, context 16) compiled to their fp16 Adam train step "
        f"for {a.arch} at batch 4. Import + plan is `mpc compile --target "
        "cpu` (import, passes, plan, artifact); cold and warm are the whole "
        "CUDA compile with an empty and with a filled kernel cache, by NVRTC "
        "in process (the default) and by nvcc processes side by side; "
        "device s is the device-code part of the cold compile. Batch 8 is a "
        "compile at batch 8 after the batch-4 ones, into the same cache "
        "(NVRTC / nvcc): the elementwise kernels take their element count "
        "as an argument and come from the cache, the rest compile. Kernels "
        "are named by what they compute, so distinct kernels do not grow "
        "with depth, and the warm cache compiles none. Peak memory is mpc's "
        "own (nvcc runs as separate processes).\n\n"
        "| blocks | ONNX nodes | kernel launches | distinct kernels | "
        "import + plan s | cold compile s (NVRTC) | device s | cold compile "
        "s (nvcc) | device s | warm compile s | batch 8 s (NVRTC / nvcc) "
        "| peak MiB |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        + "\n".join(rows) + "\n")
    write_section(a.out, "## Compile at scale", section)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
