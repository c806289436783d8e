from __future__ import annotations

from tests.support.kma_process import RunningKma


def test_demo_kma_serves_its_status_over_pinned_tls(demo_kma: RunningKma) -> None:
    status = demo_kma.client().status()
    assert status.cluster_name == "Demo Tape Vault"
    assert not status.locked
