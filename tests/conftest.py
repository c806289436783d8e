"""Fixtures shared by every test directory: real KMA processes on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kma_process import RunningKma


@pytest.fixture(scope="session")
def demo_kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    """One demo KMA for the whole session: for tests that read, or write only their own objects."""
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("demo-kma"))
    yield kma
    kma.stop()


@pytest.fixture
def fresh_kma(tmp_path: Path) -> Iterator[RunningKma]:
    """A demo KMA of the test's own, with a test clock it may move."""
    kma = RunningKma.demo_in(tmp_path)
    yield kma
    kma.stop()
