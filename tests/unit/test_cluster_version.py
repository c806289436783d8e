"""The cluster version's rules (kma/store/cluster_version.py, docs/upgrades.md): which releases run
in which cluster version, and the refusal of a release too old, naming the release it needs."""

from __future__ import annotations

import pytest

from kma import __version__
from kma.store import cluster_version


def test_a_store_without_the_row_is_at_cluster_version_1() -> None:
    assert cluster_version.current([]) == (1, "0.1.0")
    assert cluster_version.current([(2, "0.2.0")]) == (2, "0.2.0")


@pytest.mark.parametrize(
    ("release", "version", "runs"),
    [
        ("0.1.0", 1, True),
        ("0.1.0", 2, False),
        ("0.2.0", 2, True),
        ("0.10.0", 2, True),  # numbers, not text: 0.10 comes after 0.2
        ("1.0.0", 2, True),  # a later release supports what an earlier one does
        (None, 2, False),  # no release recorded: 0.1.0, or not started since its upgrade
        ("0+unknown", 2, False),
    ],
)
def test_a_release_runs_in_the_cluster_versions_from_the_one_it_brought(
    release: str | None, version: int, runs: bool
) -> None:
    assert cluster_version.release_supports(release, version) is runs


def test_this_release_runs_in_versions_1_and_2_and_contract_migrations_wait_for_2() -> None:
    assert cluster_version.supported() == (1, 2)
    assert not cluster_version.runs_contract_migrations(1)
    assert cluster_version.runs_contract_migrations(2)
    cluster_version.check(1, "0.1.0")
    cluster_version.check(2, "0.2.0")


def test_a_cluster_version_beyond_this_release_is_refused_naming_the_release_it_needs() -> None:
    with pytest.raises(cluster_version.ClusterVersionTooNew) as refused:
        cluster_version.check(3, "0.3.0")
    assert refused.value.message == (
        f"This cluster runs at cluster version 3; this KMA's release ({__version__}) supports cluster "
        "versions 1 to 2. Install release 0.3.0 or later on this KMA."
    )
