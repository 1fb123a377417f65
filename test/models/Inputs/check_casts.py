"""Asserts the cast discipline of mpc-insert-casts on `mpc explain --json`
reports: no cast fed by a cast (back-to-back pair) and no more casts than
precision-boundary edges.

usage: check_casts.py REPORT.json...
"""
import json
import os
import sys

ok = True
for path in sys.argv[1:]:
    t = json.load(open(path))["totals"]
    good = t["back_to_back_casts"] == 0 and t["casts"] <= t["boundary_edges"]
    ok &= good
    print(f"{os.path.basename(path)}: {t['casts']} casts at "
          f"{t['boundary_edges']} boundary edges, "
          f"{t['back_to_back_casts']} back-to-back, "
          f"{100 * t['low_precision_flop_share']:.1f}% of FLOPs low precision "
          f"{'ok' if good else 'FAIL'}")
sys.exit(0 if ok else 1)
