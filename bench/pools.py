"""What media pools cost a drive at a million keys: the agent path on one large store, with its media
pools and without them, in alternating rounds (issue 41: within 1.2x of the store without them).

    python bench/pools.py --keys 1000000 --tapes 200000 --store /work/scratch/scale-store --media-pools 50

The store is bench/scale.py's (kept in `--store`, built there if missing). Each round first sets
the store's pools: with, `--media-pools` pools (bench/scale.py `with_media_pools`: the store's
tapes in two of them, bound to the drives' key group; the others of other volsers, one never
encrypted); without, none. Its drives are LTO-8s in both, so both judge the generation and relabel
rules, which bench/media.py measures alone; what differs is the pools. One store rather than two
(as bench/scale.py compares a large store with a fresh one): the ratio is the pools', not the
size's. Prints a line per request kind, then, last, one JSON object.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.keys import exit_on_signals  # noqa: E402
from bench.rounds import finish, interleave, ratio_of, summarise, too_wide  # noqa: E402
from bench.scale import AGENT_OPS, Store, agent_round, with_media_pools  # noqa: E402
from tests.support.kma_process import RunningKma  # noqa: E402

# After the pools change: their writes' audit events indexed, the WAL checkpointed, before the
# round (which itself starts 5 s after its drives connect), so neither half inherits the other's.
SETTLE_S = 5.0


def without_media_pools(kma: RunningKma) -> None:
    so = kma.client("so")
    for pool in list(so.list_media_pools(limit=1000).items):
        so.delete_media_pool(pool.id)


def main() -> int:
    exit_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--tapes", type=int, default=4_000)
    parser.add_argument("--store", type=Path, default=None, help="bench/scale.py's kept store")
    parser.add_argument("--media-pools", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=7, help="rounds, alternating with and without")
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per agent measurement")
    # Get and Locate never consult the pools (kma/kmip/media.py judges the write paths): they
    # measure only the machine's noise here, so they run only when asked.
    parser.add_argument("--ops", default="write_key_existing,write_key_new", help=f"of {','.join(AGENT_OPS)}")
    args = parser.parse_args()
    ops = args.ops.split(",")
    if not set(ops) <= set(AGENT_OPS):
        parser.error(f"--ops: each of {', '.join(AGENT_OPS)}")
    store = Store(args.store or Path(f"/tmp/kma-scale-{args.keys}-{args.tapes}"), args.keys, args.tapes)
    setting = {"pools": lambda: with_media_pools(store.kma, args.media_pools)}
    setting["none"] = lambda: without_media_pools(store.kma)
    result: dict[str, Any] = {"keys": args.keys, "tapes": args.tapes, "media_pools": args.media_pools}
    unreliable: list[str] = []
    try:
        for op in ops:

            def measured(name: str, op: str = op) -> dict[str, float]:
                setting[name]()
                time.sleep(SETTLE_S)
                return agent_round(store, op, args.duration, f"{op}{time.time()}")

            runs = interleave({n: partial(measured, n) for n in setting}, args.rounds)
            p99 = ratio_of(runs["pools"], runs["none"], "p99_ms")
            result[op] = {n: summarise(r) for n, r in runs.items()} | {"p99_ratio": p99.as_dict()}
            unreliable += filter(None, [too_wide(f"{op} p99 pools/none", p99)])
            a, b = (summarise(runs[n]) for n in ("pools", "none"))
            print(
                f"{op:19} p99 none {b['p99_ms']:7.2f} ms  pools {a['p99_ms']:7.2f} ms  pools/none {p99}   "
                f"ops/s {b['ops_per_s']:5.0f} / {a['ops_per_s']:5.0f}",
                flush=True,
            )
    finally:
        with_media_pools(store.kma, args.media_pools)  # as bench/scale.py --media-pools left it
        store.kma.stop()
    result["p99_ratio_max"] = max(result[op]["p99_ratio"]["median"] for op in ops)
    return finish(result, unreliable)


if __name__ == "__main__":
    raise SystemExit(main())
