"""What the media rules cost one write key: `judge_write` on a store of many tapes, without pools
and with 50, in alternating rounds (docs/media.md).

    python bench/media.py                       # 200,000 tapes, 50 pools
    python bench/media.py --tapes 20000 --pools 10

A demo store is made with `kma demo`, its tapes added (bench setup: rows written in one batch),
then the rules are asked, in-process, what they say of a Write Key for known tapes. Prints the
median and p99 of one judgement in microseconds, per configuration, then one JSON object.
Compare with a Write Key's p99 from bench/scale.py: the rules add their figure to it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kma.appliance import Appliance  # noqa: E402
from kma.cluster.store import open_store  # noqa: E402
from kma.datadir import DataDir  # noqa: E402
from kma.domain.actor import Actor  # noqa: E402
from kma.services import agents  # noqa: E402
from kma.services.media import media_pools
from kma.services.media.media_pools import PoolCache  # noqa: E402
from kma.services.media.media_rules import judge_write  # noqa: E402
from kma.store import Batch, Stmt  # noqa: E402
from tests.support.kma_process import run_kma  # noqa: E402

GROUPS = frozenset({"backup-dallas"})


def add_tapes(kma: Appliance, count: int) -> None:
    now = kma.clock.now()
    rows = [
        Stmt(
            "INSERT OR IGNORE INTO data_units (id, description, created_at, updated_at, writer_generation) "
            "VALUES (?, '', ?, ?, 'LTO-8')",
            (f"E{n:05d}" if n < 100_000 else f"F{n - 100_000:05d}", now, now),
        )
        for n in range(count)
    ]
    for start in range(0, len(rows), 10_000):
        kma.store.write(Batch(rows[start : start + 10_000]))


def add_pools(kma: Appliance, actor: Actor, count: int) -> None:
    media_pools.create_media_pool(kma, actor, "encrypted", pattern="E*", key_group_id="backup-dallas")
    media_pools.create_media_pool(kma, actor, "plain", pattern="N*", never_encrypted=True)
    for i in range(count - 2):
        media_pools.create_media_pool(kma, actor, f"range-{i:02d}", pattern=f"P{i:02d}0000-P{i:02d}9999")


def judged(kma: Appliance, tapes: int, calls: int) -> list[float]:
    rng = random.Random(7)
    out = []
    for _ in range(calls):
        n = rng.randrange(min(tapes, 100_000))
        started = time.perf_counter()
        judge_write(kma, "t10k-dal-01", GROUPS, f"E{n:05d}", None, False)
        out.append((time.perf_counter() - started) * 1e6)
    return out


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": round(statistics.median(ordered), 1),
        "p99_us": round(ordered[int(len(ordered) * 0.99)], 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tapes", type=int, default=200_000)
    parser.add_argument("--pools", type=int, default=50)
    parser.add_argument("--calls", type=int, default=5_000, help="judgements per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kma-media-bench-")) / "kma"
    run_kma("demo", "--data-dir", str(root), "--json")
    kma = Appliance(DataDir(root), open_store)
    try:
        actor = Actor("bench", "127.0.0.1")
        add_tapes(kma, args.tapes)
        agents.update_agent(kma, actor, "t10k-dal-01", drive_generation="LTO-8")
        runs: dict[str, list[float]] = {"no pools": [], f"{args.pools} pools": []}
        for round_ in range(args.rounds):
            for name in runs:
                kma.store.write(Batch([Stmt("DELETE FROM media_pools")]))
                if name != "no pools":
                    add_pools(kma, actor, args.pools)
                kma.part(PoolCache).forget()
                runs[name] += judged(kma, args.tapes, args.calls)
            print(f"round {round_ + 1}/{args.rounds}", flush=True)
        result: dict[str, Any] = {"tapes": args.tapes, **{k: summary(v) for k, v in runs.items()}}
        for name in runs:
            print(
                f"{name:10} median {result[name]['median_us']:8.1f} us   p99 {result[name]['p99_us']:8.1f} us"
            )
        print(json.dumps(result))
    finally:
        kma.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
