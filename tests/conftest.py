"""Fixtures shared by every test directory: real KMA processes on loopback; and how the suite
splits across pytest-xdist workers (`KMS_TEST_WORKERS=3 scripts/test.sh`: `-n 3 --dist loadgroup`;
under pytest 9 xdist 3.8 does not apply the groups, docs/testing.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.kma_process import RunningKma

ROOT_BASEIDS = ("", "tests")  # plugins' fixtures and this file's

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


def shared_fixture_group(item: pytest.Item) -> str | None:
    """The xdist group a test must run in so that a fixture it shares with other tests is made
    once: a module's (or class's) fixture keeps its module on one worker; a session fixture of a
    folder's conftest (the installers' one bundle build) keeps every test using it on one worker.
    Tests that share nothing wider than themselves, or only this file's session fixtures (a worker
    may have its own demo KMA), go to whichever worker is free."""
    if item.nodeid.startswith("tests/installers/"):
        return "tests/installers"  # one dpkg at a time: two workers installing .debs lock each other out
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module_wide = False
    for name in info.names_closure:
        definitions = info.name2fixturedefs.get(name)
        if not definitions:
            continue
        used = definitions[-1]
        if used.scope == "session" and used.baseid not in ROOT_BASEIDS:
            return f"{used.baseid}::{name}"
        module_wide = module_wide or used.scope in ("package", "module", "class")
    return item.nodeid.split("::", 1)[0] if module_wide else None


def pytest_itemcollected(item: pytest.Item) -> None:
    """Every test inherits its group from the fixtures it uses (no test needs a mark for it); an
    explicit `@pytest.mark.xdist_group(name)` (a test that must run alone with others of its
    kind) wins. Marked as each test is collected: xdist's worker reads the groups in its own
    `pytest_collection_modifyitems`, which runs before this file's would (a `tryfirst` there did not
    help: the marks came too late, every group was split over the workers, and a module's tests
    each made its module fixture again on another worker)."""
    if item.get_closest_marker("xdist_group") is None:
        group = shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
