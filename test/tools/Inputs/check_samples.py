"""Checks `mpc train --samples` grids: PNG files and TensorBoard images.

usage: check_samples.py WORK
WORK has seed0/generator.onnx (the untrained generator of
scripts/dcgan_digits.py), z.npy, out/ (the PNGs) and tb/ (the event file).
Step 1's grid must show the untrained generator's images of the first 32
rows of z (the samples come from the last phase's forward, whose
generator weights step 1 has not updated yet), as onnxruntime computes
them: cell k at row k // 6, column k % 6, 9 pixels apart, 1-pixel border.
"""
import glob
import os
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image

work = sys.argv[1]
files = sorted(os.listdir(f"{work}/out"))
print("files:", " ".join(files))
grid = np.asarray(Image.open(f"{work}/out/fake-000001.png"))
print(f"grid: {grid.shape[1]}x{grid.shape[0]} {Image.open(f'{work}/out/fake-000001.png').mode}")
z = np.load(f"{work}/z.npy")[:32]
sess = ort.InferenceSession(f"{work}/seed0/generator.onnx",
                            providers=["CPUExecutionProvider"])
images = sess.run(None, {"z": np.concatenate([z] * 16)[:500]})[0][:32]
want = np.rint(np.clip(images[:, 0], 0, 1) * 255).astype(int)
worst = 0
for k in range(32):
    r, c = divmod(k, 6)
    cell = grid[1 + 9 * r:9 + 9 * r, 1 + 9 * c:9 + 9 * c].astype(int)
    worst = max(worst, int(np.abs(cell - want[k]).max()))
borders = grid[0::9, :].max() == 0 and grid[:, 0::9].max() == 0
print(f"step 1 cells vs onnxruntime: worst {worst} grey levels; borders black: {borders}")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(glob.glob(f"{work}/tb/events.*")[0],
                       size_guidance={"images": 0})
acc.Reload()
events = acc.Images("samples/fake")
same = all(e.encoded_image_string ==
           open(f"{work}/out/fake-{e.step:06d}.png", "rb").read()
           for e in events)
print(f"tensorboard: samples/fake at steps {[e.step for e in events]}, "
      f"{events[0].width}x{events[0].height}, same bytes as the PNGs: {same}")
