"""PyTorch reference timings on the GPU for the models of
bench/gpu/prepare.sh, same batch: the forward with its loss in fp32 and
under torch.autocast(fp16), and a whole AMP train step (autocast forward,
GradScaler-scaled backward, SGD step) and the same step in fp32, median over --repeat runs after a
warm-up; and a 4096^3 fp16 torch.matmul (cuBLASLt). Prints one line per
measurement: `torch <model> <what> <ms>`.

usage: torch_amp.py SCRIPTS_DIR [--batch 64] [--repeat 50]
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("scripts")
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--repeat", type=int, default=50)
a = ap.parse_args()
sys.path.insert(0, a.scripts)
import export_torch_models as zoo  # noqa: E402

if not torch.cuda.is_available():
    print("torch: no CUDA device; skipped")
    sys.exit(0)
dev = torch.device("cuda")


def timed(fn):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ms)


b = a.batch
only = set(filter(None, __import__("os").environ.get("MODELS", "").split()))
models = {
    "mlp": (zoo.Mlp(), torch.randn(b, 64)),
    "rescnn": (zoo.ResCnn(), torch.randn(b, 3, 32, 32)),
    "transformer": (zoo.Encoder(), torch.randint(0, 100, (b, 16))),
    "bert": (zoo.Bert(), torch.randint(0, 100, (b, 16))),
    "gpt": (zoo.Gpt(gelu="tanh"), torch.randint(0, 128, (b, 16))),
}
try:  # torchvision's ResNets at prepare.sh's 64x64 images
    import torchvision
    for name in ("resnet18", "resnet50"):
        models[name] = (getattr(torchvision.models, name)(num_classes=10),
                        torch.randn(b, 3, 64, 64))
except ImportError:
    print("torch: no torchvision; the ResNets skipped")
for name, (model, x) in models.items():
    if only and name not in only:
        continue
    model = model.to(dev).eval()
    x = x.to(dev)
    if name == "gpt":  # its own loss over next-token targets
        y = torch.randint(0, 128, (b, 16), device=dev)
        loss_of = lambda: model(x, y)[0]
    else:
        y = torch.randint(0, 10, (b,), device=dev)
        loss_of = lambda: F.cross_entropy(model(x), y)
    with torch.no_grad():
        fp32 = timed(loss_of)
        def amp_fwd():
            with torch.autocast("cuda", dtype=torch.float16):
                return loss_of()
        amp = timed(amp_fwd)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    # As prepare.sh: the ResNets' dynamic scale starts at 1024.
    scaler = torch.amp.GradScaler(
        "cuda", init_scale=1024.0 if name.startswith("resnet") else 65536.0)
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_of()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    train = timed(step)
    # The CNNs channels last too (model and batch in
    # torch.channels_last), as PyTorch's AMP guide recommends on tensor
    # cores: the side-by-side figure for mpc's --layout nhwc.
    if name in ("rescnn", "resnet18", "resnet50"):
        model.to(memory_format=torch.channels_last)
        x_first = x
        x = x.contiguous(memory_format=torch.channels_last)
        print(f"torch {name} amp-train-step-channels-last {timed(step):.4f}")
        model.to(memory_format=torch.contiguous_format)
        x = x_first
    def fp32_step():
        opt.zero_grad(set_to_none=True)
        loss_of().backward()
        opt.step()
    train32 = timed(fp32_step)
    print(f"torch {name} fp32-forward {fp32:.4f}")
    print(f"torch {name} amp-forward {amp:.4f}")
    print(f"torch {name} amp-train-step {train:.4f}")
    print(f"torch {name} fp32-train-step {train32:.4f}")
n = 4096
A = torch.randn(n, n, device=dev, dtype=torch.float16)
B = torch.randn(n, n, device=dev, dtype=torch.float16)
print(f"torch gemm matmul-4096 {timed(lambda: A @ B):.4f}")
# Causal attention forward at prepare.sh's shape (2 x 12 heads x 1024 x 64,
# fp16): torch's scaled_dot_product_attention (flash backend where the
# build has it), the side-by-side figure for mpc's fused attention kernel.
q, k, v = (torch.randn(2, 12, 1024, 64, device=dev, dtype=torch.float16)
           for _ in range(3))
if hasattr(F, "scaled_dot_product_attention"):
    sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    print(f"torch attention sdpa-causal-2x12x1024x64 {timed(sdpa):.4f}")
    # Forward and backward, as the attention train step runs them.
    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
    dy = torch.randn_like(q)
    def fwd_bwd():
        F.scaled_dot_product_attention(qg, kg, vg, is_causal=True).backward(dy)
    print(f"torch attention sdpa-causal-fwd-bwd-2x12x1024x64 {timed(fwd_bwd):.4f}")
