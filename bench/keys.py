"""Key service throughput: the KMA's KMIP listener beside PyKMIP's server, same machine, same work.

    python bench/keys.py [--rounds 15] [--duration 1] [--levels 1,16,64] [--workloads create,get]
                         [--no-pykmip | --baseline REV [--rotating] | --hsm]

Three workloads, each at 1, 16 and 64 concurrent agents (one TLS connection each, one request
at a time, as a drive does it):
- create: a new tape key: Create (AES-256, Name = a new volser), durable before the answer
  (the KMA: WAL + fsync through its group commit, with its audit event; PyKMIP: its SQLite
  database, each commit synced);
- create_activate: Create, then Activate of the new key: two round trips (PyKMIP 0.11 cannot
  parse an Activate that relies on the ID placeholder, so the one-message batch drives use is
  measured for the KMA only by its tests, not here);
- get: Get of an existing active key (the KMA also commits an audit event per Get before
  answering: keys leaving the KMA are audited).

Both servers are started once and kept warm; for each workload and agent count they are measured
in interleaved rounds (bench/rounds.py: A B, B A, ...; `--rounds` of `--duration` seconds each),
so that a machine whose speed drifts slows both alike. Each server's figures are the medians of
its rounds, with their range and the confidence interval of the median; the KMA/PyKMIP ratio is
the median of the per-round ratios. A median known only within more than 40% is listed under
"UNRELIABLE" and in the JSON's `unreliable` (exit status 2). A default run takes about 12 minutes
on a busy two-core machine; `--levels 16` about 5.

`--baseline REV` measures a before/after pair instead: REV is checked out into a temporary git
worktree and its KMA ("baseline") is run interleaved against this tree's ("kma"); the ratios are
then this tree's over REV's, printed as "x% faster (median within a% slower..b% faster,
spread y%)".

`--rotating` (with `--baseline`): this tree's KMA keeps a master key rotation running the whole
time (one after another, each re-wrapping every stored key in the background), so the ratios say
what a rotation costs the drives while it runs.

Both servers get byte-identical requests (KMIP 1.2) from the same client code, which runs in
two processes of threads so that the client is not what is measured. Each KMA agent is a real
enrolled agent (64 of them); PyKMIP's clients carry one certificate of a CA made for it. A failed
request counts as an error, not as throughput. Prints a line per cell, the issue's targets, and,
last, one JSON object: per server, workload and agent count the medians (`ops_per_s`, `p50_ms`,
`p99_ms`, `server_cpu_us_per_op`), `errors` over all rounds, `ops_per_s_rounds` and `spread`
(each figure's Spread); `ratios` (medians) and `ratio_spreads`; `cpu_ratios`, the second
server's CPU per operation over the first's (a Spread: it moves little with the machine's load);
the load average before the run and its highest during it.
"""

from __future__ import annotations

import argparse
import configparser
import functools
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, interleave, ratio_of, summarise, too_wide  # noqa: E402
from kma.agent.enroll import enroll, make_csr  # noqa: E402
from kma.crypto import create_cluster_ca, issue_server_certificate, sign_agent_csr  # noqa: E402
from kma.kmip import ttlv  # noqa: E402
from kma.kmip.client import key_template, parse_response, request_message  # noqa: E402
from kma.kmip.enums import ObjectType, Operation, Tag  # noqa: E402
from kma.services.keypool import low_water  # noqa: E402
from kms_client import Unauthenticated  # noqa: E402
from tests.support.kma_process import RunningKma, pool_keys  # noqa: E402

VERSION = (1, 2)
MAX_AGENTS = 64
# Enough Ready keys for a round at any level. A one-KMA cluster issues only keys a database backup
# holds (issue 12); the bench backs the pool up before each round, outside its timing, so a round
# measures the agent path (and the pool's refill) rather than backups.
POOL = 10_000
WORKLOADS = ("create", "create_activate", "get")
ROUNDS = 15  # per server and cell: many short rounds withstand a drifting machine best
DURATION_S = 1.0  # measured per round, after WARM_S of load that is not counted
WARM_S = 0.3
# A slow cell (PyKMIP at 64 agents takes seconds per request) gets longer rounds, as long as
# its requests take, within these bounds: each agent must begin a request inside the window.
WARM_MAX_S, WINDOW_MAX_S = 2.0, 3.0
SETTLE_MAX_S = 3.0
TARGETS = {"create_per_s_16": 1000, "get_per_s_16": 3000, "p99_ms_16": 10.0, "ratio_vs_pykmip": 10.0}


# --- requests (identical bytes for both servers) --------------------------------------------
def create_request(volser: str) -> bytes:
    create = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + key_template(volser)
    return request_message([(Operation.CREATE, create)], VERSION)


def activate_request(uid: str) -> bytes:
    return request_message([(Operation.ACTIVATE, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid))], VERSION)


def get_request(uid: str) -> bytes:
    return request_message([(Operation.GET, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid))], VERSION)


_UID = ttlv.text(Tag.UNIQUE_IDENTIFIER, "")[:4]  # tag and type of a Unique Identifier


def uid_of(response: bytes) -> str:
    at = response.find(_UID)
    length = int.from_bytes(response[at + 4 : at + 8], "big")
    return response[at + 8 : at + 8 + length].decode()


# --- one client connection ------------------------------------------------------------------
class Conn:
    def __init__(self, address: str, files: tuple[str, str, str]) -> None:
        ca, cert, key = files
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(ca)
        ctx.load_cert_chain(cert, key)
        host, _, port = address.rpartition(":")
        raw = socket.create_connection((host, int(port)), timeout=60)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = ctx.wrap_socket(raw, server_hostname=host)

    def exchange(self, data: bytes) -> bytes:
        self.sock.sendall(data)
        header = self._recv(8)
        return header + self._recv(ttlv.read_header(header)[2])

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return bytes(buf)


_STATUS = ttlv.enum(Tag.RESULT_STATUS, 0)[:8]  # a Result Status item's header


def ok(response: bytes) -> bool:
    """Every Result Status in the response is Success (a byte scan: the load generator must
    not be what limits the measurement; `parse_response` checks the same in make_keys)."""
    at = response.find(_STATUS)
    if at < 0:
        return False
    while at >= 0:
        if response[at + 8 : at + 12] != b"\0\0\0\0":
            return False
        at = response.find(_STATUS, at + 16)
    return True


def _worker(pipe: Any, address: str) -> None:
    """One client process, kept for the whole run, driven over `pipe`:
    ("cell", files, op, uids): open one connection per file (kept for the cell's rounds), "ready";
    ("round", tag): start a thread per connection, "ready"; then (start, end): run the threads,
    answer [(ops, errors, latencies in the window, every latency)] per connection; None: exit."""
    conns: list[Conn] = []
    op, gets = "", []
    while (job := pipe.recv()) is not None:
        if job[0] == "cell":
            for conn in conns:
                conn.sock.close()
            _, files, op, uids = job
            conns = [Conn(address, f) for f in files]
            gets = [get_request(uid) for uid in uids]
            pipe.send("ready")
            continue
        window = Window(op, gets, job[1])
        threads = [threading.Thread(target=window.drive, args=(i, c)) for i, c in enumerate(conns)]
        for t in threads:
            t.start()
        pipe.send("ready")
        window.start, window.end = pipe.recv()
        window.go.set()
        for t in threads:
            t.join()
        pipe.send(window.results)


class Window:
    """One round in one client process. Its agents start together at `go`, WARM_S before `start`
    (the queue filling up is not measured); every request begun in [start, end) is measured to
    its end, however long it takes. See LoadGenerator.round for why."""

    def __init__(self, op: str, gets: list[bytes], tag: str) -> None:
        self.op, self.gets, self.tag = op, gets, tag
        self.go = threading.Event()
        self.start = self.end = 0.0  # wall clock, the same for every process
        self.results: list[tuple[int, int, list[float], list[float]]] = []

    def step(self, conn: Conn, rng: random.Random, name: str) -> bool:
        """One unit of work: a new tape key (Create, + Activate), or a Get."""
        if self.op == "get":
            return ok(conn.exchange(rng.choice(self.gets)))
        created = conn.exchange(create_request(name))
        if self.op == "create" or not ok(created):
            return ok(created)
        return ok(conn.exchange(activate_request(uid_of(created))))

    def drive(self, i: int, conn: Conn) -> None:
        """One agent: one request at a time on its connection, as a drive does it."""
        rng = random.Random(f"{self.tag}-{i}")
        done = errors = n = 0
        lat: list[float] = []  # the requests begun in the window
        seen: list[float] = []  # every request of the round: how long this cell's requests take
        self.go.wait()
        while (now := time.time()) < self.end:
            n += 1
            began = time.perf_counter()
            try:
                good = self.step(conn, rng, f"{self.tag}{i:02d}{n:06d}")
            except (OSError, ValueError):
                good = False
            took = time.perf_counter() - began
            errors += not good  # a failure counts wherever it falls
            seen.append(took)
            if now >= self.start:
                lat.append(took)
                done += good
        self.results.append((done, errors, lat, seen))


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class LoadGenerator:
    """The agents' side for one server: client processes started once and kept warm for the
    whole run (two, so that the client is not what is measured; threads within each). Each cell
    (workload and agent count) opens its connections once (TLS handshakes outside any round)."""

    PROCESSES = 2

    def __init__(self, address: str, files: list[tuple[str, str, str]], server_pid: int) -> None:
        self.files, self.server_pid = files, server_pid
        ctx = mp.get_context("spawn")
        self.pipes = []
        self.procs = []
        for _ in range(self.PROCESSES):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(theirs, address), daemon=True)
            proc.start()
            self.pipes.append(ours)
            self.procs.append(proc)
        self.busy: list[Any] = []
        self.latency = 0.0  # the cell's median request time so far, in seconds

    def cell(self, op: str, uids: list[str], level: int) -> None:
        """Connect `level` agents for the rounds of workload `op` that follow."""
        shares = [self.files[p : level : self.PROCESSES] for p in range(self.PROCESSES)]
        for pipe, share in zip(self.pipes, shares, strict=True):
            pipe.send(("cell", share, op, uids))
        self._all_ready(self.pipes)
        self.busy = [pipe for pipe, share in zip(self.pipes, shares, strict=True) if share]
        self.latency = 0.0

    def round(self, duration: float, tag: str) -> dict[str, float]:
        """One round: WARM_S of load, then a measured window of `duration` seconds (both longer
        when the cell's requests take longer: see WARM_MAX_S).

        Throughput is the agents' count over the mean time of the requests begun in the window
        (Little's law: each agent has exactly one request in flight, with no pause between),
        not the requests that happen to end inside it: a server that answers its agents in
        waves (PyKMIP's threads under the GIL finish 16 requests together, a second apart)
        would otherwise read 16 or 32 per window by chance."""
        for p, pipe in enumerate(self.busy):
            pipe.send(("round", f"{tag}{p}"))
        self._all_ready(self.busy)
        warm = min(max(WARM_S, self.latency), WARM_MAX_S)
        duration = min(max(duration, 2 * self.latency), max(duration, WINDOW_MAX_S))
        start = time.time() + warm
        end = start + duration
        for pipe in self.busy:
            pipe.send((start, end))  # its agents start now, and count from `start`
        time.sleep(max(0.0, start - time.time()))
        cpu_before = cpu_seconds(self.server_pid)
        time.sleep(max(0.0, end - time.time()))
        cpu = cpu_seconds(self.server_pid) - cpu_before
        gathered = [pipe.recv() for pipe in self.busy]
        done = sum(d for part in gathered for d, _, _, _ in part)
        errors = sum(e for part in gathered for _, e, _, _ in part)
        lat = sorted(x for part in gathered for _, _, ls, _ in part for x in ls)
        level = sum(len(part) for part in gathered)
        per_s = level * done / sum(lat) if lat else math.nan  # no request begun: no figure
        self.latency = statistics.median(x for part in gathered for *_, seen in part for x in seen)

        def pct(q: float) -> float:
            return round(lat[min(len(lat) - 1, int(len(lat) * q))] * 1000, 2) if lat else math.nan

        return {
            "ops_per_s": round(per_s, 1) if lat else math.nan,
            "p50_ms": pct(0.5),
            "p99_ms": pct(0.99),
            "errors": errors,
            # the server's CPU (every thread, user + system) per unit of work, in the window
            "server_cpu_us_per_op": round(cpu / (per_s * duration) * 1e6, 1) if done else math.nan,
        }

    @staticmethod
    def _all_ready(pipes: list[Any]) -> None:
        for pipe in pipes:
            if not pipe.poll(120) or pipe.recv() != "ready":
                raise RuntimeError("a client process did not connect")

    def close(self) -> None:
        for pipe in self.pipes:
            pipe.send(None)
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()


# --- the two servers ------------------------------------------------------------------------
def start_kma(tmp: Path, source: Path | None = None, hsm: Path | None = None) -> tuple[RunningKma, str]:
    """A demo KMA with a key pool of POOL, filled and backed up before the run; under sustained
    load the pool refills while keys are issued, and that cost is measured too.
    `source`: a checkout of another commit whose KMA to run (the before/after mode); `hsm`: a file
    with the [hsm] table of its master key's token."""
    kma = RunningKma.demo_in(tmp / "kma-demo", test_clock=False, source=source, hsm=hsm)
    return kma, fill_pool(kma, POOL)


def fill_pool(kma: RunningKma, size: int) -> str:
    """Set the demo KMA's key pool to `size` and wait until it is full as the KMA keeps it (short by
    less than the refill's low water mark; Ready keys, or Generated until a backup holds them);
    returns the KMA's service address."""
    so = kma.client("so")
    so.update_kma("kma-dal-1", key_pool_size=size)
    deadline = time.time() + 120 * max(1.0, size / POOL)
    full = size - low_water(size) + 1  # a pool this full is not refilled (kma/services/keypool.py)
    while pool_keys(kma) < full:
        if time.time() > deadline:
            raise RuntimeError("the key pool did not fill")
        time.sleep(0.2)
    return next(k for k in so.list_kmas().items if k.id == "kma-dal-1").service_address


def pool_backer(backup_operator: Any) -> Callable[[], None]:
    """Between rounds: a database backup of the keys the pool made since the last one (keeping only
    the newest backup), so the next round has Ready keys. A KMA from before backups (a baseline
    commit) issues its keys at once and needs none."""
    last: list[str] = []

    def back_up() -> None:
        readiness = backup_operator.get_dashboard().backups
        if readiness is None or not readiness.keys_waiting_for_backup:
            return
        last.append(backup_operator.create_backup().id)
        while len(last) > 1:
            backup_operator.delete_backup(last.pop(0))

    back_up()
    return back_up


# A database backup of a large store takes minutes (1.1 GB at a million keys): far longer than a
# client's usual 15 s, after which the bench would give up on a backup the KMA is still writing.
BACKUP_TIMEOUT = 1800.0
BACKUP_FAILURES = 3  # in a row: then the bench stops, saying why, rather than issue from a dry pool


def exit_on_signals() -> None:
    """SIGTERM and SIGHUP end a bench as Ctrl-C does: its `finally` blocks and exit handlers run,
    so the KMAs it started stop with it (tests/support/kma_process.py stops any left running)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))


class KeptBackedUp:
    """A one-KMA cluster issues only keys a database backup holds (issue 12): as a frequent
    scheduled backup would, back the pool up now and whenever generated keys wait, keeping only
    the newest backup. Its cost is part of what an issuing bench measures on one KMA.

    A failed backup is reported at once and tried again; after BACKUP_FAILURES in a row the
    backups stop and `check` raises with the reason (the pool will run dry, and every request
    after that be refused, which would otherwise be all the bench says)."""

    def __init__(self, kma: Any, interval: float = 1.0) -> None:  # a RunningKma, or bench/api.py's
        self.kma = kma
        self.client = kma.client("backup", timeout=BACKUP_TIMEOUT)
        self.interval = interval
        self.failure: str | None = None
        self.last_made = "none yet"  # the newest backup's size and length, for a bench's progress lines
        self._stop = threading.Event()
        self._kept_id = self.client.create_backup().id
        self._thread = threading.Thread(target=self._run, name="bench-backups", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        failures = 0
        while not self._stop.wait(self.interval):
            try:
                readiness = self.client.get_dashboard().backups
                if readiness is not None and readiness.keys_waiting_for_backup:
                    began = time.monotonic()
                    made = self.client.create_backup()
                    self.last_made = f"{made.size / 1e6:,.0f} MB in {time.monotonic() - began:.0f} s"
                    self.client.delete_backup(self._kept_id)
                    self._kept_id = made.id
                failures = 0
            except Unauthenticated:  # a store filled for longer than a session lasts: sign in again
                self.client = self.kma.client("backup", timeout=BACKUP_TIMEOUT)
            except Exception as exc:  # noqa: BLE001 - any failure is reported, none ends this silently
                if self._stop.is_set():
                    return  # the bench is stopping (and perhaps its KMA): not a failure
                failures += 1
                print(f"bench backups: {exc!r} ({failures} failed in a row)", file=sys.stderr, flush=True)
                if failures >= BACKUP_FAILURES:
                    self.failure = f"the pool's backups failed {failures} times in a row, last: {exc!r}"
                    return

    def check(self) -> None:
        """Raise if the backups failed for good."""
        if self.failure is not None:
            raise RuntimeError(f"{self.failure}; a one-KMA cluster issues only backed-up keys")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)  # a backup under way is left to finish (or to the KMA's stop)


def enroll_agents(kma: RunningKma, service: str, tmp: Path, count: int) -> list[tuple[str, str, str]]:
    op = kma.client("op")
    files = []
    for i in range(1, count + 1):
        agent_id = f"bench-{i:02d}"
        op.create_agent(agent_id, "dallas", "backup-dallas", "bench drive")
        passphrase = op.new_enrollment_passphrase(agent_id).passphrase
        out = tmp / "agents" / agent_id
        enroll(service, agent_id, passphrase, out, kma.fingerprint)
        files.append((str(out / "ca.pem"), str(out / "agent.pem"), str(out / "agent.key")))
    return files


def start_pykmip(tmp: Path, count: int) -> tuple[subprocess.Popen[bytes], str, list[tuple[str, str, str]]]:
    """pykmip-server with an EC P-256 certificate, TLS1.2 auth suite, SQLite at `tmp`.

    PyKMIP's default operation policy lets only a key's creator use it, so all its connections
    carry one client certificate (the KMA's 64 agents share one key group: they see each other's
    keys); otherwise PyKMIP would refuse most Gets and the comparison would flatter the KMA.
    """
    root = tmp / "pykmip"
    (root / "policies").mkdir(parents=True)
    ca = create_cluster_ca("PyKMIP bench")
    server = issue_server_certificate(ca, "pykmip-server", ["127.0.0.1"])
    (root / "ca.pem").write_bytes(ca.cert_pem)
    (root / "server.pem").write_bytes(server.cert_pem)
    (root / "server.key").write_bytes(server.key_pem)
    key_pem, csr = make_csr("bench-agents")
    (root / "client.pem").write_bytes(sign_agent_csr(ca, csr, "bench-agents"))
    (root / "client.key").write_bytes(key_pem)
    files = [(str(root / "ca.pem"), str(root / "client.pem"), str(root / "client.key"))] * count
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = configparser.ConfigParser()
    conf["server"] = {
        "hostname": "127.0.0.1",
        "port": str(port),
        "certificate_path": str(root / "server.pem"),
        "key_path": str(root / "server.key"),
        "ca_path": str(root / "ca.pem"),
        "auth_suite": "TLS1.2",
        "policy_path": str(root / "policies"),
        "enable_tls_client_auth": "True",
        "logging_level": "WARNING",
        "database_path": str(root / "pykmip.db"),
    }
    with open(root / "server.conf", "w") as f:
        conf.write(f)
    server_bin = shutil.which("pykmip-server") or "pykmip-server"
    proc = subprocess.Popen(
        [server_bin, "-f", str(root / "server.conf"), "-l", str(root / "server.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=root,
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            Conn(f"127.0.0.1:{port}", files[0]).sock.close()
            return proc, f"127.0.0.1:{port}", files
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("pykmip-server did not start")


def make_keys(address: str, files: tuple[str, str, str], count: int, tag: str) -> list[str]:
    """Active keys for the Get workload (checked with the full response parser)."""
    conn = Conn(address, files)
    uids = []
    for i in range(count):
        [created] = parse_response(conn.exchange(create_request(f"{tag}{i:06d}")))
        uid = str(created.check().get(Tag.UNIQUE_IDENTIFIER))
        [activated] = parse_response(conn.exchange(activate_request(uid)))
        activated.check()
        uids.append(uid)
    conn.sock.close()
    return uids


@dataclass
class Server:
    """One contender, started once and kept warm for the whole run."""

    name: str
    pid: int
    address: str
    files: list[tuple[str, str, str]]  # one (ca, cert, key) per agent
    stop: Callable[[], None]
    before_round: Callable[[], None] = lambda: None  # outside the timing (a KMA: back its pool up)
    uids: list[str] = field(default_factory=list)  # active keys for the Get workload
    load: LoadGenerator | None = None
    rounds_run: int = 0

    def warm(self) -> None:
        self.uids = make_keys(self.address, self.files[0], 200, f"W{self.name[0].upper()}")
        self.load = LoadGenerator(self.address, self.files, self.pid)

    def cell(self, op: str, level: int) -> None:
        assert self.load is not None
        self.load.cell(op, self.uids, level)

    def round(self, duration: float) -> dict[str, float]:
        assert self.load is not None
        self.rounds_run += 1  # every round's new keys get names of their own
        return self.load.round(duration, f"{self.name[0].upper()}{self.rounds_run}-")

    def close(self) -> None:
        if self.load is not None:
            self.load.close()
        self.stop()


class KeptRotating:
    """`--rotating`: a master key rotation under way the whole time (docs/backups.md): started with
    the demo's quorum, a core security backup taken at once (a rotation supersedes it, and the pool's
    database backups wait for a new one), and the next rotation started as soon as one ends."""

    def __init__(self, kma: RunningKma) -> None:
        self.so = kma.client("so")
        self.credentials = [(m["name"], m["passphrase"]) for m in kma.demo["key_split"]["members"]][:3]
        self.core = Path(kma.data_dir).parent / "bench.kmacore"
        self.rotations = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-rotations", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.so.get_master_key().rotating:
                    self.so.rotate_master_key(credentials=self.credentials)
                    self.so.take_core_security_backup(self.core)
                    self.rotations += 1
            except Exception as exc:  # noqa: BLE001 - reported; the next try follows
                print(f"bench rotations: {exc!r}", file=sys.stderr, flush=True)
            self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        print(f"bench rotations: {self.rotations} master key rotations started", flush=True)


def kma_server(
    tmp: Path,
    agents: int,
    name: str = "kma",
    source: Path | None = None,
    hsm: Path | None = None,
    rotating: bool = False,
) -> Server:
    kma, service = start_kma(tmp / name, source, hsm)
    try:
        files = enroll_agents(kma, service, tmp / name, agents)
    except BaseException:
        kma.stop()
        raise
    assert kma.process is not None
    backer = pool_backer(kma.client("backup", timeout=BACKUP_TIMEOUT))
    if not rotating:
        return Server(name, kma.process.pid, service, files, kma.stop, backer)
    rotations = KeptRotating(kma)

    def stop() -> None:
        rotations.stop()
        kma.stop()

    return Server(name, kma.process.pid, service, files, stop, backer)


def pykmip_server(tmp: Path, agents: int) -> Server:
    proc, address, files = start_pykmip(tmp, agents)

    def stop() -> None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()

    return Server("pykmip", proc.pid, address, files, stop)


def settle(servers: list[Server]) -> Callable[[], None]:
    """Before each round: wait (at most SETTLE_MAX_S) until no server is still busy from the last
    round (a KMA refilling its key pool, say), so that work does not land in the next round."""

    def wait() -> None:
        for s in servers:
            s.before_round()
        deadline = time.monotonic() + SETTLE_MAX_S
        while time.monotonic() < deadline:
            before = [cpu_seconds(s.pid) for s in servers]
            time.sleep(0.1)
            if all(cpu_seconds(s.pid) - b < 0.1 * 0.1 for s, b in zip(servers, before, strict=True)):
                return

    return wait


def git_worktree(rev: str, into: Path) -> Path:
    """A checkout of `rev` (of the repository this bench is in) at `into`, for the baseline KMA."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(into), commit],
        capture_output=True,
        check=True,
    )
    return into


def remove_worktree(path: Path) -> None:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], capture_output=True, check=False
    )


# --- the run --------------------------------------------------------------------------------
def run(
    servers: list[Server], levels: list[int], workloads: list[str], rounds: int, duration: float
) -> dict[str, Any]:
    """Every (workload, agent count) cell: `rounds` interleaved rounds of every server; the
    per-round figures, summarised (medians, spreads), and the first server's ratios to the
    second's (the median of the per-round ratios)."""
    result: dict[str, Any] = {s.name: {op: {} for op in workloads} for s in servers}
    ratios: dict[str, float | None] = {}
    ratio_spreads: dict[str, dict[str, float]] = {}
    cpu_ratios: dict[str, dict[str, float]] = {}
    unreliable: list[str] = []
    loads = [os.getloadavg()[0]]
    for level in levels:
        for op in workloads:
            for s in servers:
                s.cell(op, level)
                s.before_round()
                s.round(duration)  # not measured: warms the cell up and learns its request time
            per_round = interleave(
                {s.name: functools.partial(s.round, duration) for s in servers},
                rounds,
                settle=settle(servers),
            )
            loads.append(os.getloadavg()[0])
            for s in servers:
                figures = per_round[s.name]
                summary = summarise([{k: v for k, v in f.items() if k != "errors"} for f in figures])
                summary["errors"] = sum(f["errors"] for f in figures)  # every round's, not a median
                summary["ops_per_s_rounds"] = [
                    None if math.isnan(x) else x for x in (f["ops_per_s"] for f in figures)
                ]
                result[s.name][op][str(level)] = summary
                print(f"{s.name:8} {op:15} {level:3} agents: {cell_line(summary)}", flush=True)
                throughput = Spread.of([f["ops_per_s"] for f in figures])
                if warning := too_wide(f"{s.name} {op} {level} agents, throughput", throughput):
                    unreliable.append(warning)
            if len(servers) == 2:
                a, b = (per_round[s.name] for s in servers)
                ratio = ratio_of(a, b, "ops_per_s")
                key = f"{op}_{level}"
                ratios[key] = None if math.isnan(ratio.median) else ratio.median
                ratio_spreads[key] = ratio.as_dict()
                if warning := too_wide(f"{servers[0].name} / {servers[1].name} {op} {level} agents", ratio):
                    unreliable.append(warning)
                # the CPU each spends per operation hardly depends on how busy the machine is
                cpu = ratio_of(b, a, "server_cpu_us_per_op")
                cpu_ratios[key] = cpu.as_dict()
                print(
                    f"{'':8} {op:15} {level:3} agents: throughput {servers[0].name} / {servers[1].name} "
                    f"{ratio}x; CPU per operation {servers[1].name} / {servers[0].name} {cpu}x",
                    flush=True,
                )
    result["ratios"] = ratios
    result["ratio_spreads"] = ratio_spreads
    result["cpu_ratios"] = cpu_ratios
    result["unreliable"] = unreliable
    result["load_average_max"] = round(max(loads), 2)
    return result


def cell_line(f: dict[str, Any]) -> str:
    """A cell's medians; throughput with its rounds' range and its median's confidence interval."""
    s = f["spread"]["ops_per_s"]
    return (
        f"{f['ops_per_s']:7.1f}/s (rounds {s['min']:g}..{s['max']:g}, median within {s['ci_pct']:g}%)"
        f"  p50 {f['p50_ms']:g} ms  p99 {f['p99_ms']:g} ms"
        f"  server CPU {f['server_cpu_us_per_op']:g} us/op  errors {f['errors']}"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds per server and cell")
    parser.add_argument("--duration", type=float, default=DURATION_S, help="seconds per round")
    parser.add_argument("--levels", default="1,16,64", help="agent counts, e.g. 16")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="a subset, e.g. get,create")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--no-pykmip", action="store_true", help="measure the KMA only")
    who.add_argument("--baseline", metavar="REV", help="compare with the KMA of commit REV instead of PyKMIP")
    who.add_argument(
        "--hsm", action="store_true", help="the KMA with its master key in SoftHSM2 against the software KMA"
    )
    parser.add_argument(
        "--rotating",
        action="store_true",
        help="with --baseline: this tree's KMA rotates its master key throughout, one rotation after another",
    )
    args = parser.parse_args()
    if args.rotating and not args.baseline:
        parser.error("--rotating compares with a KMA that does not rotate: give --baseline REV")
    args.levels = [int(x) for x in args.levels.split(",")]
    args.workloads = [w for w in args.workloads.split(",") if w]
    if not args.workloads or set(args.workloads) - set(WORKLOADS):
        parser.error(f"workloads are a subset of {','.join(WORKLOADS)}")
    if max(args.levels) > MAX_AGENTS:
        parser.error(f"at most {MAX_AGENTS} agents")
    if args.rounds < 3:
        parser.error("at least 3 rounds: a median of fewer says nothing about the spread")
    return args


def main() -> int:
    exit_on_signals()
    args = parse_args()
    busy = os.getloadavg()[0]  # before this run starts anything
    if busy > 0.5:
        print(f"note: load average {busy:.2f} before the run: other work shares these CPUs", flush=True)
    result: dict[str, Any] = {
        "load_average_before": round(busy, 2),
        "machine": {"cpus": os.cpu_count()},
        "rounds": args.rounds,
        "duration_s": args.duration,
        "kmip_version": "1.2",
    }
    servers: list[Server] = []
    baseline_tree: Path | None = None
    with tempfile.TemporaryDirectory(prefix="bench-keys-") as tmp_name:
        tmp = Path(tmp_name)
        agents = max(args.levels)
        try:
            if args.hsm:
                servers.append(kma_server(tmp, agents, "hsm", hsm=softhsm_table(tmp)))
            servers.append(kma_server(tmp, agents, rotating=args.rotating))
            if args.baseline:
                baseline_tree = git_worktree(args.baseline, tmp / "baseline-tree")
                result["commit"] = head_of(ROOT)
                result["baseline"] = {"rev": args.baseline, "commit": head_of(baseline_tree)}
                servers.append(kma_server(tmp, agents, "baseline", baseline_tree))
            elif not args.no_pykmip and not args.hsm:
                servers.append(pykmip_server(tmp, agents))
            for server in servers:
                server.warm()
            started = time.monotonic()
            result |= run(servers, args.levels, args.workloads, args.rounds, args.duration)
            result["run_s"] = round(time.monotonic() - started)
        finally:
            for server in servers:
                server.close()
            if baseline_tree is not None:
                remove_worktree(baseline_tree)
    summarise_targets(result)
    if args.baseline:
        for key, ratio in result["ratio_spreads"].items():
            print(
                f"{key}: {change(ratio['median'])} than {args.baseline} (ratio {ratio['median']:g}; "
                f"median within {change(ratio['ci_low'])}..{change(ratio['ci_high'])}, "
                f"spread {ratio['ci_pct']:g}%)"
            )
    for warning in result["unreliable"]:
        print(f"UNRELIABLE: {warning}", flush=True)
    print(json.dumps(result))
    failed = any(f["errors"] for s in servers for op in result[s.name].values() for f in op.values())
    return 1 if failed else 2 if result["unreliable"] else 0


def softhsm_table(tmp: Path) -> Path:
    """A SoftHSM2 token in `tmp` for the HSM KMA, and the file with its [hsm] table."""
    from tests.support.softhsm import softhsm

    hsm = softhsm(tmp / "softhsm")
    os.environ["SOFTHSM2_CONF"] = str(hsm.conf)  # the KMA process inherits it
    table = tmp / "hsm.toml"
    table.write_text(hsm.table())
    return table


def change(ratio: float) -> str:
    """A before/after ratio as a note says it: "4.0% faster", "2.5% slower"."""
    pct = (ratio - 1) * 100
    return f"{abs(pct):.1f}% {'faster' if pct >= 0 else 'slower'}"


def head_of(tree: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def summarise_targets(result: dict[str, Any]) -> None:
    """The issue's targets at 16 agents, from the medians."""
    kma, ratios = result["kma"], result["ratios"]
    c16, g16 = kma.get("create", {}).get("16"), kma.get("get", {}).get("16")
    if not (c16 and g16):
        return
    met = {
        "create_per_s_16": c16["ops_per_s"] >= TARGETS["create_per_s_16"],
        "get_per_s_16": g16["ops_per_s"] >= TARGETS["get_per_s_16"],
        "p99_ms_16": max(c16["p99_ms"], g16["p99_ms"]) <= TARGETS["p99_ms_16"],
    }
    if "pykmip" in result:
        at_16 = [ratios.get(f"{op}_16") for op in kma]
        met["ratio_vs_pykmip"] = all(r is not None and r >= TARGETS["ratio_vs_pykmip"] for r in at_16)
    result["targets"] = {"wanted": TARGETS, "met": met}
    print("targets at 16 agents: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in met.items()))


if __name__ == "__main__":
    sys.exit(main())
