"""A manager's client learns the cluster's KMAs and goes on with another one when its KMA goes
(issue 11): real `kma serve` processes on rqlite, the connected one SIGKILLed."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from kms_client import Failover, KmaUnreachable, KmsClient, KmsError, KnownKma, PendingQuorumOp
from kms_client.failover import called, failover_order
from tests.integration.test_quorum import creds
from tests.support.cluster import BINARY, not_the_leader, three_kmas
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")


def test_the_client_goes_on_with_another_kma_of_the_cluster_when_its_kma_is_killed(tmp_path: Path) -> None:
    with three_kmas(tmp_path) as kmas:
        first = kmas[0]
        connected, others = not_the_leader(kmas)
        switches: list[Failover] = []
        client = KmsClient(
            connected.address,
            ca_pem=first.ca_pem,
            ca_fingerprint=first.fingerprint,
            on_failover=switches.append,
        )
        client.sign_in("co", first.passphrases["co"])
        cluster = client.learn_cluster()
        assert {k.address for k in cluster} == {k.address for k in kmas}
        names = {k.address: k.name for k in cluster}

        # When the KMA the client talks to is killed, a change still goes through (its request was
        # refused, so it never reached the dead KMA), on another KMA, with the same session.
        connected.kill()
        policy = client.create_key_policy("after-failover", encryption_period=60, cryptoperiod=120)
        assert policy.id == "after-failover"
        assert client.address in {k.address for k in others}
        assert [(s.gone, s.now.address) for s in switches] == [(names[connected.address], client.address)]
        assert switches[0].message == (
            f"{called(names[connected.address])} stopped answering; now connected to {names[client.address]}"
        )
        assert client.get_key_policy("after-failover").cryptoperiod == 120
        assert len(switches) == 1  # it stays on the new KMA

        # The list follows the cluster: the killed KMA is still a member (it may come back) until
        # the quorum removes it; then it leaves the list.
        assert connected.address in {k.address for k in client.learn_cluster()}
        serving = next(k for k in others if k.address == client.address)
        dead = next(k.id for k in cluster if k.address == connected.address)
        removed = serving.client("so").remove_kma(dead, credentials=creds(serving, "alice", "bob", "carol"))
        assert not isinstance(removed, PendingQuorumOp)
        # (the removal restarts every node's rqlited: a refresh may meet a replica being rebuilt)
        wait_until(
            lambda: _learnt(client) == {k.address for k in others}, 15.0, "the removed KMA leaving the list"
        )

        # When every KMA is gone, the client says so and stays where it was.
        where = client.address
        for kma in others:
            kma.kill()
        with pytest.raises(KmaUnreachable):
            client.list_key_policies()
        assert client.address == where
        client.close()


def test_failover_tries_the_own_sites_kmas_first() -> None:
    cluster = [
        KnownKma("bos-1", "bos-1", "boston", "10.0.2.1:8443"),
        KnownKma("dal-1", "dal-1", "dallas", "10.0.1.1:8443"),
        KnownKma("bos-2", "bos-2", "boston", "10.0.2.2:8443"),
        KnownKma("dal-2", "dal-2", "dallas", "10.0.1.2:8443"),
    ]
    assert [k.id for k in failover_order(cluster, "10.0.1.1:8443")] == ["dal-2", "bos-1", "bos-2"]
    assert [k.id for k in failover_order(cluster, "10.0.2.2:8443")] == ["bos-1", "dal-1", "dal-2"]


def test_a_kma_that_stops_answering_mid_request_is_left_and_a_change_is_never_sent_twice(
    tmp_path: Path,
) -> None:
    """SIGSTOP: the KMA takes the connection but never answers. A read goes on with another KMA
    after the timeout; a change is not sent again (the stopped KMA may still apply it), so the
    user hears that it may not have been made, and the client is on another KMA for the next."""
    with three_kmas(tmp_path) as kmas:
        first = kmas[0]
        connected, others = not_the_leader(kmas)
        client = KmsClient(
            connected.address, ca_pem=first.ca_pem, ca_fingerprint=first.fingerprint, timeout=3
        )
        client.sign_in("co", first.passphrases["co"])
        client.learn_cluster()
        client.list_key_policies()  # a kept-alive connection to the KMA about to stop
        assert connected.process is not None
        connected.process.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(KmaUnreachable, match="did not answer"):
                client.create_key_policy("sent-once", encryption_period=60, cryptoperiod=120)
            assert client.address in {k.address for k in others}
            assert client.list_key_policies().items is not None  # reads go on there
        finally:
            connected.process.send_signal(signal.SIGCONT)
        # The stopped KMA, woken, applied the change it had received: made once, not twice.
        wait_until(lambda: _exists(client, "sent-once"), 5.0, "the change the stopped KMA received")
        client.close()


def _exists(client: KmsClient, policy_id: str) -> bool:
    return any(p.id == policy_id for p in client.iter_key_policies())


def _learnt(client: KmsClient) -> set[str]:
    try:
        return {k.address for k in client.learn_cluster()}
    except KmsError:
        return set()
