"""The order `kma upgrade check` gives (docs/upgrades.md, "The order"): witnesses first, then the
KMAs of the sites with the most KMAs serving keys, the Raft leader after the others, and the KMA
answering the check last."""

from __future__ import annotations

from typing import Any

from kma.cluster.upgrade_check import upgrade_order


def node(
    kma_id: str, site: str, *, leader: bool = False, witness: bool = False, this: bool = False
) -> dict[str, Any]:
    return {
        "id": kma_id,
        "name": kma_id,
        "site_id": site,
        "leader": leader,
        "witness": witness,
        "this_kma": this,
    }


def test_witness_then_the_fullest_site_then_the_leader_and_the_answering_kma_last() -> None:
    nodes = [
        node("bos-1", "boston"),
        node("dal-1", "dallas", this=True),
        node("dal-2", "dallas", leader=True),
        node("dal-3", "dallas"),
        node("bos-2", "boston"),
        node("aus-1", "austin"),
        node("wit-1", "witness", witness=True),
    ]
    assert [n["id"] for n in upgrade_order(nodes)] == [
        "wit-1",  # serves no keys
        "dal-3",  # Dallas has three KMAs serving keys
        "bos-1",
        "bos-2",  # Boston two
        "aus-1",  # Austin one: its drives go to other sites meanwhile
        "dal-2",  # the leader: one election
        "dal-1",  # the KMA answering the check
    ]


def test_one_kma_is_its_own_order() -> None:
    assert [n["id"] for n in upgrade_order([node("dal-1", "dallas", leader=True, this=True)])] == ["dal-1"]
