"""Every KMA of a cluster shows the cluster's refused write keys (issue 41, docs/media.md): a drive
refused by one KMA is counted on the page of a manager signed in to another. Two real KMAs on
rqlite, a simulated drive over KMIP asking each of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kma.kmip.client import KmipFailure
from tests.support.agents import demo_passphrase, enroll, kmip, service_address
from tests.support.cluster import BINARY, add_node, first_node
from tests.support.kma_process import RunningKma
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")
DRIVE = "t10k-dal-02"


def _never_encrypted(kma: RunningKma) -> tuple[int, int, int]:
    """This KMA's own count, the cluster's, and how many KMAs the cluster's covers."""
    counts = kma.client("op").get_media_refusals()
    return counts.never_encrypted, counts.cluster.get("never_encrypted", 0), counts.cluster_kmas


def test_each_kma_shows_the_write_keys_every_kma_refused(tmp_path: Path) -> None:
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        second.start()
        first.client("so").create_media_pool("plain", "N*", never_encrypted=True)
        enroll(first, DRIVE, tmp_path / "drive", demo_passphrase(first, DRIVE))
        # A plain tape's write key asked of each KMA: refused by both (the pool is the cluster's)
        for kma, volser in ((first, "N00001"), (second, "N00002"), (second, "N00003")):
            with kmip(tmp_path / "drive", service_address(kma)) as drive, pytest.raises(KmipFailure):
                drive.write_key(volser)

        wait_until(lambda: _never_encrypted(first) == (1, 3, 2), 30, what="the first KMA's view")
        wait_until(lambda: _never_encrypted(second) == (2, 3, 2), 30, what="the second KMA's view")

        # A KMA restarted counts from zero again: the cluster's sum follows
        second.restart()
        wait_until(lambda: _never_encrypted(first) == (1, 1, 2), 60, what="the restarted KMA's zero")
    finally:
        second.stop()
        first.stop()
