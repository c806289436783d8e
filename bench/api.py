"""Management API latency and throughput against a local KMA over HTTPS.

    python bench/api.py [--requests 200] [--clients 8] [--sign-ins 40] [--keep DIR]

Makes a demo KMA (`kma demo`), starts `kma serve` on loopback the way the manager's local mode
does, trusts its CA on first use and then times, through `kms_client` (so TLS with the pinned
CA, JSON parsing and typed results are all included):
- sign-in (Argon2id verification of the passphrase, a session row, an audit event);
- list keys, 100 per page, with the total;
- create: issue a key for a data unit (take one from the pool, activate it, audit; fsync'd).
Each is run sequentially by one client, then by N concurrent clients (one signed-in session
each). Latencies are per request (p50, p99); throughput is requests per second of wall time.
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.keys import KeptBackedUp, exit_on_signals  # noqa: E402
from kms_client import KmsClient, Trust  # noqa: E402

READY_TIMEOUT = 60.0


class LocalKma:
    """`kma demo` then `kma serve --management-port 0 --ready-file F` in a child process."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data_dir = root / "kma"
        command = [sys.executable, "-m", "kma", "demo", "--data-dir", str(self.data_dir), "--json"]
        demo = subprocess.run(command, capture_output=True, text=True, check=True, timeout=120)
        self.demo: dict[str, Any] = json.loads(demo.stdout)
        self.passphrases = {u["id"]: u["passphrase"] for u in self.demo["users"]}
        ready = root / "ready.json"
        self.console = open(root / "console.log", "w")  # noqa: SIM115  closed in stop()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kma",
                "serve",
                "--data-dir",
                str(self.data_dir),
                "--management-port",
                "0",
                "--service-port",
                "0",
                "--ready-file",
                str(ready),
            ],
            stdout=self.console,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + READY_TIMEOUT
        while not ready.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"kma serve did not start; see {root / 'console.log'}")
            time.sleep(0.05)
        info = json.loads(ready.read_text())
        self.address: str = info["management_address"]
        self.trust = Trust.fetch(self.address)
        if self.trust.fingerprint != info["ca_fingerprint"]:
            raise SystemExit("the CA fingerprint the KMA printed is not the one it serves")

    def client(self, user: str | None = None, timeout: float = 15) -> KmsClient:
        client = KmsClient(
            self.address, ca_pem=self.trust.ca_pem, ca_fingerprint=self.trust.fingerprint, timeout=timeout
        )
        if user is not None:
            client.sign_in(user, self.passphrases[user])
        return client

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.console.close()


def percentile(sorted_ms: list[float], p: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    if not sorted_ms:
        return float("nan")
    rank = max(1, min(len(sorted_ms), round(p / 100 * len(sorted_ms) + 0.5)))
    return sorted_ms[rank - 1]


def summarise(latencies_s: list[float], wall_s: float) -> dict[str, float]:
    ms = sorted(t * 1000 for t in latencies_s)
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "max_ms": round(ms[-1], 2),
        "per_s": round(len(ms) / wall_s, 1),
    }


Op = Callable[[KmsClient, int], object]


def timed(client: KmsClient, op: Op, count: int, worker: int) -> list[float]:
    out = []
    for i in range(count):
        start = time.perf_counter()
        op(client, worker * 1_000_000 + i)
        out.append(time.perf_counter() - start)
    return out


def run(clients: list[KmsClient], op: Op, per_client: int) -> dict[str, float]:
    """`per_client` calls of `op` on each client, all clients at once; one warm-up call each first."""
    for n, client in enumerate(clients):
        op(client, -1 - n)
    barrier = threading.Barrier(len(clients) + 1)

    def work(args: tuple[int, KmsClient]) -> list[float]:
        worker, client = args
        barrier.wait()
        return timed(client, op, per_client, worker)

    with ThreadPoolExecutor(len(clients)) as pool:
        futures = pool.map(work, enumerate(clients))
        barrier.wait()
        start = time.perf_counter()
        latencies = [t for result in futures for t in result]
        wall = time.perf_counter() - start
    return summarise(latencies, wall)


def main() -> int:
    exit_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--requests", type=int, default=200, help="list and create calls per run (sequential)"
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument(
        "--sign-ins", type=int, default=40, help="sign-ins per run (each costs an Argon2id check)"
    )
    parser.add_argument("--keep", type=Path, default=None, help="make the KMA in DIR and keep it")
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="kma-bench-api-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"Starting a demo KMA in {root} ...")
    kma = LocalKma(root)
    figures: dict[str, Any] = {
        "bench": "api",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "clients": args.clients,
    }
    backups: KeptBackedUp | None = None
    try:
        backups = KeptBackedUp(kma)  # a one-KMA cluster issues only backed-up keys
        admin = kma.client("op")
        per_client_units = [f"BENCH{n:03d}" for n in range(args.clients + 1)]
        for unit in per_client_units:
            admin.create_data_unit(unit, "Benchmark cartridge")
        kma_info = kma.client("admin").list_kmas().items[0]
        figures["key_pool_size"] = kma_info.key_pool_size
        pool = f"{kma_info.pool_ready}/{kma_info.key_pool_size}"
        print(f"KMA {kma_info.id} at {kma.address}; key pool {pool} ready")

        def sign_in(client: KmsClient, i: int) -> object:
            return client.sign_in("op", kma.passphrases["op"])

        def list_keys(client: KmsClient, i: int) -> object:
            page = client.list_keys(limit=100)
            assert len(page.items) == 100
            return page

        def issue(client: KmsClient, i: int) -> object:
            worker = i // 1_000_000 if i >= 0 else 0
            return client.issue_key("backup-dallas", per_client_units[min(worker, args.clients)])

        ops: list[tuple[str, Op, int]] = [
            ("sign_in", sign_in, args.sign_ins),
            ("list_keys_100", list_keys, args.requests),
            ("create_key", issue, args.requests),
        ]
        sequential_client = kma.client("op")
        concurrent_clients = [kma.client("op") for _ in range(args.clients)]
        for name, op, count in ops:
            one = run([sequential_client], op, count)
            many = run(concurrent_clients, op, max(1, count // args.clients))
            figures[name] = {"sequential": one, f"concurrent_{args.clients}": many}
            backups.check()  # a failed run says why, not only that issuing was refused
            print(
                f"{name:14} sequential    p50 {one['p50_ms']:8.2f} ms  p99 {one['p99_ms']:8.2f} ms  "
                f"{one['per_s']:8.1f}/s  (n={one['n']})"
            )
            print(
                f"{'':14} {args.clients} concurrent  "
                f"p50 {many['p50_ms']:8.2f} ms  p99 {many['p99_ms']:8.2f} ms  "
                f"{many['per_s']:8.1f}/s  (n={many['n']})"
            )
        kma_after = kma.client("admin").list_kmas().items[0]
        print(
            f"Key pool after the run: {kma_after.pool_ready}/{kma_after.key_pool_size} ready "
            f"(refilled in the background; an empty pool generates inline)"
        )
        figures["pool_ready_after"] = kma_after.pool_ready
    finally:
        if backups is not None:
            backups.stop()
        kma.stop()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
