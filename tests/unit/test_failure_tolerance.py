"""The failure tolerance in words, for the voter layouts a Security Officer meets; and what the
topology says when the store cannot tell how its nodes are."""

from __future__ import annotations

from types import SimpleNamespace

from kma.cluster.topology import FailureTolerance, Member, _kma_nodes, failure_tolerance
from kma.store.cluster_view import ReplicationLag

NAMES = {"dal": "Dallas", "bos": "Boston", "aus": "Austin"}


def layout(*kmas: tuple[str, bool, bool]) -> FailureTolerance:
    return failure_tolerance([Member(site, voter, up) for site, voter, up in kmas], NAMES)


def test_a_single_kma_says_losing_it_stops_everything_and_suggests_more() -> None:
    t = layout(("dal", True, True))
    assert (t.voters, t.majority, t.voters_may_lose, t.management_writes) == (1, 1, 0, True)
    assert t.summary.startswith("This is the only KMA: losing it stops key service and management alike.")
    assert "Add KMAs" in t.summary


def test_two_voters_at_one_site_survive_no_loss_and_ask_for_a_third() -> None:
    t = layout(("dal", True, True), ("dal", True, True))
    assert (t.majority, t.voters_may_lose, t.sites_whose_loss_stops_writes) == (2, 0, ("dal",))
    assert t.summary.startswith(
        "Survives the loss of no voter: losing any voter stops management writes, key service continues; "
        "losing Dallas stops everything."
    )
    assert "add a voter" in t.summary


def test_three_voters_two_at_dallas_lose_one_and_dallas_is_the_weak_site() -> None:
    t = layout(("dal", True, True), ("dal", True, True), ("bos", True, True), ("bos", False, True))
    assert (t.voters, t.majority, t.voters_may_lose) == (3, 2, 1)
    assert t.sites_whose_loss_stops_writes == ("dal",)
    assert t.summary == (
        "Survives the loss of one voter; losing Dallas stops management writes, key service continues."
    )


def test_two_sites_of_two_voters_each_stop_writes_with_either_site() -> None:
    t = layout(("dal", True, True), ("dal", True, True), ("bos", True, True), ("bos", True, True))
    assert (t.majority, t.voters_may_lose, t.sites_whose_loss_stops_writes) == (3, 1, ("bos", "dal"))
    assert t.summary.startswith(
        "Survives the loss of one voter; losing Boston or Dallas stops management writes, "
        "key service continues."
    )
    assert "4 voters survive no more losses than 3" in t.summary


def test_a_witness_in_a_third_site_lets_any_one_site_go() -> None:
    t = layout(
        ("dal", True, True),
        ("dal", True, True),
        ("bos", True, True),
        ("bos", True, True),
        ("aus", True, True),
    )
    assert (t.voters, t.majority, t.voters_may_lose, t.sites_whose_loss_stops_writes) == (5, 3, 2, ())
    assert t.summary == "Survives the loss of two voters; no single site's loss stops management writes."


def test_a_voter_down_lowers_what_the_cluster_survives() -> None:
    t = layout(("dal", True, True), ("dal", True, False), ("bos", True, True))
    assert (t.voters, t.voters_responding, t.voters_may_lose, t.management_writes) == (3, 2, 0, True)
    assert t.sites_whose_loss_stops_writes == ("bos", "dal")
    assert t.summary == (
        "1 of 3 voters not responding; losing one more stops management writes, key service continues."
    )


def test_without_a_majority_management_writes_are_stopped_but_key_service_goes_on() -> None:
    t = layout(("dal", True, False), ("dal", True, False), ("bos", True, True))
    assert (t.voters_responding, t.management_writes) == (1, False)
    assert t.summary == (
        "Management writes are stopped: 1 of 3 voters respond and a majority needs 2. "
        "Key service continues on the KMAs that respond."
    )


def test_non_voters_count_for_key_service_not_for_the_majority() -> None:
    t = layout(("dal", True, True), ("bos", False, True), ("bos", False, True))
    assert (t.voters, t.majority, t.voters_may_lose, t.sites_whose_loss_stops_writes) == (1, 1, 0, ("dal",))
    assert t.summary == (
        "Survives the loss of no voter: losing the only voter stops management writes, key service continues."
    )


def test_five_voters_with_one_down_still_survive_one_more() -> None:
    t = layout(
        ("dal", True, True),
        ("dal", True, False),
        ("bos", True, True),
        ("bos", True, True),
        ("aus", True, True),
    )
    assert t.summary.startswith(
        "1 of 5 voters not responding; survives the loss of one more voter; losing Boston"
    )


class _StoreWithoutALeader:
    """A cluster store that cannot say how its nodes are (no Raft leader reachable)."""

    def cluster_nodes(self) -> list[object]:
        raise ConnectionError("no leader")

    def replication_lag(self) -> ReplicationLag:
        return ReplicationLag(depth=12, age_seconds=4.0)

    def query(self, sql: str, params: object = ()) -> list[dict[str, object]]:
        if "cluster_outbox_marks" in sql:
            return []  # no other KMA has reported its lag
        row = {
            "site_id": "dal",
            "management_address": "",
            "service_address": "",
            "version": "0.1.0",
            "locked": 0,
            "witness": 0,
            "master_key": "software",
        }
        return [{**row, "id": "kma-a", "name": "A"}, {**row, "id": "kma-b", "name": "B"}]


def test_when_the_store_cannot_say_this_kma_answers_for_itself_and_the_others_show_down() -> None:
    vault, clock = SimpleNamespace(locked=False, backend="software"), SimpleNamespace(now=lambda: 0)
    kma = SimpleNamespace(store=_StoreWithoutALeader(), kma_id="kma-a", vault=vault, clock=clock)
    nodes = {n["id"]: n for n in _kma_nodes(kma)}  # type: ignore[arg-type]
    assert (nodes["kma-a"]["responding"], nodes["kma-a"]["health"]) == (True, "ok")
    assert nodes["kma-a"]["replication_lag"] == {"depth": 12, "age_seconds": 4.0}
    assert (nodes["kma-b"]["responding"], nodes["kma-b"]["health"]) == (False, "down")


def test_a_witness_counts_as_a_voter_but_serves_no_keys() -> None:
    # Given Dallas is lost, Boston's two KMAs and the witness keep a majority (3 of 5)
    t = failure_tolerance(
        [
            Member("dal", True, False),
            Member("dal", True, False),
            Member("bos", True, True),
            Member("bos", True, True),
            Member("wit", True, True, witness=True),
        ],
        {**NAMES, "wit": "Witness"},
    )
    assert (t.voters, t.voters_responding, t.management_writes, t.voters_may_lose) == (5, 3, True, 0)
    # Then losing Boston too stops key service (the witness serves none), losing the witness only writes
    assert t.summary == (
        "2 of 5 voters not responding; losing one more stops management writes, key service continues; "
        "losing Boston stops everything."
    )
