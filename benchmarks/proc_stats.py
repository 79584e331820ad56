"""What ``/proc`` tells of a process, for the benchmarks that measure a server beside them (Linux)."""

from __future__ import annotations

import os
from pathlib import Path


def process_cpu(pid: int) -> float:
    """User plus system CPU seconds a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_mb(pid: int, field: str) -> float:
    """A memory figure of ``/proc/PID/status`` (``VmRSS``, ``VmHWM``) in MB (NaN when absent)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")
