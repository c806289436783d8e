"""A cluster of KMAs on loopback: key service across the cluster, replication lag, failover.

    python bench/cluster.py [--kmas 4] [--levels 16,64] [--rounds 5] [--duration 1]

Starts `--kmas` KMAs (a demo KMA made the first rqlite node, the others joined as voters; each
`kma serve` runs its own rqlited, mutual TLS from the cluster CA) and enrolls the drives spread
evenly over them, each drive talking KMIP to its own KMA (bench/keys.py's load generator, one per
KMA, all at once). Measures, in `--rounds` rounds per cell:
- new keys/s (Create of a new tape key) and Gets/s across the cluster at each drive count;
- replication lag under the Get load: the age of the oldest audit event waiting in each KMA's
  outbox (committed on the KMA, not yet in the cluster's store), sampled every 20 ms: p50/p99;
- leader failover: SIGKILL of the Raft leader's rqlited to the next successful management
  write on another KMA;
- drive failover: SIGKILL of a drive's KMA to that drive's next key from another KMA.
Targets (issue 11): >= 1,000 new keys/s and >= 2,000 Gets/s, lag p99 <= 100 ms, leader failover
<= 3 s, drive failover <= 1 s. The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.keys import Conn, LoadGenerator, create_request, make_keys, ok  # noqa: E402
from bench.rounds import summarise  # noqa: E402
from kma.agent.enroll import enroll  # noqa: E402
from kma.cluster.rqlited import RqliteNode  # noqa: E402
from kma.datadir import DataDir  # noqa: E402
from kms_client import ClusterUnavailable  # noqa: E402
from tests.support.cluster import add_node, files_of, first_node  # noqa: E402
from tests.support.kma_process import RunningKma  # noqa: E402

GIVE_UP_S = 60.0  # a failover that takes longer is reported as inf
TARGETS = {"create_per_s": 1000, "get_per_s": 2000, "lag_p99_ms": 100, "leader_failover_s": 3.0,
           "drive_failover_s": 1.0}  # fmt: skip


def service_of(kma: RunningKma) -> str:
    return str(json.loads((kma.data_dir.parent / "ready.json").read_text())["service_address"])


def rqlited_pid(kma: RunningKma) -> int:
    assert kma.process is not None
    children = Path(f"/proc/{kma.process.pid}/task/{kma.process.pid}/children").read_text().split()
    return next(int(p) for p in children if "rqlited" in Path(f"/proc/{p}/cmdline").read_text())


def leader_of(kma: RunningKma) -> str:
    client = RqliteNode(files_of(kma)).client()
    try:
        return str(next(n["id"] for n in client.get_json("/nodes", ver="2")["nodes"] if n.get("leader")))
    finally:
        client.close()


def kma_id(kma: RunningKma) -> str:
    return DataDir(kma.data_dir).identity().kma_id


class LagSampler(threading.Thread):
    """The age of the oldest entry of every KMA's outbox, every 20 ms."""

    def __init__(self, kmas: list[RunningKma]) -> None:
        super().__init__(daemon=True)
        self.paths = [files_of(k).folder / "outbox.db" for k in kmas]
        self.ages: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        conns = [sqlite3.connect(f"file:{p}?mode=ro", uri=True) for p in self.paths]
        while not self.stop.wait(0.02):
            now = time.time()
            for conn in conns:
                oldest = conn.execute("SELECT min(queued_at) FROM outbox").fetchone()[0]
                self.ages.append(0.0 if oldest is None else now - oldest)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000, 1) if ordered else 0.0


def measure(kmas: list[RunningKma], loads: list[LoadGenerator], uids: list[list[str]], op: str, level: int,
            rounds: int, duration: float) -> tuple[dict[str, Any], list[float]]:  # fmt: skip
    per = max(1, level // len(kmas))
    for load, keys in zip(loads, uids, strict=True):
        load.cell(op, keys, per)
    sampler = LagSampler(kmas)
    sampler.start()
    results: list[dict[str, float]] = []
    for r in range(rounds):
        parts: list[dict[str, float]] = [{} for _ in loads]

        def one(i: int, r: int = r, parts: list[dict[str, float]] = parts) -> None:
            parts[i] = loads[i].round(duration, f"C{op[0]}{level}r{r}k{i}-")

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(loads))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        results.append({
            "ops_per_s": sum(p["ops_per_s"] for p in parts),
            "p99_ms": max(p["p99_ms"] for p in parts),
            "errors": sum(p["errors"] for p in parts),
        })  # fmt: skip
    sampler.stop.set()
    sampler.join()
    return summarise(results), sampler.ages


def leader_failover(kmas: list[RunningKma]) -> tuple[float, RunningKma]:
    leader_id = leader_of(kmas[0])
    leader = next(k for k in kmas if kma_id(k) == leader_id)
    other = next(k for k in kmas if k is not leader)
    op = other.client("op")
    start = time.monotonic()
    os.kill(rqlited_pid(leader), signal.SIGKILL)
    n = 0
    while time.monotonic() - start < GIVE_UP_S:
        n += 1
        try:
            op.create_data_unit(f"FAILOVER{n:04d}", "leader failover")
            return time.monotonic() - start, leader
        except ClusterUnavailable:
            time.sleep(0.02)
    return math.inf, leader


def drive_failover(victim: RunningKma, other: RunningKma, files: tuple[str, str, str]) -> float:
    """Kill the drive's KMA; the drive goes to another KMA and asks for a new key."""
    start = time.monotonic()
    assert victim.process is not None
    victim.process.send_signal(signal.SIGKILL)
    n = 0
    while time.monotonic() - start < GIVE_UP_S:
        n += 1
        try:
            conn = Conn(service_of(other), files)
            if ok(conn.exchange(create_request(f"DF{n:05d}"))):
                conn.sock.close()
                return time.monotonic() - start
            conn.sock.close()
        except OSError:
            pass
        time.sleep(0.01)
    return math.inf


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kmas", type=int, default=4)
    parser.add_argument("--levels", default="16,64")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=1.0)
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    out: dict[str, Any] = {"kmas": args.kmas, "machine": {"cpus": os.cpu_count()},
                           "load_average_before": os.getloadavg()[0], "targets": TARGETS}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.umask(0o077)
        first, ca = first_node(tmp / "a")
        kmas = [first]
        loads: list[LoadGenerator] = []
        try:
            for i in range(2, args.kmas + 1):
                kmas.append(add_node(first, ca, tmp, f"kma-dal-{i}"))
                kmas[-1].start()
            per_kma = max(levels) // args.kmas
            files = [enroll_agents_on(k, tmp / f"agents-{i}", per_kma, i) for i, k in enumerate(kmas)]
            uids = [make_keys(service_of(k), files[i][0], 100, f"WK{i}") for i, k in enumerate(kmas)]
            for k, f in zip(kmas, files, strict=True):
                assert k.process is not None
                loads.append(LoadGenerator(service_of(k), f, k.process.pid))
            for op in ("create", "get"):
                for level in levels:
                    figures, ages = measure(kmas, loads, uids, op, level, args.rounds, args.duration)
                    out[f"{op}_{level}"] = figures
                    line = f"{op:6} {level:3} drives: {figures['ops_per_s']}/s"
                    if op == "get":
                        out[f"lag_{level}"] = {"p50_ms": pct(ages, 0.5), "p99_ms": pct(ages, 0.99)}
                        line += f"  replication lag p50 {pct(ages, 0.5)} ms p99 {pct(ages, 0.99)} ms"
                    print(line, flush=True)
            for load in loads:
                load.close()
            loads = []
            seconds, dead = leader_failover(kmas)
            out["leader_failover_s"] = round(seconds, 3) if math.isfinite(seconds) else None
            print(f"leader failover: {seconds:.2f} s", flush=True)
            # A cluster of four voters outlives one failure: the dead leader's KMA comes back
            # (its rqlited rejoins) before the next one dies.
            dead.restart()
            alive = [k for k in kmas if k is not dead]
            victim, other = alive[0], alive[1]
            seconds = drive_failover(victim, other, files[kmas.index(victim)][0])
            out["drive_failover_s"] = round(seconds, 3) if math.isfinite(seconds) else None
            print(f"drive failover: {seconds:.2f} s", flush=True)
        finally:
            for load in loads:
                load.close()
            for k in reversed(kmas):
                k.stop()
    out["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(out))
    return 0


def enroll_agents_on(kma: RunningKma, tmp: Path, count: int, index: int) -> list[tuple[str, str, str]]:
    """`count` drives enrolled at this KMA (their IDs distinct across the cluster)."""
    op = kma.client("op")
    found = []
    for i in range(1, count + 1):
        agent_id = f"drive-{index}-{i:02d}"
        op.create_agent(agent_id, "dallas", "backup-dallas", "bench drive")
        passphrase = op.new_enrollment_passphrase(agent_id).passphrase
        out = tmp / agent_id
        enroll(service_of(kma), agent_id, passphrase, out, kma.fingerprint)
        found.append((str(out / "ca.pem"), str(out / "agent.pem"), str(out / "agent.key")))
    return found


if __name__ == "__main__":
    sys.exit(main())
