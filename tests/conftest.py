"""Fixtures shared by every test directory: real KMA processes on loopback.

On pytest-xdist workers (`KMS_TEST_WORKERS=3 scripts/test.sh`: `-n 3 --dist loadfile`) each test
file runs whole on one worker, so a module's fixtures are made once; a session fixture here (the
demo KMA) is one per worker; the installer tests share their one bundle and take turns through
file locks (tests/installers/conftest.py). docs/testing.md says why files rather than groups."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.kma_process import RunningKma

# Tests assert no timings (three workers share two cores): a property's example takes as long as
# the machine gives it, rather than failing Hypothesis's default 200 ms deadline.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(scope="session")
def demo_kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    """One demo KMA for the whole session (one per xdist worker): for tests that read, or write
    only their own objects."""
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("demo-kma"))
    yield kma
    kma.stop()


@pytest.fixture
def fresh_kma(tmp_path: Path) -> Iterator[RunningKma]:
    """A demo KMA of the test's own, with a test clock it may move."""
    kma = RunningKma.demo_in(tmp_path)
    yield kma
    kma.stop()
