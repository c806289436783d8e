"""A witness (a Raft voter with no key service) through the product's own flow: a Security
Officer's quorum-approved entry marked witness, `kma init` in join mode, `kma serve` on it; and
how a test crashes a node (its `kma serve` and its rqlited both SIGKILLed, as a machine dies)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kma.cluster.node_config import ClusterFiles
from tests.integration.test_kma_join_init import init_join
from tests.integration.test_quorum import creds
from tests.support.cluster import rqlited_pid, settle
from tests.support.kma_process import READY_TIMEOUT, RunningKma
from tests.support.ports import free_port
from tests.support.waiting import wait_until


def crash(process: subprocess.Popen[str] | None) -> None:
    """SIGKILL a `kma serve` and its rqlited at once: nothing gets to step down or say goodbye."""
    if process is None or process.poll() is not None:
        return
    node = rqlited_pid(process.pid)
    if node is not None:
        os.kill(node, signal.SIGKILL)
    process.kill()
    process.wait()


@dataclass
class RunningWitness:
    """`kma serve` on a witness's data dir: its rqlited only."""

    data_dir: Path
    process: subprocess.Popen[str] | None = None

    @property
    def ready_file(self) -> Path:
        return self.data_dir.parent / "ready.json"

    def start(self) -> None:
        self.ready_file.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kma",
                "serve",
                "--data-dir",
                str(self.data_dir),
                "--ready-file",
                str(self.ready_file),
            ],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        process = self.process
        wait_until(
            lambda: self.ready_file.exists() or process.poll() is not None,
            READY_TIMEOUT * 2,
            what="the witness ready",
        )
        if process.poll() is not None:
            raise RuntimeError(
                f"kma serve (witness) exited: {process.stdout.read() if process.stdout else ''}"
            )
        assert json.loads(self.ready_file.read_text())["witness"]

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()

    def kill(self) -> None:
        crash(self.process)
        self.stop()


def add_witness(
    first: RunningKma, tmp: Path, kma_id: str = "witness-1", site: str = "witness"
) -> RunningWitness:
    """The witness's entry (quorum: three of the demo's key split members approve at once), its
    site made first, then the join on the "new machine" and `kma serve` there."""
    so = first.client("so")
    so.create_site(site, site.capitalize(), "Third place: a Raft voter with no key service")
    done = so.add_kma(
        kma_id,
        site,
        raft_address=f"127.0.0.1:{free_port()}",
        witness=True,
        credentials=creds(first, "alice", "bob", "carol"),
    )
    assert done.op.state == "executed", done.op
    data_dir = tmp / kma_id / "kma"
    code, said = init_join(
        tmp,
        data_dir,
        first.address,
        first.fingerprint,
        kma_id,
        done.kma_passphrase,
        rqlite_http=f"127.0.0.1:{free_port()}",
    )
    assert code == 0, said
    assert "witness" in said
    witness = RunningWitness(data_dir)
    witness.start()
    settle(first, ClusterFiles.of(data_dir))  # every node restarts its rqlited to trust the witness
    return witness
