"""Two sites and a witness (the white paper's layout): how long a loss interrupts the cluster.

    python bench/sites.py [--rounds 3]

Starts Dallas and Boston with two KMAs each and a witness at a third site (tests/support/two_sites.py:
real `kma serve` processes on loopback, each running its rqlited; one demo agent per site enrolled
at its own site, its tapes written). Then, in `--rounds` rounds:
- leader loss: SIGKILL of the Raft leader's `kma serve` and rqlited, to the next successful
  management write through a surviving KMA; and to a Boston drive's next new write key (a drive
  retries a "try again" refusal while the cluster elects a leader);
- site loss: SIGKILL of both Boston KMAs (and their rqlited), to the next management write through
  Dallas (possible thanks to the witness: 3 of 5 voters), and to a Boston drive's next existing key
  from Dallas (it fails over in the agent's order: its own site first).
Every killed node is started again before the next round. The last line is one JSON object with
every figure (seconds; median and max over the rounds) and the load average.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kma.agent.simulator import Drive, KmaList, Tally  # noqa: E402
from tests.support.two_sites import SITES, TwoSites, management_write, two_sites  # noqa: E402
from tests.support.witness import crash  # noqa: E402

GIVE_UP_S = 60.0


def until(done: Callable[[], bool], start: float) -> float:
    """Seconds from `start` until `done()` first holds (inf after GIVE_UP_S)."""
    while time.monotonic() - start < GIVE_UP_S:
        if done():
            return time.monotonic() - start
        time.sleep(0.02)
    return math.inf


def drive_gets(agent: Path, volser: str, write: bool) -> Callable[[], bool]:
    """One mount of a simulated drive (the agent's KMA order, failover, retries of 'try again')."""
    drive = Drive("bench", agent, KmaList(agent))

    def mount() -> bool:
        try:
            drive.mount(volser, write, False, Tally())
        except Exception:  # noqa: BLE001  unreachable or refused: the drive asks again
            return False
        finally:
            drive.close()
        return True

    return mount


def leader_loss(sites: TwoSites, n: int) -> dict[str, float]:
    leader = sites.leader()
    survivor = next(k for i, k in sites.kmas.items() if i != leader)
    start = time.monotonic()
    crash(sites.nodes()[leader].process)
    try:
        write = until(lambda: management_write(survivor, f"bench-leader-{n}"), start)
        start = time.monotonic()
        key = until(drive_gets(sites.agents["boston"], f"L{n:05d}", write=True), start)
    finally:
        sites.nodes()[leader].stop()
        sites.restart([leader])
    return {"management_write_s": write, "new_key_after_s": key}


def site_loss(sites: TwoSites, n: int) -> dict[str, float]:
    boston = list(SITES["boston"])
    dallas = sites.kmas[SITES["dallas"][0]]
    start = time.monotonic()
    for kma_id in boston:
        crash(sites.kmas[kma_id].process)
    try:
        key = until(drive_gets(sites.agents["boston"], "B00001", write=False), start)
        write = until(lambda: management_write(dallas, f"bench-site-{n}"), start)
    finally:
        for kma_id in boston:
            sites.kmas[kma_id].stop()
        sites.restart(boston)
    return {"existing_key_s": key, "management_write_s": write}


def stats(rounds: list[dict[str, float]]) -> dict[str, Any]:
    return {
        name: {
            "median": round(statistics.median(r[name] for r in rounds), 3),
            "max": round(max(r[name] for r in rounds), 3),
        }
        for name in rounds[0]
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("KMA_RQLITED", str(Path.home() / ".cache/kms-manager/rqlite-v8.43.4/rqlited"))
    leader: list[dict[str, float]] = []
    site: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="kms-bench-sites-") as tmp, two_sites(Path(tmp)) as sites:
        for n in range(1, args.rounds + 1):
            leader.append(leader_loss(sites, n))
            print(f"round {n}: leader loss {json.dumps(leader[-1])}", flush=True)
            site.append(site_loss(sites, n))
            print(f"round {n}: Boston lost {json.dumps(site[-1])}", flush=True)
    result = {
        "bench": "sites",
        "layout": "2 sites x 2 KMAs + witness",
        "rounds": args.rounds,
        "leader_loss": stats(leader),
        "site_loss": stats(site),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
