"""Shared by the benchmarks: the machine's CPU name, and replacing one
"## " section of docs/performance.md atomically."""
import os
import platform
import re


def cpu_name():
    try:
        return re.search(r"model name\s*:\s*(.*)",
                         open("/proc/cpuinfo").read()).group(1)
    except (OSError, AttributeError):
        return platform.processor() or platform.machine()


def write_section(path, marker, section):
    """Replaces the section starting with `marker` (a "## " heading prefix)
    in `path` by `section`, or appends it."""
    text = open(path).read() if os.path.exists(path) else "# Performance\n\n"
    if marker in text:
        head, _, rest = text.partition(marker)
        tail = rest.split("\n## ", 1)
        text = head + section + ("\n## " + tail[1] if len(tail) > 1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    tmp = path + ".tmp"
    open(tmp, "w").write(text)
    os.replace(tmp, path)
