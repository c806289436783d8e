"""Agents learn the cluster as it changes (issue 11): the service listener gives an enrolled
agent the current KMA list (`GET /v1/kmas`, with a marker that changes with it), and
`kma agent simulate` follows it: a KMA added, then removed, shows in and leaves its kmas.json."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.kmip.tls import agent_context
from tests.integration.test_adding_kmas import add_entry, csr
from tests.integration.test_quorum import creds
from tests.support.agents import enrolled_demo_agent, service_address
from tests.support.first_node import demo_first_node
from tests.support.kma_process import RunningKma, run_kma


@pytest.fixture
def node_kma(tmp_path: Path) -> Iterator[RunningKma]:
    kma = demo_first_node(tmp_path)
    yield kma
    kma.stop()


def known_kmas(agent_dir: Path) -> dict[str, str]:
    return {k["id"]: k["status"] for k in json.loads((agent_dir / "kmas.json").read_text())}


def simulate(agent_dir: Path) -> dict[str, object]:
    result = run_kma(
        "agent",
        "simulate",
        "--agent-dir",
        str(agent_dir),
        "--drives",
        "1",
        "--mounts",
        "2",
        "--rate",
        "20",
        "--json",
    )
    summary: dict[str, object] = json.loads(result.stdout)
    return summary


def get_kmas(kma: RunningKma, context: ssl.SSLContext) -> tuple[int, dict[str, object]]:
    host, _, port = service_address(kma).rpartition(":")
    conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
    try:
        conn.request("GET", "/v1/kmas")
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_simulated_drives_follow_kmas_joining_and_leaving(
    node_kma: RunningKma, tmp_path_factory: pytest.TempPathFactory
) -> None:
    agent = enrolled_demo_agent(node_kma, tmp_path_factory, "t10k-dal-01")
    assert known_kmas(agent) == {"kma-dal-1": "ready"}
    as_agent = agent_context(agent / "ca.pem", agent / "agent.pem", agent / "agent.key")
    status, first = get_kmas(node_kma, as_agent)
    assert status == 200
    # Without an agent's certificate the list is not given out.
    assert get_kmas(node_kma, agent_context(agent / "ca.pem"))[0] == 401

    # When a KMA joins the cluster, the agent hears of it (locked until a quorum unlocks it)
    done = add_entry(node_kma, "kma-bos-7", "alice", "bob", "carol")
    node_kma.client().join_cluster("kma-bos-7", done.kma_passphrase, csr()[1], csr()[1])
    status, second = get_kmas(node_kma, as_agent)
    assert second["marker"] != first["marker"]
    assert simulate(agent)["failures"] == 0
    assert known_kmas(agent) == {"kma-dal-1": "ready", "kma-bos-7": "locked"}

    # And when the quorum removes it, the agent lets it go
    node_kma.client("so").remove_kma("kma-bos-7", credentials=creds(node_kma, "alice", "bob", "carol"))
    assert simulate(agent)["failures"] == 0
    assert known_kmas(agent) == {"kma-dal-1": "ready"}
