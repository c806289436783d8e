"""One rule for names (issue 28): users, agents, KMAs and key split members are unique whatever
their case, as people read them: `alice` and `Alice` are one name. The KMA refuses a second with
a reason naming the first; nothing is made."""

from __future__ import annotations

import pytest

import kms_client
from tests.support.kma_process import RunningKma


def test_a_user_named_like_another_but_for_case_is_refused(demo_kma: RunningKma) -> None:
    so = demo_kma.client("so")
    with pytest.raises(kms_client.Conflict, match=r"already a user 'so' \(names differing only in case"):
        so.create_user("SO", "Second Officer", ["auditor"], "a long enough passphrase")
    assert [u.id for u in so.iter_all(so.list_users) if u.id.casefold() == "so"] == ["so"]


def test_an_agent_named_like_another_but_for_case_is_refused(demo_kma: RunningKma) -> None:
    op = demo_kma.client("op")
    agent = next(iter(op.iter_all(op.list_agents)))
    with pytest.raises(kms_client.Conflict, match=f"already an agent '{agent.id}'"):
        op.create_agent(agent.id.upper(), agent.site_id, agent.default_key_group_id)


def test_a_kma_entry_named_like_another_but_for_case_is_refused(demo_kma: RunningKma) -> None:
    so = demo_kma.client("so")
    kma_id = so.get_status().kma_id
    with pytest.raises(kms_client.Conflict, match=f"already a KMA '{kma_id}'"):
        so.add_kma(
            kma_id.upper(),
            "dallas",
            raft_address="127.0.0.1:4002",
            management_address="127.0.0.1:9443",
            service_address="127.0.0.1:9696",
        )


def test_key_split_members_differing_only_in_case_are_refused(demo_kma: RunningKma) -> None:
    so = demo_kma.client("so")
    with pytest.raises(kms_client.ValidationFailed, match="same name: Nina, nina"):
        so.change_key_split(2, ["nina", "Nina", "omar"])
