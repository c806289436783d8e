"""A look at a transfer job's memory inside the KMA, for bench/transfer.py only (docs/transfer.md,
"Memory"): with KMA_BENCH_HEAP set to a file, each transfer job runs under tracemalloc and, at each
of its phases and at its end, appends a JSON line there: the job, the phase, the traced Python
memory now and at its peak, and where the most of it was allocated; plus the process's resident
memory split into anonymous and file-backed (/proc). Off (no cost) unless the variable is set;
tracemalloc slows the job down, so the bench's timings come from runs without it."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

ENV = "KMA_BENCH_HEAP"
TOP = 12  # allocation sites shown per look


def watching() -> bool:
    return bool(os.environ.get(ENV))


def start() -> None:
    if watching() and not tracemalloc.is_tracing():
        tracemalloc.start()
        tracemalloc.reset_peak()


def look(job_id: str, phase: str) -> None:
    """One line about the heap now (a no-op unless the bench asked for it)."""
    if not watching() or not tracemalloc.is_tracing():
        return
    now, peak = tracemalloc.get_traced_memory()
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    top = [
        {"where": str(stat.traceback[0]), "mib": round(stat.size / 2**20, 2), "blocks": stat.count}
        for stat in snapshot.statistics("lineno")[:TOP]
    ]
    status = Path("/proc/self/status").read_text().splitlines() if Path("/proc/self/status").exists() else []
    rss = {
        line.split(":")[0]: round(int(line.split()[1]) / 1024, 1)
        for line in status
        if line.startswith(("VmRSS", "VmHWM", "RssAnon", "RssFile"))
    }
    line = {
        "job": job_id,
        "phase": phase,
        "traced_mib": round(now / 2**20, 1),
        "traced_peak_mib": round(peak / 2**20, 1),
        **rss,
        "top": top,
    }
    with open(os.environ[ENV], "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
