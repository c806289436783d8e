"""A KMA owns what it holds in memory while its process runs and its background workers
(`Appliance.part`, kma/worker.py): one of each per KMA, and closing the KMA stops its workers, so
a stopped KMA (and a test) leaves no thread behind."""

from __future__ import annotations

import threading
from pathlib import Path

from kma.appliance import Appliance
from kma.cluster.store import open_store
from kma.datadir import DataDir
from kma.runtime.running import Running
from kma.services.keypool import key_pool
from tests.support.kma_process import RunningKma


def test_closing_a_kma_stops_its_workers(tmp_path: Path) -> None:
    demo = RunningKma.demo_in(tmp_path, test_clock=False)
    demo.stop()
    kma = Appliance(DataDir(demo.data_dir), open_store)
    try:
        assert key_pool(kma) is key_pool(kma), "one key pool per KMA"
        running = Running(kma)  # what `kma serve` starts, but not its start-up
        workers = [running.pool, running.pruner, running.backups, running.forwarder, running.alerts]
        assert running.pool is key_pool(kma)
        for worker in workers:
            worker.start()
        names = {worker.name for worker in workers}
        assert names <= {thread.name for thread in threading.enumerate()}
    finally:
        kma.close()
    assert not names & {thread.name for thread in threading.enumerate()}
