"""A cluster of KMAs on loopback against one KMA: key service, replication lag, failover.

    python bench/cluster.py [--kmas 4] [--levels 16,64] [--rounds 5] [--duration 1]

Starts `--kmas` KMAs (a demo KMA made the first rqlite node, the others joined as voters; each
`kma serve` runs its own rqlited, mutual TLS from the cluster CA) and enrolls the drives spread
evenly over them, each drive talking KMIP to its own KMA (bench/keys.py's load generator, one per
KMA, all at once). Beside it runs one embedded KMA (a one-KMA cluster: its pool is backed up
before each of its rounds, outside the timing) with the same number of drives. On
bench/rounds.py's method, the cluster and the one KMA take turns (A B, B A, ...), `--rounds`
rounds per cell, so that each figure is a ratio to one KMA measured on the same machine at the
same time:
- the CPU per operation summed over every node of the cluster (its KMAs and their rqliteds) over
  one KMA's, per new key and per Get (issue 47: the measure that holds on a shared machine), and
  apart from it what the nodes spend with no load at all (polls: each KMA's cluster watch, Raft's
  heartbeats), in ms/s: part of every per-operation figure, in proportion to the time a round takes;
- new keys/s (Create of a new tape key) and Gets/s at each drive count: cluster/one-KMA ratios;
- replication lag under the cluster's Get load: the age of the oldest audit event waiting in each
  KMA's outbox (committed on the KMA, not yet in the cluster's store), sampled every 20 ms;
- leader failover: SIGKILL of the Raft leader's rqlited to the next successful management
  write on another KMA;
- drive failover: SIGKILL of a drive's KMA to that drive's next key from another KMA.
Targets (issue 47): summed CPU per new key <= 2x and per Get <= 1.5x one KMA's, lag p99 <= 100 ms
at 16 drives (issue 33's throughput ratios, 0.8x and 1.0x, are printed too); leader failover <=
3 s, drive failover <= 1 s (issue 11). The last line is one JSON object with every figure, the
ratios under "ratios".
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

from bench.keys import (  # noqa: E402
    BACKUP_TIMEOUT,
    Conn,
    LoadGenerator,
    cpu_seconds,
    create_request,
    enroll_agents,
    exit_on_signals,
    make_keys,
    ok,
    pool_backer,
    start_kma,
)
from bench.rounds import interleave, ratio_of, summarise, too_wide  # noqa: E402
from kma.agent.enroll import enroll  # noqa: E402
from kma.cluster.rqlited import RqliteNode  # noqa: E402
from kma.datadir import DataDir  # noqa: E402
from kms_client import ClusterUnavailable  # noqa: E402
from tests.support.cluster import add_node, files_of, first_node  # noqa: E402
from tests.support.kma_process import RunningKma  # noqa: E402

GIVE_UP_S = 60.0  # a failover that takes longer is reported as inf
IDLE_S = 10.0  # how long the idle CPU is measured, before the first cell
TARGETS = {
    "create_cpu_ratio": 2.0,
    "get_cpu_ratio": 1.5,
    "create_ratio": 0.8,
    "get_ratio": 1.0,
    "lag_p99_ms": 100,
    "leader_failover_s": 3.0,
    "drive_failover_s": 1.0,
}


def service_of(kma: RunningKma) -> str:
    return str(json.loads((kma.data_dir.parent / "ready.json").read_text())["service_address"])


def rqlited_pid(kma: RunningKma) -> int:
    """The KMA's rqlited: a child of whichever of its threads started it (a KMA that joined the
    cluster starts it from a thread of its own, not the main one)."""
    assert kma.process is not None
    tasks = Path(f"/proc/{kma.process.pid}/task")
    children = [p for task in tasks.iterdir() for p in (task / "children").read_text().split()]
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


class Cluster:
    """The cluster's side of a round: every KMA's load generator at once, figures summed."""

    def __init__(self, kmas: list[RunningKma], loads: list[LoadGenerator], uids: list[list[str]]) -> None:
        self.kmas, self.loads, self.uids = kmas, loads, uids
        self.rounds_run = 0
        self.ages: list[float] = []  # replication lag samples of the cell's rounds

    def cell(self, op: str, level: int) -> None:
        per = max(1, level // len(self.kmas))
        for load, keys in zip(self.loads, self.uids, strict=True):
            load.cell(op, keys, per)
        self.ages = []

    def round(self, duration: float) -> dict[str, float]:
        self.rounds_run += 1
        parts: list[dict[str, float]] = [{} for _ in self.loads]

        def one(i: int) -> None:
            parts[i] = self.loads[i].round(duration, f"C{self.rounds_run}k{i}-")

        sampler = LagSampler(self.kmas)
        sampler.start()
        # Where the cluster's CPU goes: the KMAs (Python: KMIP, the outbox, the shipper, reads)
        # against their rqliteds (Raft, the log's fsyncs, every node applying every statement).
        rqliteds = [rqlited_pid(k) for k in self.kmas]
        began, cpu_before = time.time(), [cpu_seconds(p) for p in rqliteds]
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(self.loads))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rqlited_cpu = sum(cpu_seconds(p) for p in rqliteds) - sum(cpu_before)
        sampler.stop.set()
        sampler.join()
        self.ages += sampler.ages
        ops = sum(p["ops_per_s"] for p in parts)
        kma_cpu = sum(p["server_cpu_us_per_op"] * p["ops_per_s"] for p in parts) / ops if ops else math.nan
        rqlited = rqlited_cpu * 1e6 / (ops * (time.time() - began)) if ops else math.nan
        return {
            "ops_per_s": ops,
            "p99_ms": max(p["p99_ms"] for p in parts),
            "errors": sum(p["errors"] for p in parts),
            # Each load generator measures its KMA's CPU in its window; rqlited over the whole round
            # (its warm-up too, under the same load), per the window's rate.
            "kma_cpu_us_per_op": kma_cpu,
            "rqlited_cpu_us_per_op": rqlited,
            "summed_cpu_us_per_op": kma_cpu + rqlited,
        }

    def idle_cpu(self) -> float:
        """Every node's CPU with no load (the KMAs and their rqliteds), in ms/s."""
        pids = [k.process.pid for k in self.kmas if k.process is not None]
        return idle_cpu([*pids, *(rqlited_pid(k) for k in self.kmas)])


class OneKma:
    """The embedded KMA's side: one load generator; its pool backed up before each round."""

    def __init__(self, kma: RunningKma, service: str, files: list[tuple[str, str, str]]) -> None:
        assert kma.process is not None
        self.kma = kma
        self.load = LoadGenerator(service, files, kma.process.pid)
        self.uids = make_keys(service, files[0], 100, "WK1")
        self.back_up = pool_backer(kma.client("backup", timeout=BACKUP_TIMEOUT))
        self.rounds_run = 0

    def cell(self, op: str, level: int) -> None:
        self.load.cell(op, self.uids, level)

    def round(self, duration: float) -> dict[str, float]:
        self.rounds_run += 1
        self.back_up()  # outside the measured window: a one-KMA cluster issues backed-up keys
        figures = self.load.round(duration, f"E{self.rounds_run}-")
        return {
            "ops_per_s": figures["ops_per_s"],
            "p99_ms": figures["p99_ms"],
            "errors": figures["errors"],
            "kma_cpu_us_per_op": figures["server_cpu_us_per_op"],
            "rqlited_cpu_us_per_op": 0.0,
            "summed_cpu_us_per_op": figures["server_cpu_us_per_op"],
        }

    def idle_cpu(self) -> float:
        assert self.kma.process is not None
        return idle_cpu([self.kma.process.pid])


def idle_cpu(pids: list[int]) -> float:
    """The CPU these processes spend in IDLE_S with no load, in ms/s."""
    before = sum(cpu_seconds(p) for p in pids)
    time.sleep(IDLE_S)
    return round((sum(cpu_seconds(p) for p in pids) - before) * 1000 / IDLE_S, 1)


def compare(
    cluster: Cluster, one: OneKma, op: str, level: int, rounds: int, duration: float
) -> dict[str, Any]:
    """One cell, the cluster and the one KMA in alternate rounds: both summaries, the ratios."""
    cluster.cell(op, level)
    one.cell(op, level)
    runs = interleave(
        {"cluster": lambda: cluster.round(duration), "one_kma": lambda: one.round(duration)}, rounds
    )
    ratio = ratio_of(runs["cluster"], runs["one_kma"], "ops_per_s")
    out: dict[str, Any] = {
        "cluster": summarise(runs["cluster"]),
        "one_kma": summarise(runs["one_kma"]),
        "ratio": ratio.as_dict(),
        # cluster over one KMA, round by round: every node's CPU per operation, summed
        "cpu_ratio": ratio_of(runs["cluster"], runs["one_kma"], "summed_cpu_us_per_op").as_dict(),
    }
    if warning := too_wide(f"{op} at {level} drives, cluster/one KMA", ratio):
        out["unreliable"] = warning
    if op == "get":
        out["lag"] = {"p50_ms": pct(cluster.ages, 0.5), "p99_ms": pct(cluster.ages, 0.99)}
    return out


def service_figures(
    cluster: Cluster, one: OneKma, levels: list[int], args: argparse.Namespace, out: dict[str, Any]
) -> dict[str, float]:
    """Every cell (new keys, then Gets, at each drive count) into `out`; returns the ratios."""
    ratios: dict[str, float] = {}
    for op in ("create", "get"):
        for level in levels:
            cell = compare(cluster, one, op, level, args.rounds, args.duration)
            out[f"{op}_{level}"] = cell
            ratios[f"{op}_{level}"] = cell["ratio"]["median"]
            line = (
                f"{op:6} {level:3} drives: cluster {cell['cluster']['ops_per_s']}/s, one KMA "
                f"{cell['one_kma']['ops_per_s']}/s, ratio {cell['ratio']['median']} "
                f"(rounds {cell['ratio']['min']}..{cell['ratio']['max']})"
            )
            if op == "get":
                ratios[f"lag_p99_ms_{level}"] = cell["lag"]["p99_ms"]
                line += f"; replication lag p50 {cell['lag']['p50_ms']} ms p99 {cell['lag']['p99_ms']} ms"
            print(line, flush=True)
            c, o, cpu = cell["cluster"], cell["one_kma"], cell["cpu_ratio"]
            ratios[f"{op}_cpu_{level}"] = cpu["median"]
            print(
                f"{'':17}CPU per op: cluster KMAs {c['kma_cpu_us_per_op']} us + rqliteds "
                f"{c['rqlited_cpu_us_per_op']} us; one KMA {o['kma_cpu_us_per_op']} us; summed "
                f"cluster/one KMA {cpu['median']}x (rounds {cpu['min']}..{cpu['max']}; target "
                f"{TARGETS[f'{op}_cpu_ratio']}x)",
                flush=True,
            )
            idle = out["idle_cpu_ms_per_s"]
            cell["idle_us_per_op"] = {
                "cluster": round(idle["cluster"] * 1000 / c["ops_per_s"]),
                "one_kma": round(idle["one_kma"] * 1000 / o["ops_per_s"]),
            }
            print(
                f"{'':17}of which what the nodes spend with no load (polls, heartbeats): cluster "
                f"{cell['idle_us_per_op']['cluster']} us, one KMA {cell['idle_us_per_op']['one_kma']} us",
                flush=True,
            )
            if "unreliable" in cell:
                print(f"UNRELIABLE: {cell['unreliable']}", flush=True)
    return ratios


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
    exit_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kmas", type=int, default=4)
    parser.add_argument("--levels", default="16,64")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=1.0)
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    out: dict[str, Any] = {
        "kmas": args.kmas,
        "machine": {"cpus": os.cpu_count()},
        "load_average_before": os.getloadavg()[0],
        "targets": TARGETS,
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.umask(0o077)
        first, ca = first_node(tmp / "a")
        kmas = [first]
        loads: list[LoadGenerator] = []
        embedded, service = start_kma(tmp / "one")
        one: OneKma | None = None
        try:
            one = OneKma(embedded, service, enroll_agents(embedded, service, tmp / "one", max(levels)))
            for i in range(2, args.kmas + 1):
                kmas.append(add_node(first, ca, tmp, f"kma-dal-{i}"))
                kmas[-1].start()
            per_kma = max(levels) // args.kmas
            files = [enroll_agents_on(k, tmp / f"agents-{i}", per_kma, i) for i, k in enumerate(kmas)]
            uids = [make_keys(service_of(k), files[i][0], 100, f"WK{i}") for i, k in enumerate(kmas)]
            for k, f in zip(kmas, files, strict=True):
                assert k.process is not None
                loads.append(LoadGenerator(service_of(k), f, k.process.pid))
            cluster = Cluster(kmas, loads, uids)
            idle = {"cluster": cluster.idle_cpu(), "one_kma": one.idle_cpu()}
            out["idle_cpu_ms_per_s"] = idle
            print(
                f"idle (no load, {IDLE_S:g} s): every node of the cluster {idle['cluster']} ms/s of CPU, "
                f"one KMA {idle['one_kma']} ms/s",
                flush=True,
            )
            out["ratios"] = service_figures(cluster, one, levels, args, out)
            for load in [*loads, one.load]:
                load.close()
            loads, one = [], None
            embedded.stop()
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
            for load in [*loads, *([one.load] if one else [])]:
                load.close()
            for k in [embedded, *reversed(kmas)]:
                k.stop()
    out["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(out))  # the ratios first among its keys' peers: out["ratios"]
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
