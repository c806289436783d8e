"""Transfer files at scale (issue 40): import, export and import again of N data units, and the
key service's Get p99 while an export runs against its p99 idle.

    python bench/transfer.py                  # 10,000 data units
    python bench/transfer.py --tapes 100000

Two demo KMAs (two clusters, real processes over TLS). The sending cluster is filled by importing
a file of N tapes written by a third identity the bench holds (registered there as a partner):
that import is the first figure. Then an Operator exports the N tapes to the second cluster,
which previews and imports the file. Meanwhile one enrolled drive (a process of its own, so that
this one's JSON work on the files is not counted as the KMA's) Gets a key of the sending cluster
in a loop: its p99 right after the big import, during the export (three in a row for up to 10,000
tapes), idle (10 s after the export, once the background work the import left has settled), and
during a second import of N other tapes at the sending cluster; target: during the export within
1.5x of idle; up to 30,000 tapes the export and idle windows are measured three times (three
ratios). Every import's file goes up as its own streamed request (`POST /transfer-uploads`, from a
file on disk) and the preview and the import name the upload. The export and the partner's import
run as transfer jobs (the export's file written to the store as it is made and downloaded to a file
as it is read; the import reading its file a chunk at a time), and the peak resident memory (VmHWM,
reset before each) of the sending KMA during the export and of the receiving KMA during the upload
and preview and during the upload and import is printed, with its RSS before: at 10,000 and at
100,000 data units it should stay about the same. Prints a table, then one JSON object. Figures
from a shared machine are noisy.

    python bench/transfer.py --tapes 100000 --heap   # where the export's memory goes

`--heap` runs the KMAs with KMA_BENCH_HEAP (kma/services/transfer/heap_look.py): each transfer
job's phases are looked at under tracemalloc, and the looks at the export job are printed. Its
timings are not the KMA's usual ones (tracemalloc slows it down).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kma.crypto.transfer import Identity  # noqa: E402
from tests.support.agents import demo_passphrase, enroll, kmip  # noqa: E402
from tests.support.kma_process import RunningKma  # noqa: E402
from tests.support.transfer import file_from, one_tape, register, text_of  # noqa: E402

DAY = 86400
LONG_S = 900  # a synchronous import of 100,000 data units answers in a minute or two


def timed(what: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = what()
    return time.perf_counter() - start, out


def _probe(agent_dir: Path, key_id: str, conn: Connection) -> None:
    """The drive, in a process of its own: its latencies are the KMA's, not those of this process
    (which parses and builds the transfer files, tens of MiB of JSON, while it measures)."""
    samples: list[tuple[float, float]] = []
    with kmip(agent_dir) as drive:
        while not conn.poll():
            start = time.perf_counter()
            drive.get(key_id)
            samples.append((start, (time.perf_counter() - start) * 1000))
    conn.send(samples)


class GetProbe:
    """One drive Getting one key again and again; latencies in ms, by window (time.perf_counter is
    the system's monotonic clock, the same in both processes)."""

    def __init__(self, agent_dir: Path, key_id: str) -> None:
        self._conn, child = multiprocessing.get_context("spawn").Pipe()
        self._process = multiprocessing.get_context("spawn").Process(
            target=_probe, args=(agent_dir, key_id, child), daemon=True
        )
        self._process.start()
        self.windows: dict[str, tuple[float, float]] = {}

    def measure(self, name: str, during: Callable[[], Any] | None, seconds: float = 5.0) -> Any:
        start = time.perf_counter()
        out = during() if during else time.sleep(seconds)
        self.windows[name] = (start, time.perf_counter())
        return out

    def finish(self) -> dict[str, list[float]]:
        """The latencies of each window."""
        self._conn.send("stop")
        samples: list[tuple[float, float]] = self._conn.recv()
        self._process.join()
        return {
            name: [ms for at, ms in samples if start <= at < end]
            for name, (start, end) in self.windows.items()
        }


def _status(kma: RunningKma, field: str) -> float:
    """A field of the KMA process's /proc status (VmRSS, VmHWM), in MiB."""
    assert kma.process is not None
    for line in Path(f"/proc/{kma.process.pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)


def peak_reset(kma: RunningKma) -> float:
    """Starts measuring the KMA's peak resident memory afresh; its resident memory now, in MiB."""
    assert kma.process is not None
    Path(f"/proc/{kma.process.pid}/clear_refs").write_text("5")  # resets VmHWM to VmRSS
    return _status(kma, "VmRSS")


def peak(kma: RunningKma) -> float:
    return _status(kma, "VmHWM")


def p99(ms: list[float]) -> float:
    return statistics.quantiles(ms, n=100)[98] if len(ms) >= 2 else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tapes", type=int, default=10_000)
    parser.add_argument("--heap", action="store_true", help="look at the export job's heap (slower)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as tmp_dir:
        tmp = Path(tmp_dir)
        if args.heap:
            os.environ["KMA_BENCH_HEAP"] = str(tmp / "heap.jsonl")  # the KMAs started now inherit it
        sender = RunningKma.demo_in(tmp / "sender", test_clock=False)
        receiver = RunningKma.demo_in(tmp / "receiver", test_clock=False)
        try:
            return run(args.tapes, tmp, sender, receiver)
        finally:
            sender.stop()
            receiver.stop()


def sent(client: Any, text: str, folder: Path) -> str:
    """The file sent as the manager and `kma transfer` send it (from a file on disk, its own
    streamed request); its upload ID."""
    path = folder / f"upload-{time.monotonic_ns()}.kmstransfer"
    path.write_text(text, encoding="utf-8")
    try:
        return str(client.upload_transfer_file(path).id)
    finally:
        path.unlink()


def receive(receiver: RunningKma, file: Path) -> dict[str, float]:
    """The partner uploads the file and previews it, then uploads it again and imports it as a job:
    their times, and the receiving KMA's resident memory before and its peak during each."""
    r_so = receiver.client("so", timeout=LONG_S)
    rss = peak_reset(receiver)
    preview_s, preview = timed(lambda: r_so.preview_transfer_import(r_so.upload_transfer_file(file).id))
    preview_peak = peak(receiver)
    # The import is measured in a KMA started afresh, as before uploads (the interpreter keeps what
    # it took: a reset peak would start from the preview's), so that the figures compare.
    receiver.stop()
    receiver.start()
    r_so = receiver.client("so", timeout=LONG_S)
    import_rss = peak_reset(receiver)
    import_s, job = timed(
        lambda: r_so.follow_transfer_job(
            r_so.start_transfer_import(r_so.upload_transfer_file(file).id, "moved"), poll_s=0.2
        )
    )
    assert job.imported is not None
    return {
        "preview_s": round(preview_s, 1),
        "import_s": round(import_s, 1),
        "receiver_rss_before_mib": round(rss, 1),
        "receiver_peak_rss_preview_mib": round(preview_peak, 1),
        "receiver_rss_restarted_mib": round(import_rss, 1),
        "receiver_peak_rss_import_mib": round(peak(receiver), 1),
        "new": preview.new,
        "imported": job.imported.imported,
    }


def partnered(sender: RunningKma, receiver: RunningKma, origin: Identity) -> tuple[Any, str]:
    """Each side registers the other (the sender the origin too), each a key group "moved" that
    may export and import: the sender's Security Officer's client, and the sender's identity."""
    s_so, r_so = sender.client("so", timeout=LONG_S), receiver.client("so", timeout=LONG_S)
    s_id, r_id = s_so.get_transfer_identity(), r_so.get_transfer_identity()
    register(s_so, sender, "origin", text_of(origin))
    register(s_so, sender, "receiver", r_id.identity)
    register(r_so, receiver, "sender", s_id.identity)
    for kma in (sender, receiver):
        co = kma.client("co")
        co.create_key_policy(
            "moved", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True, allow_export=True
        )
        co.create_key_group("moved", "moved")
        co.set_key_group_agents("moved", ["t10k-dal-01"])
    return s_so, s_id.identity


def run(tapes: int, tmp: Path, sender: RunningKma, receiver: RunningKma) -> int:
    origin = Identity.generate()
    s_so, sender_identity = partnered(sender, receiver, origin)
    units = [one_tape(f"B{n:07d}", os.urandom(32)) for n in range(tapes)]
    seed = file_from(origin, sender_identity, units, valid_s=DAY)
    seed_s, _ = timed(lambda: s_so.import_transfer_file(sent(s_so, seed, tmp), "moved"))
    sender.client("backup", timeout=LONG_S).create_backup()  # imported keys are sent once a backup holds them
    enroll(sender, "t10k-dal-01", tmp / "drive", demo_passphrase(sender, "t10k-dal-01"))
    probe = GetProbe(tmp / "drive", units[0]["keys"][0]["id"])
    time.sleep(3)  # the drive's process connects
    probe.measure("right_after_the_import", None)
    op = sender.client("op", timeout=LONG_S)
    out = tmp / "exported.kmstransfer"

    def export() -> Any:
        job = op.follow_transfer_job(op.start_transfer_export("receiver", key_group_id="moved"), poll_s=0.2)
        out.unlink(missing_ok=True)
        op.get_transfer_job_file(job.id, out)  # the file, downloaded as it is read
        return job.exported

    # a small export is over in a second: three of them in a row give its p99 enough samples; up to
    # 30,000 tapes, the export's and the idle window are measured three times (each its own ratio)
    repeat = min(3, max(1, 30_000 // tapes))
    ratios: list[float] = []
    for round_ in range(3 if tapes <= 30_000 else 1):
        sender_rss = peak_reset(sender)
        exports_s, exported = probe.measure(
            f"export {round_}", lambda: timed(lambda: [export() for _ in range(repeat)][-1])
        )
        sender_peak = peak(sender)
        export_s = exports_s / repeat
        time.sleep(10)  # the sender's background work after its big import (list search indexing) settles
        probe.measure(f"idle {round_}", None, 10.0)
    more = [one_tape(f"C{n:07d}", os.urandom(32)) for n in range(tapes)]
    second = file_from(origin, sender_identity, more, valid_s=DAY)
    second_id = sent(s_so, second, tmp)
    second_s, _ = probe.measure(
        "import", lambda: timed(lambda: s_so.import_transfer_file(second_id, "moved"))
    )
    ms = probe.finish()
    before, during_import = ms["right_after_the_import"], ms["import"]
    for round_ in range(len([w for w in ms if w.startswith("export ")])):
        during, idle = ms[f"export {round_}"], ms[f"idle {round_}"]
        ratios.append(round(p99(during) / p99(idle), 2))
    received = receive(receiver, out)
    assert exported.data_units == tapes and received.pop("new") == received.pop("imported") == tapes
    figures = {
        "tapes": tapes,
        "file_mib": round(out.stat().st_size / 2**20, 1),
        "import_at_sender_s": round(seed_s, 1),
        "export_s": round(export_s, 1),
        **{k: v for k, v in received.items() if k.endswith("_s")},
        "get_p99_right_after_the_import_ms": round(p99(before), 2),
        "get_p99_idle_ms": round(p99(idle), 2),
        "get_p99_during_export_ms": round(p99(during), 2),
        "second_import_at_sender_s": round(second_s, 1),
        "get_p99_during_import_ms": round(p99(during_import), 2),
        "gets_during_import": len(during_import),
        "gets_idle": len(idle),
        "gets_during_export": len(during),
        "sender_rss_before_export_mib": round(sender_rss, 1),
        "sender_peak_rss_export_mib": round(sender_peak, 1),
        **{k: v for k, v in received.items() if k.endswith("_mib")},
        "load_average": os.getloadavg()[0],
    }
    ratio = figures["get_p99_during_export_ms"] / figures["get_p99_idle_ms"]
    figures["get_p99_ratio"] = round(ratio, 2)
    figures["get_p99_ratios_each_round"] = ratios
    figures["get_p99_import_ratio"] = round(
        figures["get_p99_during_import_ms"] / figures["get_p99_idle_ms"], 2
    )
    for name, value in figures.items():
        print(f"{name:<34} {value}")
    print(f"target: Get p99 during an export within 1.5x of idle: {'met' if ratio <= 1.5 else 'NOT met'}")
    heap = os.environ.get("KMA_BENCH_HEAP")
    if heap and Path(heap).exists():  # --heap: the export job's looks (the sender's log)
        for line in Path(heap).read_text().splitlines():
            look = json.loads(line)
            print(json.dumps({k: v for k, v in look.items() if k != "top"}))
            for site in look["top"][:8]:
                print(f"    {site['mib']:>7} MiB {site['blocks']:>8} blocks  {site['where']}")
        figures["heap_looks"] = len(Path(heap).read_text().splitlines())
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
