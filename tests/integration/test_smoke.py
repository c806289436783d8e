from __future__ import annotations

from tests.support.kma_process import RunningKma


def test_demo_kma_serves_its_status_over_pinned_tls(demo_kma: RunningKma) -> None:
    status = demo_kma.client().get_status()
    assert status.cluster_name == "Demo Tape Vault"
    assert not status.locked


def test_sigterm_stops_the_kma_cleanly(fresh_kma: RunningKma) -> None:
    """Given a serving KMA, when it gets SIGTERM, it exits 0 and removes its ready file."""
    process = fresh_kma.process
    assert process is not None
    ready = fresh_kma.data_dir.parent / "ready.json"
    assert ready.exists()
    process.terminate()
    assert process.wait(timeout=30) == 0
    assert not ready.exists()
