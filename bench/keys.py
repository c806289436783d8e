"""Key service throughput: the KMA's KMIP listener beside PyKMIP's server, same machine, same work.

    python bench/keys.py [--duration 5] [--levels 1,16,64] [--no-pykmip]

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

Both servers get byte-identical requests (KMIP 1.2) from the same client code, which runs in
two processes of threads so that the client is not what is measured. Each KMA agent is a real
enrolled agent (64 of them); PyKMIP's clients carry one certificate of a CA made for it. A failed
request counts as an error, not as throughput. Prints a table, the KMA/PyKMIP ratios, the
issue's targets, and, last, one JSON object.
"""

from __future__ import annotations

import argparse
import configparser
import json
import multiprocessing as mp
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kma.agent.enroll import (
    enroll,  # noqa: E402
    make_csr,  # noqa: E402
)
from kma.crypto import create_cluster_ca, issue_server_certificate, sign_agent_csr  # noqa: E402
from kma.kmip import ttlv  # noqa: E402
from kma.kmip.client import key_template, parse_response, request_message  # noqa: E402
from kma.kmip.enums import ObjectType, Operation, Tag  # noqa: E402
from tests.support.kma_process import RunningKma  # noqa: E402

VERSION = (1, 2)
MAX_AGENTS = 64
POOL = 1000  # the KMA's default key pool size
WORKLOADS = ("create", "create_activate", "get")
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


def _worker(
    address: str,
    files: list[tuple[str, str, str]],
    op: str,
    uids: list[str],
    start: float,
    end: float,
    tag: str,
    out: Any,
) -> None:
    """One process: a thread per connection; reports (ops, errors, latencies) in the window."""
    conns = [Conn(address, f) for f in files]
    results: list[tuple[int, int, list[float]]] = []

    def run(i: int, conn: Conn) -> None:
        rng = random.Random(f"{tag}-{i}")
        gets = [get_request(uid) for uid in uids]

        def step(n: int) -> bool:
            """One unit of work: a new tape key (Create, + Activate), or a Get."""
            if op == "get":
                return ok(conn.exchange(rng.choice(gets)))
            created = conn.exchange(create_request(f"{tag}{i:02d}{n:06d}"))
            if op == "create" or not ok(created):
                return ok(created)
            return ok(conn.exchange(activate_request(uid_of(created))))

        done = errors = 0
        lat: list[float] = []
        n = 0
        while time.time() < start:
            time.sleep(0.001)
        while time.time() < end:
            n += 1
            began = time.perf_counter()
            try:
                good = step(n)
            except (OSError, ValueError):
                good = False
            lat.append(time.perf_counter() - began)
            done += good
            errors += not good
        results.append((done, errors, lat))

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put([(d, e, lat) for d, e, lat in results])


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    address: str,
    files: list[tuple[str, str, str]],
    op: str,
    uids: list[str],
    level: int,
    duration: float,
    tag: str,
    server_pid: int,
) -> dict[str, float]:
    processes = 1 if level == 1 else 2
    queue: Any = mp.get_context("spawn").Queue()
    start = time.time() + 2.0 + level * 0.03  # time to connect (TLS handshakes) before the window
    end = start + duration
    procs = []
    for p in range(processes):
        share = files[p:level:processes]
        proc = mp.get_context("spawn").Process(
            target=_worker, args=(address, share, op, uids, start, end, f"{tag}{p}", queue)
        )
        proc.start()
        procs.append(proc)
    while time.time() < start:
        time.sleep(0.001)
    cpu_before = cpu_seconds(server_pid)
    time.sleep(max(0.0, end - time.time()))
    cpu = cpu_seconds(server_pid) - cpu_before
    gathered = [queue.get(timeout=duration + 120) for _ in procs]
    for proc in procs:
        proc.join()
    done = sum(d for part in gathered for d, _, _ in part)
    errors = sum(e for part in gathered for _, e, _ in part)
    lat = sorted(x for part in gathered for _, _, ls in part for x in ls)

    def pct(q: float) -> float:
        return round(lat[min(len(lat) - 1, int(len(lat) * q))] * 1000, 2) if lat else float("nan")

    return {
        "ops_per_s": round(done / duration, 1),
        "p50_ms": pct(0.5),
        "p99_ms": pct(0.99),
        "errors": errors,
        # the server's CPU (every thread, user + system) per unit of work, in the window
        "server_cpu_us_per_op": round(cpu / done * 1e6, 1) if done else float("nan"),
    }


# --- the two servers ------------------------------------------------------------------------
def start_kma(tmp: Path) -> tuple[RunningKma, str]:
    """A demo KMA with the product's default key pool (1,000), filled before the run; under
    sustained load the pool refills while keys are issued, and that cost is measured too."""
    kma = RunningKma.demo_in(tmp / "kma-demo", test_clock=False)
    so = kma.client("so")
    so.update_kma("kma-dal-1", key_pool_size=POOL)
    deadline = time.time() + 60
    while (this := next(k for k in so.list_kmas().items if k.id == "kma-dal-1")).pool_ready < POOL:
        if time.time() > deadline:
            raise RuntimeError("the key pool did not fill")
        time.sleep(0.2)
    return kma, this.service_address


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


# --- the run --------------------------------------------------------------------------------
def run_server(
    name: str,
    server_pid: int,
    address: str,
    files: list[tuple[str, str, str]],
    levels: list[int],
    duration: float,
    workloads: list[str],
) -> dict[str, dict[str, dict[str, float]]]:
    uids = make_keys(address, files[0], 200, f"W{name[0].upper()}")
    out: dict[str, dict[str, dict[str, float]]] = {op: {} for op in workloads}
    for level in levels:
        for op in workloads:
            tag = f"{name[0].upper()}{op[0]}{level}-"
            figures = measure(address, files, op, uids, level, duration, tag, server_pid)
            out[op][str(level)] = figures
            print(
                f"{name:7} {op:6} {level:3} agents: {figures['ops_per_s']:8.1f}/s  "
                f"p50 {figures['p50_ms']:6.2f} ms  p99 {figures['p99_ms']:7.2f} ms  "
                f"server CPU {figures['server_cpu_us_per_op']:6.0f} us/op  errors {figures['errors']}",
                flush=True,
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measurement")
    parser.add_argument("--levels", default="1,16,64")
    parser.add_argument("--no-pykmip", action="store_true", help="measure the KMA only")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="a subset, e.g. get,create")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    workloads = [w for w in args.workloads.split(",") if w]
    if not workloads or set(workloads) - set(WORKLOADS):
        parser.error(f"workloads are a subset of {','.join(WORKLOADS)}")
    agents = max(levels)
    if agents > MAX_AGENTS:
        parser.error(f"at most {MAX_AGENTS} agents")
    busy = os.getloadavg()[0]  # before this run starts anything
    if busy > 0.5:
        print(f"note: load average {busy:.2f} before the run: other work shares these CPUs", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-keys-") as tmp_name:
        tmp = Path(tmp_name)
        kma, service = start_kma(tmp)
        pykmip: subprocess.Popen[bytes] | None = None
        try:
            files = enroll_agents(kma, service, tmp, agents)
            assert kma.process is not None
            kma_pid = kma.process.pid
            busy = os.getloadavg()[0]
            if busy > 0.5:
                print(
                    f"note: load average {busy:.2f} before the run: other work shares these CPUs", flush=True
                )
            result: dict[str, Any] = {
                "load_average_before": round(busy, 2),
                "machine": {"cpus": os.cpu_count()},
                "duration_s": args.duration,
                "kmip_version": "1.2",
                "kma": run_server("kma", kma_pid, service, files, levels, args.duration, workloads),
            }
            if not args.no_pykmip:
                pykmip, paddress, pfiles = start_pykmip(tmp, agents)
                result["pykmip"] = run_server(
                    "pykmip", pykmip.pid, paddress, pfiles, levels, args.duration, workloads
                )
        finally:
            if pykmip is not None:
                pykmip.send_signal(signal.SIGINT)
                try:
                    pykmip.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pykmip.kill()
            kma.stop()
    summarise(result)
    print(json.dumps(result))
    failed = any(f["errors"] for server in ("kma", "pykmip") for op in result.get(server, {}).values()
                 for f in op.values())  # fmt: skip
    return 1 if failed else 0


def summarise(result: dict[str, Any]) -> None:
    kma = result["kma"]
    ratios: dict[str, float | None] = {}
    if "pykmip" in result:
        for op in kma:
            for level, figures in kma[op].items():
                theirs = result["pykmip"][op][level]["ops_per_s"]
                ratios[f"{op}_{level}"] = round(figures["ops_per_s"] / theirs, 1) if theirs else None
        print("KMA / PyKMIP throughput: " + ", ".join(f"{k} {v}x" for k, v in ratios.items()))
    result["ratios"] = ratios
    c16, g16 = kma.get("create", {}).get("16"), kma.get("get", {}).get("16")
    if c16 and g16:
        met = {
            "create_per_s_16": c16["ops_per_s"] >= TARGETS["create_per_s_16"],
            "get_per_s_16": g16["ops_per_s"] >= TARGETS["get_per_s_16"],
            "p99_ms_16": max(c16["p99_ms"], g16["p99_ms"]) <= TARGETS["p99_ms_16"],
        }
        if ratios:
            at_16 = [ratios.get(f"{op}_16") for op in kma]
            met["ratio_vs_pykmip"] = all(r is not None and r >= TARGETS["ratio_vs_pykmip"] for r in at_16)
        result["targets"] = {"wanted": TARGETS, "met": met}
        print("targets at 16 agents: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in met.items()))


if __name__ == "__main__":
    sys.exit(main())
