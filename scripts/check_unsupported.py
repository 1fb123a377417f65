"""Fails when a lit log names UNSUPPORTED tests that test/unsupported-allowed.txt
does not list (with a reason), and when the log shows no lit summary at all.

usage: check_unsupported.py LIT_LOG ALLOW_LIST
"""
import re
import sys

log, allow_list = sys.argv[1:3]
allowed = {}
for line in open(allow_list):
    line = line.strip()
    if line and not line.startswith("#"):
        path, _, reason = line.partition(":")
        if not reason.strip():
            sys.exit(f"{allow_list}: '{path}' needs a reason")
        allowed[path.strip()] = reason.strip()
text = open(log, errors="replace").read()
if "Total Discovered Tests:" not in text:
    sys.exit(f"check_unsupported: {log} holds no lit summary; did lit run?")
# lit --show-unsupported: "Unsupported Tests (N):" then "  MPC :: path" lines.
found = set(re.findall(r"UNSUPPORTED: MPC :: (\S+)", text))
for block in re.findall(r"Unsupported Tests \(\d+\):\n((?:  \S+ :: \S+\n)+)",
                        text):
    found.update(re.findall(r":: (\S+)", block))
found = sorted(found)
counted = sum(int(n) for n in re.findall(r"^\s*Unsupported\s*:\s*(\d+)", text,
                                         re.M))
if counted != len(found):
    sys.exit(f"check_unsupported: lit counted {counted} unsupported tests but "
             f"{len(found)} are named in {log}; run lit with --show-unsupported")
unexpected = [t for t in found if t not in allowed]
for t in found:
    print(f"unsupported: {t}" + (f" (allowed: {allowed[t]})" if t in allowed
                                 else " (NOT ALLOWED)"))
if unexpected:
    sys.exit(f"check_unsupported: {len(unexpected)} test(s) UNSUPPORTED "
             "outside test/unsupported-allowed.txt: " + ", ".join(unexpected))
print(f"check_unsupported: {len(found)} unsupported, all allowed")
