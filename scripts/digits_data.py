#!/usr/bin/env python3
"""Writes the 8x8 digits set shipped inside scikit-learn as .npy files:
train/test split 1437/360 (fixed), pixels scaled to [0, 1].

usage: digits_data.py OUT_DIR
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x, y = load_digits(return_X_y=True)
x = (x / 16.0).astype(np.float32)
y = y.astype(np.int64)
order = np.random.default_rng(0).permutation(len(y))
train, test = order[:1437], order[1437:]
for name, idx in (("train", train), ("test", test)):
    np.save(os.path.join(out, f"digits_{name}_x.npy"), x[idx])
    np.save(os.path.join(out, f"digits_{name}_y.npy"), y[idx])
print(f"digits: {len(train)} train, {len(test)} test samples in {out}")
