"""PyTorch reference timings on the GPU for the models of
bench/gpu/prepare.sh, same batch: the forward with its loss in fp32 and
under torch.autocast(fp16), a whole AMP train step (autocast forward,
GradScaler-scaled backward, SGD step), the same under bf16 autocast (no
scaler) and in fp32, for the MLP and the GPT the fp16 step with AdamW
after clip_grad_norm_, median over --repeat runs after a warm-up; a 4096^3
fp16 torch.matmul (cuBLASLt); softmax, layer norm and a device-to-device
copy of a --rows x 8192 fp16 tensor; causal scaled_dot_product_attention
(forward, forward and backward) and the AMP train step of attention alone
(FP32 q, k, v parameters, SGD: the step mpc's attention artifacts run) at
--attn-seq and --attn-long tokens; last, the AMP train steps (fp16 and
bf16) of torch.compile'd models, while --compile-budget seconds since the
start allow (a model is skipped, said in its line, when under a minute is
left). Prints one line per measurement: `torch <model> <what> <ms>`.

usage: torch_amp.py SCRIPTS_DIR [--batch 64] [--repeat 50] [--rows 8192]
                    [--compile-budget 240] [--attn-seq 1024] [--attn-heads 12]
                    [--attn-long 0]
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
ap.add_argument("--rows", type=int, default=8192)
ap.add_argument("--compile-budget", type=float, default=240)
ap.add_argument("--attn-seq", type=int, default=1024)
ap.add_argument("--attn-heads", type=int, default=12)
ap.add_argument("--attn-long", type=int, default=0)
a = ap.parse_args()
start = time.monotonic()
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


def device_ms(fn):
    """The device's time of one call: --repeat calls back to back between
    two CUDA events (no host wait between them, as mpc-gpu-run's graph
    replays), after a warm-up."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(a.repeat):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / a.repeat


# SDPA on its flash backend (FlashAttention-2, issue 14's reference) where
# the build has it; the default backend's choice is printed beside it.
try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    flash = lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)
except ImportError:
    import contextlib
    flash = contextlib.nullcontext


b = a.batch
only = set(filter(None, __import__("os").environ.get("MODELS", "").split()))
models = {
    "mlp": (zoo.Mlp(), torch.randn(b, 64)),
    "rescnn": (zoo.ResCnn(), torch.randn(b, 3, 32, 32)),
    "transformer": (zoo.Encoder(), torch.randint(0, 100, (b, 16))),
    "bert": (zoo.Bert(), torch.randint(0, 100, (b, 16))),
    "gpt": (zoo.Gpt(gelu="tanh"), torch.randint(0, 128, (b, 16))),
    "llama": (zoo.Llama(), torch.randint(0, 128, (b, 16))),
    "vit": (zoo.Vit(), torch.randn(b, 3, 32, 32)),
    "vitrel": (zoo.Vit(rel=True), torch.randn(b, 3, 32, 32)),
}
try:  # torchvision's ResNets at prepare.sh's 64x64 images
    import torchvision
    for name in ("resnet18", "resnet50"):
        models[name] = (getattr(torchvision.models, name)(num_classes=10),
                        torch.randn(b, 3, 64, 64))
except ImportError:
    print("torch: no torchvision; the ResNets skipped")


def loss_fn(name, model, x):
    if name in ("gpt", "llama"):  # their own loss over next-token targets
        y = torch.randint(0, 128, (b, 16), device=dev)
        return lambda: model(x, y)[0]
    y = torch.randint(0, 10, (b,), device=dev)
    return lambda: F.cross_entropy(model(x), y)


def amp_step(name, model, loss_of, dtype):
    """An autocast train step: fp16 with GradScaler (as prepare.sh: the
    ResNets' dynamic scale starts at 1024), bf16 without."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler(
        "cuda", init_scale=1024.0 if name.startswith("resnet") else 65536.0,
        enabled=dtype == torch.float16)
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype):
            loss = loss_of()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step


def adamw_clip_step(model, loss_of):
    """The fp16 AMP step as transformers train: GradScaler, unscale_, the
    gradients' global norm clipped at 1, fused AdamW (lr 1e-3, weight
    decay 0.01; foreach where the build has no fused kernel)."""
    params = list(model.parameters())
    try:
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True)
    except (RuntimeError, TypeError):
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
    scaler = torch.amp.GradScaler("cuda")
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_of()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        scaler.step(opt)
        scaler.update()
    return step


def eager(name, model, x):
    """Eager forwards and train steps of one model (fp32, fp16, bf16)."""
    model = model.to(dev).eval()
    x = x.to(dev)
    loss_of = loss_fn(name, model, x)
    with torch.no_grad():
        fp32 = timed(loss_of)
        def amp_fwd():
            with torch.autocast("cuda", dtype=torch.float16):
                return loss_of()
        amp = timed(amp_fwd)
    model.train()
    step = amp_step(name, model, loss_of, torch.float16)
    train = timed(step)
    train_bf16 = timed(amp_step(name, model, loss_of, torch.bfloat16))
    if name in ("mlp", "gpt"):  # prepare.sh's fp16-adamw-clip rows
        ms = timed(adamw_clip_step(model, loss_of))
        print(f"torch {name} amp-adamw-clip-train-step {ms:.4f}")
    # The CNNs channels last too (model and batch in
    # torch.channels_last), as PyTorch's AMP guide recommends on tensor
    # cores: the side-by-side figure for mpc's --layout nhwc.
    if name in ("rescnn", "resnet18", "resnet50"):
        model.to(memory_format=torch.channels_last)
        last = loss_fn(name, model, x.contiguous(memory_format=torch.channels_last))
        ms = timed(amp_step(name, model, last, torch.float16))
        print(f"torch {name} amp-train-step-channels-last {ms:.4f}")
        model.to(memory_format=torch.contiguous_format)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    def fp32_step():
        opt.zero_grad(set_to_none=True)
        loss_of().backward()
        opt.step()
    train32 = timed(fp32_step)
    print(f"torch {name} fp32-forward {fp32:.4f}")
    print(f"torch {name} amp-forward {amp:.4f}")
    print(f"torch {name} amp-train-step {train:.4f}")
    print(f"torch {name} amp-bf16-train-step {train_bf16:.4f}")
    print(f"torch {name} fp32-train-step {train32:.4f}")


for name, (model, x) in models.items():
    if only and name not in only:
        continue
    try:  # one line for a model that fails; the run goes on
        eager(name, model, x)
    except Exception as e:
        why = str(e).strip().splitlines()
        print(f"torch {name} eager failed: {type(e).__name__}: "
              f"{why[0] if why else ''}")
n = 4096
A = torch.randn(n, n, device=dev, dtype=torch.float16)
B = torch.randn(n, n, device=dev, dtype=torch.float16)
print(f"torch gemm matmul-4096 {timed(lambda: A @ B):.4f}")
# Causal attention at prepare.sh's shape (2 x ATTN_HEADS x ATTN_SEQ x 64,
# fp16): torch's scaled_dot_product_attention (flash backend where the
# build has it; the device's time), the side-by-side figures for mpc's
# fused attention kernels: forward, forward and backward, and the latter
# with dropout 0.1 on the probabilities (as the attention_dropout train
# step).
S, H = a.attn_seq, a.attn_heads
q, k, v = (torch.randn(2, H, S, 64, device=dev, dtype=torch.float16)
           for _ in range(3))
if hasattr(F, "scaled_dot_product_attention"):
    with flash():
        sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
        print(f"torch attention sdpa-causal-2x{H}x{S}x64 {device_ms(sdpa):.4f}")
        qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
        dy = torch.randn_like(q)
        for name, p in (("fwd-bwd", 0.0), ("dropout-fwd-bwd", 0.1)):
            def fwd_bwd():
                F.scaled_dot_product_attention(qg, kg, vg, is_causal=True,
                                               dropout_p=p).backward(dy)
            print(f"torch attention sdpa-causal-{name}-2x{H}x{S}x64 {device_ms(fwd_bwd):.4f}")
        # Head sizes 128, 40 and 256 in fp16, 64 and 128 in bf16
        # (prepare.sh's other steps).
        for name, D, dtype in (("fwd-bwd", 128, torch.float16),
                               ("fwd-bwd", 40, torch.float16),
                               ("fwd-bwd", 256, torch.float16),
                               ("bf16-fwd-bwd", 64, torch.bfloat16),
                               ("bf16-fwd-bwd", 128, torch.bfloat16)):
            qh, kh, vh = (torch.randn(2, H, S, D, device=dev, dtype=dtype,
                                      requires_grad=True) for _ in range(3))
            dyh = torch.randn_like(qh)

            def fwd_bwd():
                F.scaled_dot_product_attention(qh, kh, vh, is_causal=True).backward(dyh)
            print(f"torch attention sdpa-causal-{name}-2x{H}x{S}x{D} {device_ms(fwd_bwd):.4f}")
        # Grouped-query heads (prepare.sh's attention_gqa: 4 q heads a K
        # and V head): SDPA's enable_gqa (torch >= 2.5), else K and V
        # repeated as a user of an older torch writes it.
        KV = max(1, H // 4)
        qg4 = torch.randn(2, 4 * KV, S, 64, device=dev, dtype=torch.float16,
                          requires_grad=True)
        kg4, vg4 = (torch.randn(2, KV, S, 64, device=dev, dtype=torch.float16,
                                requires_grad=True) for _ in range(2))
        dyg4 = torch.randn_like(qg4)

        def gqa_native():
            return F.scaled_dot_product_attention(qg4, kg4, vg4, is_causal=True,
                                                  enable_gqa=True)

        def gqa_repeated():
            return F.scaled_dot_product_attention(
                qg4, kg4.repeat_interleave(4, 1), vg4.repeat_interleave(4, 1),
                is_causal=True)
        try:  # decided once, outside the timed loop
            gqa_native()
            gqa = gqa_native
        except (TypeError, RuntimeError):
            gqa = gqa_repeated

        def gqa_fwd_bwd():
            gqa().backward(dyg4)
        print(f"torch attention sdpa-causal-gqa-fwd-bwd-2x{4 * KV}x{S}x64 "
              f"{device_ms(gqa_fwd_bwd):.4f}")


def attention_step(S, D, dtype):
    """The step mpc's attention artifacts run, as a torch AMP user writes
    it: FP32 q, k and v parameters, SDPA under autocast, the loss
    sum(y * target), backward (fp16: GradScaler), SGD."""
    q, k, v = (torch.nn.Parameter(torch.randn(2, H, S, D, device=dev))
               for _ in range(3))
    target = 1e-3 * torch.randn(2, H, S, D, device=dev)
    opt = torch.optim.SGD([q, k, v], lr=0.01)
    scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            loss = (y.float() * target).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return timed(step)


if hasattr(F, "scaled_dot_product_attention"):
    # The whole train step, beside mpc's (which also casts the FP32
    # parameters and updates them): at prepare.sh's length and at
    # --attn-long (issue 14's range is 1k-4k tokens).
    for S_ in sorted({S, a.attn_long} - {0}):
        for D, dtype, tag in ((64, torch.float16, ""), (128, torch.float16, ""),
                              (64, torch.bfloat16, "bf16-"),
                              (128, torch.bfloat16, "bf16-")):
            print(f"torch attention amp-{tag}train-step-2x{H}x{S_}x{D} "
                  f"{attention_step(S_, D, dtype):.4f}")
    if a.attn_long:
        L = a.attn_long
        for D in (64, 128):
            ql, kl, vl = (torch.randn(2, H, L, D, device=dev, dtype=torch.float16,
                                      requires_grad=True) for _ in range(3))
            dyl = torch.randn_like(ql)
            sdpa = lambda: F.scaled_dot_product_attention(ql, kl, vl, is_causal=True)
            with flash():
                print(f"torch attention sdpa-causal-2x{H}x{L}x{D} {device_ms(sdpa):.4f}")
                print(f"torch attention sdpa-causal-fwd-bwd-2x{H}x{L}x{D} "
                      f"{device_ms(lambda: sdpa().backward(dyl)):.4f}")
            print(f"torch attention sdpa-default-backend-causal-fwd-bwd-2x{H}x{L}x{D} "
                  f"{device_ms(lambda: sdpa().backward(dyl)):.4f}")
        # bf16 at both head sizes (issue 14's range: fp16 and bf16).
        for D in (64, 128):
            qb, kb, vb = (torch.randn(2, H, L, D, device=dev, dtype=torch.bfloat16,
                                      requires_grad=True) for _ in range(3))
            dyb = torch.randn_like(qb)
            with flash():
                print(f"torch attention sdpa-causal-bf16-fwd-bwd-2x{H}x{L}x{D} "
                      f"{device_ms(lambda: F.scaled_dot_product_attention(qb, kb, vb, is_causal=True).backward(dyb)):.4f}")

# Row ops at --rows x 8192 fp16, and the copy that bounds them: each reads
# and writes the tensor once at best.
if a.rows > 0:
    X = torch.randn(a.rows, 8192, device=dev, dtype=torch.float16)
    Y = torch.empty_like(X)
    g = torch.randn(8192, device=dev, dtype=torch.float16)
    shape = f"{a.rows}x8192"
    print(f"torch rows copy-{shape} {timed(lambda: Y.copy_(X)):.4f}")
    print(f"torch rows softmax-{shape} {timed(lambda: torch.softmax(X, -1)):.4f}")
    print(f"torch rows layernorm-{shape} "
          f"{timed(lambda: F.layer_norm(X, (8192,), g, g)):.4f}")
# torch.compile'd AMP train steps, the five models first, within
# the budget (Inductor compiles forward and backward at the first step).
order = ["mlp", "bert", "gpt", "resnet18", "resnet50"]
order += [n for n in models if n not in order]
for name in order:
    if name not in models or (only and name not in only):
        continue
    for dtype, what in ((torch.float16, "compile-amp-train-step"),
                        (torch.bfloat16, "compile-amp-bf16-train-step")):
        left = a.compile_budget - (time.monotonic() - start)
        if left < 60:
            print(f"torch {name} {what} skipped: {left:.0f} s of the "
                  "compile budget left")
            continue
        try:
            model, x = models[name]
            model = model.to(dev).train()
            compiled = torch.compile(model)
            ms = timed(amp_step(name, compiled, loss_fn(name, compiled, x.to(dev)),
                                dtype))
            print(f"torch {name} {what} {ms:.4f}")
        except Exception as e:  # one line, the run goes on
            why = str(e).strip().splitlines()
            print(f"torch {name} {what} failed: {type(e).__name__}: "
                  f"{why[0] if why else ''}")
