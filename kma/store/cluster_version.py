"""The cluster version: what every KMA of a cluster can do together (docs/upgrades.md).

A release supports a range of cluster versions. The cluster starts at 1 (what a cluster of
release 0.1.0 is; a store with no `cluster_version` row is at 1) and a Security Officer raises it,
under quorum, once every KMA (witnesses too) has recorded a release that supports the next one
(kma/cluster/version.py). Then the contract migrations of this release run
(kma/store/schema.py), and a KMA whose release is too old for the cluster version refuses to start
before it writes anything (`check`). Release 0.1.0 predates all this: the store refuses its start
instead (migration 0043).

| Cluster version | First release | What it brings |
|---|---|---|
| 1 | 0.1.0 | the cluster as release 0.1.0 made it |
| 2 | 0.2.0 | the cluster version itself; no feature needs it yet |
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from kma import __version__
from kma.errors import KmaError

FIRST_RELEASE = {1: "0.1.0", 2: "0.2.0"}  # the first release that supports each cluster version
# Tests only: "LOW..HIGH", the range this code claims to support (to see a too-old release refuse).
SUPPORTED_FOR_TESTS = "KMA_TEST_SUPPORTED_CLUSTER_VERSIONS"
CURRENT_SQL = "SELECT version, needs_release FROM cluster_version WHERE id = 1"


class ClusterVersionTooNew(KmaError):
    """This release is too old for the cluster version: it refuses to start, nothing written."""

    code, status = "cluster_version_too_new", 503

    def __init__(self, version: int, needs_release: str) -> None:
        low, high = supported()
        super().__init__(
            f"This cluster runs at cluster version {version}; this KMA's release ({__version__}) supports "
            f"cluster versions {low} to {high}. Install release {needs_release} or later on this KMA."
        )


def supported() -> tuple[int, int]:
    """The lowest and highest cluster versions this release runs in."""
    if override := os.environ.get(SUPPORTED_FOR_TESTS):
        low, high = override.split("..")
        return int(low), int(high)
    return min(FIRST_RELEASE), max(FIRST_RELEASE)


def release_supports(release: str | None, version: int) -> bool:
    """Whether a KMA that recorded `release` runs in a cluster at `version`. A later release supports
    what an earlier one does (release N+1 runs beside release N); a KMA that recorded no release
    runs 0.1.0 or has not started since its upgrade, and a release not numbered X.Y.Z is unknown."""
    if release is None or not re.fullmatch(r"\d+\.\d+\.\d+", release):
        return False
    return _numbers(release) >= _numbers(FIRST_RELEASE.get(version, f"{version}.0.0"))


def _numbers(release: str) -> tuple[int, ...]:
    return tuple(int(n) for n in release.split("."))


def current(rows: Sequence[Any]) -> tuple[int, str]:
    """(cluster version, first release that supports it) from the rows `CURRENT_SQL` read; a store
    without the row (or without the table: not migrated yet) is at 1."""
    if not rows:
        return 1, FIRST_RELEASE[1]
    return int(rows[0][0]), str(rows[0][1])


def check(version: int, needs_release: str) -> None:
    """Refuse to run in a cluster whose version this release does not support."""
    low, high = supported()
    if not low <= version <= high:
        raise ClusterVersionTooNew(version, needs_release)


def runs_contract_migrations(version: int) -> bool:
    """Contract migrations of this release run once the cluster is at the highest version it
    supports: every KMA then runs this release or a later one (no older code is left)."""
    return version >= supported()[1]
