"""A tiny GAN as torch exports it (generator Linear-Tanh, discriminator
Linear-LeakyRelu-Linear, BCE-with-logits losses), and torch's own
alternating training of it, to check `mpc train --phase`.

`make DIR`: DIR/gan.onnx with outputs d_loss and g_loss, DIR/x.npy (real
samples) and DIR/z.npy (noise). `reference DIR STEPS LR [adam [LR_G]]`: torch's loop:
each step, on rows in file order, an SGD step of the discriminator on
d_loss, then (seeing the updated discriminator) one of the generator on
g_loss; JSONL like mpc's --metrics. `compare A B --rtol R`: the losses of
each phase and step. `tensorboard DIR METRICS`: the per-phase loss tags of
an event directory against --metrics.
"""
import json
import sys

import numpy as np

BATCH = 8


def model():
    import torch
    from torch import nn
    torch.manual_seed(0)

    class Gan(nn.Module):
        def __init__(self):
            super().__init__()
            self.G = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
            self.D = nn.Sequential(nn.Linear(8, 6), nn.LeakyReLU(0.2),
                                   nn.Linear(6, 1))

        def forward(self, x, z):
            bce = nn.functional.binary_cross_entropy_with_logits
            fake = self.G(z)
            real_logits, fake_logits = self.D(x), self.D(fake)
            ones = torch.ones_like(real_logits)
            d_loss = bce(real_logits, ones) + bce(fake_logits, 0 * ones)
            g_loss = bce(fake_logits, ones)
            return d_loss, g_loss
    return Gan()


def make(d):
    import torch
    m = model()
    x = torch.zeros(BATCH, 8)
    z = torch.zeros(BATCH, 4)
    torch.onnx.export(m, (x, z), f"{d}/gan.onnx", input_names=["x", "z"],
                      output_names=["d_loss", "g_loss"], opset_version=13,
                      dynamic_axes={"x": {0: "batch"}, "z": {0: "batch"}})
    rng = np.random.default_rng(5)
    np.save(f"{d}/x.npy", (0.5 + 0.3 * rng.standard_normal((32, 8)))
            .astype(np.float32))
    np.save(f"{d}/z.npy", rng.standard_normal((32, 4)).astype(np.float32))


def reference(d, steps, lr, kind="sgd", lr_g=None):
    import torch
    m = model()
    x, z = torch.tensor(np.load(f"{d}/x.npy")), torch.tensor(np.load(f"{d}/z.npy"))
    # DCGAN's Adam: betas 0.5, 0.999.
    make_opt = (lambda p, r: torch.optim.SGD(p, lr=r)) if kind == "sgd" else \
        (lambda p, r: torch.optim.Adam(p, lr=r, betas=(0.5, 0.999)))
    opt_d = make_opt(m.D.parameters(), lr)
    opt_g = make_opt(m.G.parameters(), lr if lr_g is None else lr_g)
    for s in range(steps):
        k = s % (len(x) // BATCH)
        xb, zb = x[k * BATCH:(k + 1) * BATCH], z[k * BATCH:(k + 1) * BATCH]
        for name, opt in (("d_loss", opt_d), ("g_loss", opt_g)):
            m.zero_grad()
            d_loss, g_loss = m(xb, zb)
            loss = d_loss if name == "d_loss" else g_loss
            loss.backward()
            opt.step()
            print(json.dumps({"phase": name, "step": s + 1,
                              "loss": float(loss)}))


def tensorboard(d, metrics):
    """Per-phase tags of `mpc train --phase --tensorboard` against --metrics."""
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(d)
    acc.Reload()
    tags = sorted(t for t in acc.Tags()["scalars"] if t.endswith("/loss"))
    got = {(t[:-5], e.step): e.value for t in tags for e in acc.Scalars(t)}
    rows = [json.loads(l) for l in open(metrics)]
    same = all(abs(got[(r["phase"], r["step"])] - r["loss"]) <= 1e-6 * abs(r["loss"])
               for r in rows)
    print("loss tags:", " ".join(tags), "; equal to --metrics:", same)
    sys.exit(0 if same else 1)


def compare(a, b, rtol):
    la = [json.loads(l) for l in open(a)]
    lb = [json.loads(l) for l in open(b)]
    worst = max(abs(p["loss"] - q["loss"]) / abs(q["loss"])
                for p, q in zip(la, lb))
    same = len(la) == len(lb) and all(
        p["phase"] == q["phase"] and p["step"] == q["step"]
        for p, q in zip(la, lb))
    ok = same and worst <= rtol
    print(f"{len(la)} phase steps, phases in the same order: {same}; "
          f"worst relative loss difference {worst:.1e} {'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "tensorboard":
        tensorboard(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "reference":
        reference(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]),
                  *sys.argv[5:6], *map(float, sys.argv[6:7]))
    else:
        compare(sys.argv[2], sys.argv[3], float(sys.argv[sys.argv.index("--rtol") + 1]))
