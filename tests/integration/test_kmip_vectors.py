"""Acceptance: the OASIS KMIP Profiles test cases (tests/support/kmip_vectors.py) against a real
`kma serve` over TLS, one test per test case, as a tape library's enrolled agent.

The key policy of the agent's group lets agents revoke and destroy (the profiles' life cycles end
in Destroy) and allows import (Register). A test case that continues another one's objects (TL-M-3
finds the key TL-M-2 made) runs that one first if it has not run yet.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.kmip.client import KmipClient
from tests.support.agents import enrolled_demo_agent, kmip
from tests.support.kma_process import RunningKma
from tests.support.kmip_vectors import Bindings, Vector, vectors

AGENT = "t10k-dal-01"
SERVED = vectors("TL", "SKLC", "SKFF", "OMOS", "BL", "QS")
# Test cases this KMA does not pass yet (each an expected, strict failure: one that starts passing
# must leave this list). docs/api.md says what is offered.
NOT_YET = frozenset(v.name for v in SERVED) - {"TL-M-1-14", "TL-M-2-14", "TL-M-3-14"}
CONTINUES = {"TL-M-3": "TL-M-2"}  # a test case -> the one whose objects it works on


class Runner:
    def __init__(self, client: KmipClient) -> None:
        self.client = client
        self.done: set[str] = set()
        self.server_made: set[str] = set()

    def run(self, vector: Vector) -> None:
        stem, _, version = vector.name.rpartition("-")
        before = CONTINUES.get(stem)
        if before is not None and f"{before}-{version}" not in self.done:
            self.run(Vector(vector.path.with_name(f"{before}-{version}.xml")))
        vector.run(self.client, Bindings(), self.server_made)
        self.done.add(vector.name)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("kmip-vectors"))
    try:
        kma.client("co").update_key_policy("tape-30d", agents_may_revoke=True, allow_import=True)
        agent_dir: Path = enrolled_demo_agent(kma, tmp_path_factory, AGENT)
        with kmip(agent_dir) as client:
            yield Runner(client)
    finally:
        kma.stop()


@pytest.mark.parametrize(
    "vector",
    [
        pytest.param(v, marks=pytest.mark.xfail(strict=True, reason="not passed yet")) if v.name in NOT_YET else v
        for v in SERVED
    ],
    ids=[v.name for v in SERVED],
)
def test_profile_test_case(runner: Runner, vector: Vector) -> None:
    runner.run(vector)
