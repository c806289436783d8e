"""Issue 40, rules kept: a transfer file imported on one KMA of a cluster (rqlite, three real KMAs)
is served by every KMA of it, and importing it again on another KMA changes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kma.crypto.transfer import Identity
from tests.support.agents import enrolled_demo_agent, kmip
from tests.support.cluster import BINARY, three_kmas
from tests.support.transfer import file_from, one_tape, register, text_of
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")
DAY = 86400


def test_an_import_on_one_kma_is_served_by_every_kma(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    partner = Identity.generate()
    tapes = {f"P{n:05d}": os.urandom(32) for n in range(20)}
    with three_kmas(tmp_path) as kmas:
        first, follower = kmas[0], kmas[2]
        so = first.client("so")
        register(so, first, "partner", text_of(partner))
        co = first.client("co")
        co.create_key_policy(
            "arrivals", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True
        )
        co.create_key_group("arrivals", "arrivals")
        co.set_key_group_agents("arrivals", ["t10k-dal-02"])
        units = [one_tape(volser, material) for volser, material in tapes.items()]
        file = file_from(partner, so.get_transfer_identity().identity, units)
        done = so.import_transfer_file(file, "arrivals")
        assert (done.imported, done.keys_awaiting_backup) == (len(tapes), 0)  # held by the other KMAs

        agent = enrolled_demo_agent(follower, tmp_path_factory, "t10k-dal-02")
        ids = {u["id"]: u["keys"][0]["id"] for u in units}
        with kmip(agent) as drive:
            wait_until(lambda: drive.locate(data_unit="P00019") != [], 20, what="the import on the follower")
            for volser, material in tapes.items():
                assert drive.locate(data_unit=volser) == [ids[volser]]
                assert drive.get(ids[volser]) == material

        again = kmas[1].client("so").import_transfer_file(file, "arrivals")
        assert (again.imported, again.already_here) == (0, len(tapes))
