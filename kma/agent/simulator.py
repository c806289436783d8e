"""`kma agent simulate`: N tape drives mounting tapes at a given rate, for demos and load.

Each drive is a thread with its own KMIP connection (to a KMA of the agent's site first, the
others after: kmas.json from enrollment, kept current from the cluster by `KmaList`), mounting
tapes E00001, E00002, ... at random:

- a write mount asks for the tape's write key (a new key when the tape has none or its key's
  encryption period has ended) and gets it; some writes start from the beginning of the tape
  (relabel/erase), which lets the tape's old keys go and issues a new one;
- a read mount locates the tape's keys and gets the newest (a tape never written has none).

Mounts are paced to `rate` per second over all drives; the summary counts mounts, new keys,
failures, and mount latencies (the key manager's part of a mount; a real mount takes 12-17 s).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kma.agent.enroll import EnrollmentError
from kma.agent.renew import renew, renewal_due
from kma.kmip.client import KmipClient, KmipFailure
from kma.kmip.messages import BUSY, RETRY_LATER
from kma.kmip.tls import agent_context

RETRY_S = 30.0
RETRY_PAUSE_S = 0.25

log = logging.getLogger(__name__)


@dataclass
class Simulation:
    agent_dir: Path
    drives: int = 4
    rate: float = 2.0  # mounts per second, all drives together
    duration: float | None = 10.0
    mounts: int | None = None
    write_ratio: float = 0.3
    rewrite_ratio: float = 0.1  # of writes: from beginning of tape
    tapes: int = 50
    prefix: str = "S"  # simulated cartridges, never the demo's own E and A tapes
    seed: int | None = None


@dataclass
class Tally:
    mounts: int = 0
    writes: int = 0
    reads: int = 0
    keys_issued: int = 0
    rewrites: int = 0
    unwritten_reads: int = 0
    failures: int = 0
    failovers: int = 0  # a KMA could not be reached and the drive went on to the next
    retries: int = 0  # a KMA said "try again" (no Raft leader for a moment) and the drive did
    served_by: dict[str, int] = field(default_factory=dict)  # mounts per KMA service address
    errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def summary(self, elapsed: float) -> dict[str, Any]:
        lat = sorted(self.latencies)

        def pct(p: float) -> float:
            return round(lat[min(len(lat) - 1, int(len(lat) * p))] * 1000, 2) if lat else 0.0

        return {
            "mounts": self.mounts,
            "writes": self.writes,
            "reads": self.reads,
            "keys_issued": self.keys_issued,
            "rewrites": self.rewrites,
            "reads_of_unwritten_tapes": self.unwritten_reads,
            "failures": self.failures,
            "failovers": self.failovers,
            "retries": self.retries,
            "served_by": dict(self.served_by),
            "seconds": round(elapsed, 2),
            "mounts_per_second": round(self.mounts / elapsed, 2) if elapsed else 0,
            "latency_ms": {"p50": pct(0.5), "p99": pct(0.99)},
            "errors": self.errors[:5],
        }


def kma_order(agent_dir: Path) -> list[str]:
    """Service addresses, the agent's own site first (then the others), unlocked KMAs first."""
    info = json.loads((agent_dir / "agent.json").read_text())
    kmas = json.loads((agent_dir / "kmas.json").read_text()) if (agent_dir / "kmas.json").exists() else []
    site = info.get("site_id")
    ranked = sorted(kmas, key=lambda k: (k.get("status") != "ready", k.get("site_id") != site))
    addresses = [k["service_address"] for k in ranked]
    return addresses or [info["kma"]]


class KmaList:
    """The agent's KMAs in the order it asks them, kept current as the cluster changes.

    Every `refresh_s`, and whenever a drive has to fail over, it asks a KMA of its list for the
    cluster's KMAs now (`GET /v1/kmas` on the service listener, with the agent's certificate);
    when the answer's marker differs from the last one, kmas.json is rewritten and the drives use
    the new order from their next mount. A KMA added, removed, locked or unlocked is followed.
    """

    def __init__(self, agent_dir: Path, refresh_s: float = 5.0) -> None:
        self.agent_dir = agent_dir
        self.refresh_s = refresh_s
        self.context = agent_context(agent_dir / "ca.pem", agent_dir / "agent.pem", agent_dir / "agent.key")
        self.marker = ""
        self._order = kma_order(agent_dir)
        self._due = 0.0  # refresh at the first use
        self._lock = threading.Lock()

    def addresses(self) -> list[str]:
        if time.monotonic() >= self._due:
            self.refresh()
        return self._order

    def refresh(self) -> bool:
        """Ask the KMAs in order until one answers; True when the list changed. And renew the
        agent's certificate when it is due (kma/agent/renew.py): new connections present the new
        one, those open keep the old, which the KMA accepts until it expires."""
        with self._lock:
            self._due = time.monotonic() + self.refresh_s
            self._renew_if_due()
            for address in self._order:
                try:
                    answer = self._ask(address)
                except (OSError, ValueError, KeyError):
                    continue
                if answer["marker"] == self.marker:
                    return False
                self.marker = answer["marker"]
                # Whole or not at all: another simulator on this agent dir may be reading it now.
                fresh = self.agent_dir / f"kmas.json.{os.getpid()}.{threading.get_ident()}"
                fresh.write_text(json.dumps(answer["kmas"], indent=2) + "\n")
                os.replace(fresh, self.agent_dir / "kmas.json")
                self._order = kma_order(self.agent_dir)
                return True
            return False

    def _renew_if_due(self) -> None:
        if not renewal_due(self.agent_dir):
            return
        try:
            renew(self.agent_dir)
        except EnrollmentError as exc:  # tried again at the next refresh
            log.warning("the agent certificate could not be renewed: %s", exc)
            return
        self.context.load_cert_chain(str(self.agent_dir / "agent.pem"), str(self.agent_dir / "agent.key"))
        self._order = kma_order(self.agent_dir)

    def _ask(self, address: str) -> dict[str, Any]:
        host, _, port = address.rpartition(":")
        conn = http.client.HTTPSConnection(host.strip("[]"), int(port), context=self.context, timeout=5)
        try:
            conn.request("GET", "/v1/kmas")
            response = conn.getresponse()
            if response.status != 200:
                raise ValueError(f"{address} answered {response.status}")
            answer: dict[str, Any] = json.loads(response.read())
            return answer
        finally:
            conn.close()


class Drive:
    def __init__(self, name: str, agent_dir: Path, kmas: KmaList) -> None:
        self.name = name
        self.kmas = kmas
        self.context = kmas.context
        self.client: KmipClient | None = None
        self.address = ""  # the KMA the client is connected to

    def _with_failover(self, action: Callable[[KmipClient], Any], tally: Tally) -> Any:
        """Run `action` on the KMA the drive is connected to; if it cannot be reached, connect
        to the next in the agent's order (its own site first), as a drive does."""
        last: Exception | None = None
        known = self.kmas.addresses()
        ordered = known
        if self.client is not None and self.address in known:  # the current KMA first, then the rest
            ordered = [self.address, *(a for a in known if a != self.address)]
        elif self.client is not None:  # the KMA it is connected to has left the cluster
            self.client.close()
            self.client = None
        for address in ordered:
            try:
                if self.client is None:
                    self.client = KmipClient(address, self.context)
                    self.client.connect()
                    self.address = address
                result = action(self.client)
                with tally.lock:
                    tally.served_by[address] = tally.served_by.get(address, 0) + 1
                return result
            except (OSError, ConnectionError, KmipFailure) as exc:  # unreachable or busy: the next one
                if isinstance(exc, KmipFailure) and not exc.message.startswith(BUSY):
                    raise
                last = exc
                with tally.lock:
                    tally.failovers += address != ordered[-1]
                if self.client is not None:
                    self.client.close()
                self.client = None
        self.kmas.refresh()  # the cluster may have changed: the next mount asks the KMAs it has now
        raise ConnectionError(f"no KMA reachable: {last}")

    def mount(self, volser: str, write: bool, rewrite: bool, tally: Tally) -> None:
        """One mount's key requests; a refusal that says to try again (the cluster is electing a
        leader) is retried for up to `RETRY_S`, as a drive retries a key request before it fails
        the mount."""
        deadline = time.monotonic() + RETRY_S
        while True:
            try:
                return self._mount_once(volser, write, rewrite, tally)
            except KmipFailure as failure:
                if not failure.message.startswith(RETRY_LATER) or time.monotonic() > deadline:
                    raise
            with tally.lock:
                tally.retries += 1
            time.sleep(RETRY_PAUSE_S)

    def _mount_once(self, volser: str, write: bool, rewrite: bool, tally: Tally) -> None:
        def run(client: KmipClient) -> None:
            if write and rewrite:
                uid, _ = client.write_from_beginning(volser)
                client.get(uid)
                with tally.lock:
                    tally.rewrites += 1
                    tally.keys_issued += 1
            elif write:
                uid, issued = client.write_key(volser)
                client.get(uid)
                with tally.lock:
                    tally.keys_issued += int(issued)
            else:
                uids = client.locate(data_unit=volser, maximum=1)
                if uids:
                    client.get(uids[0])
                else:
                    with tally.lock:
                        tally.unwritten_reads += 1

        self._with_failover(run, tally)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


def simulate(sim: Simulation, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    rng = random.Random(sim.seed)
    kmas = KmaList(sim.agent_dir)
    tally = Tally()
    schedule = threading.Lock()
    start = time.monotonic()
    issued = [0]

    def next_slot() -> float | None:
        with schedule:
            n = issued[0]
            if sim.mounts is not None and n >= sim.mounts:
                return None
            due = start + n / sim.rate
            if sim.duration is not None and due - start >= sim.duration:
                return None
            issued[0] += 1
            return due

    def drive_loop(index: int) -> None:
        drive = Drive(f"drive-{index + 1}", sim.agent_dir, kmas)
        try:
            while (due := next_slot()) is not None:
                time.sleep(max(0.0, due - time.monotonic()))
                with schedule:
                    volser = f"{sim.prefix}{rng.randint(1, sim.tapes):05d}"
                    write = rng.random() < sim.write_ratio
                    rewrite = write and rng.random() < sim.rewrite_ratio
                began = time.perf_counter()
                try:
                    drive.mount(volser, write, rewrite, tally)
                    ok = True
                except (KmipFailure, ConnectionError) as exc:
                    ok = False
                    with tally.lock:
                        tally.failures += 1
                        tally.errors.append(f"{drive.name} {volser}: {exc}")
                with tally.lock:
                    tally.mounts += 1
                    tally.writes += int(write)
                    tally.reads += int(not write)
                    tally.latencies.append(time.perf_counter() - began)
                if progress is not None and ok:
                    progress(f"{drive.name} mounted {volser} for {'writing' if write else 'reading'}")
        finally:
            drive.close()

    threads = [threading.Thread(target=drive_loop, args=(i,), daemon=True) for i in range(sim.drives)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tally.summary(time.monotonic() - start)
