"""A KMA's entry under quorum, its one-time KMA passphrase, and the join handshake (issue 11),
against a real demo KMA (key split 3 of 5) over TLS.

The joining side here is the test itself with its own key pairs, as `kma init` in join mode would
be: the handshake must hand back certificates for those keys, chained to the cluster CA, with the
KMA ID as subject, and never anything secret.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kma.store.schema import latest_schema_version
from kms_client import Conflict, Forbidden, KmsClient, LockedOut, PendingQuorumOp, Unauthenticated
from kms_client.membership import KmaAdmission
from tests.integration.test_lockouts import http_from
from tests.integration.test_quorum import creds, events
from tests.support.agents import service_address
from tests.support.first_node import FIRST_RAFT, demo_first_node
from tests.support.kma_process import RunningKma, read_only_db

ADDRESSES = {
    "management_address": "127.0.0.1:18443",
    "service_address": "127.0.0.1:15696",
    "raft_address": "127.0.0.1:14002",
}


@pytest.fixture
def node_kma(tmp_path: Path) -> Iterator[RunningKma]:
    kma = demo_first_node(tmp_path)
    yield kma
    kma.stop()


def csr(name: str = "whatever-the-machine-says") -> tuple[ec.EllipticCurvePrivateKey, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    request = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .sign(key, hashes.SHA256())
    )
    return key, request.public_bytes(serialization.Encoding.PEM).decode()


def add_entry(kma: RunningKma, kma_id: str, *members: str, **fields: Any) -> KmaAdmission:
    so = kma.client("so")
    return so.add_kma(
        kma_id, fields.pop("site_id", "boston"), **{**ADDRESSES, **fields}, credentials=creds(kma, *members)
    )


def test_an_approved_entry_yields_a_passphrase_that_joins_once(node_kma: RunningKma) -> None:
    # Given a Security Officer submits the new KMA's entry with one key split credential
    done = add_entry(node_kma, "kma-bos-1", "alice", name="Boston 1")
    assert done.op.pending and done.op.type == "add_kma"
    assert done.op.request["kma_passphrase"].startswith("(made by the KMA")  # approvers never see it
    assert len(done.kma_passphrase.replace("-", "")) == 24
    # The cluster would have two voters: the answer says plainly what that means.
    assert done.voters == 2 and "stops management writes when either voter is lost" in (
        done.voter_warning or ""
    )
    anonymous = node_kma.client()
    node_key, node_csr = csr()
    server_key, server_csr = csr()

    # When the new machine tries before the quorum approved: refused, nothing issued
    with pytest.raises(Unauthenticated, match="approved"):
        anonymous.join_cluster("kma-bos-1", done.kma_passphrase, node_csr, server_csr)
    qm1, qm2 = node_kma.client("qm1"), node_kma.client("qm2")
    passphrases = {m["name"]: m["passphrase"] for m in node_kma.demo["key_split"]["members"]}
    qm1.approve_quorum_operation(done.op.id, "bob", passphrases["bob"])
    assert qm2.approve_quorum_operation(done.op.id, "carol", passphrases["carol"]).state == "executed"
    entry = node_kma.client("so").get_kma("kma-bos-1")
    assert entry.awaiting_join and entry.voter and entry.locked and entry.raft_address == "127.0.0.1:14002"

    # Then a wrong passphrase is refused, and the right one joins
    with pytest.raises(Unauthenticated):
        anonymous.join_cluster("kma-bos-1", "NOT-THE-RIGHT-ONE-AT-ALL", node_csr, server_csr)
    grant = anonymous.join_cluster("kma-bos-1", done.kma_passphrase, node_csr, server_csr)
    assert grant.ca_fingerprint == node_kma.fingerprint and grant.cluster_name == "Demo Tape Vault"
    assert grant.kma["site_id"] == "boston" and grant.kma["voter"] is True
    assert [(m.id, m.raft_address) for m in grant.members] == [("kma-dal-1", FIRST_RAFT)]
    ca = x509.load_pem_x509_certificate(grant.ca_pem.encode())
    for pem, key in ((grant.node_certificate_pem, node_key), (grant.server_certificate_pem, server_key)):
        cert = x509.load_pem_x509_certificate(pem.encode())
        cert.verify_directly_issued_by(ca)
        assert cert.public_key() == key.public_key()  # its own key: the private key never travelled
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kma-bos-1"
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "127.0.0.1" in [str(ip) for ip in names.get_values_for_type(x509.IPAddress)]
    # And a passphrase used twice is refused; the entry is joined and locked
    with pytest.raises(Unauthenticated):
        anonymous.join_cluster("kma-bos-1", done.kma_passphrase, *csr()[1:], csr()[1])
    entry = node_kma.client("so").get_kma("kma-bos-1")
    assert not entry.awaiting_join and entry.locked
    with read_only_db(node_kma) as db:
        hashes_left = db.execute("SELECT join_passphrase_hash FROM kmas WHERE id = 'kma-bos-1'").fetchone()[0]
        issued = db.execute(  # the joined KMA's (each KMA also records its own when it starts)
            "SELECT purpose, revoked_at FROM kma_certificates WHERE kma_id = 'kma-bos-1' ORDER BY purpose"
        ).fetchall()
    assert hashes_left is None and [tuple(r) for r in issued] == [("node", None), ("server", None)]
    joined = events(node_kma, operation="kma.join", subject_id="kma-bos-1")
    assert [e.condition for e in joined].count("success") == 1
    assert sum(e.condition == "error" for e in joined) == 3  # before approval, wrong, used twice


def test_entry_with_three_credentials_runs_at_once_and_the_passphrase_comes_back(
    node_kma: RunningKma,
) -> None:
    done = add_entry(node_kma, "kma-bos-2", "alice", "bob", "carol", voter=False)
    assert done.op.state == "executed"
    assert done.kma_passphrase and done.voters == 1 and done.voter_warning is None
    assert node_kma.client("so").get_kma("kma-bos-2").voter is False
    grant = node_kma.client().join_cluster("kma-bos-2", done.kma_passphrase, csr()[1], csr()[1])
    assert grant.kma["voter"] is False


def test_at_most_five_voters_then_non_voters(node_kma: RunningKma) -> None:
    warnings = {}
    for n in range(2, 6):
        done = add_entry(node_kma, f"kma-{n}", "alice", "bob", "carol")
        assert done.op.state == "executed" and done.voters == n
        warnings[n] = done.voter_warning
    assert warnings[3] is None and warnings[5] is None
    assert "4 voters tolerate no more losses than 3" in (warnings[4] or "")
    with pytest.raises(Conflict, match="5 voters.*non-voter"):
        add_entry(node_kma, "kma-6", "alice", "bob", "carol")
    assert add_entry(node_kma, "kma-6", "alice", "bob", "carol", voter=False).op.state == "executed"


def test_wrong_passphrases_lock_the_kma_id_out(node_kma: RunningKma) -> None:
    done = add_entry(node_kma, "kma-bos-3", "alice", "bob", "carol")
    anonymous = node_kma.client()
    for _ in range(5):
        with pytest.raises(Unauthenticated):
            anonymous.join_cluster("kma-bos-3", "WRONG-WRONG-WRONG", csr()[1], csr()[1])
    with pytest.raises(LockedOut):  # even the right passphrase, until the lockout ends
        anonymous.join_cluster("kma-bos-3", done.kma_passphrase, csr()[1], csr()[1])
    node_kma.advance_clock(16 * 60)
    assert (
        anonymous.join_cluster("kma-bos-3", done.kma_passphrase, csr()[1], csr()[1]).kma["id"] == "kma-bos-3"
    )


def test_a_stranger_cannot_block_a_pending_join_from_another_address(node_kma: RunningKma) -> None:
    """The KMA passphrase is counted per (KMA ID, address), as sign-ins are (issue 26, item 6)."""
    done = add_entry(node_kma, "kma-bos-4", "alice", "bob", "carol")
    body = {
        "kma_id": "kma-bos-4",
        "passphrase": "WRONG-WRONG-WRONG",
        "node_csr_pem": csr()[1],
        "server_csr_pem": csr()[1],
    }
    with http_from(node_kma, "127.0.0.66") as stranger:
        assert [stranger.post("/cluster/join", json=body).status_code for _ in range(6)] == [401] * 5 + [429]
    grant = node_kma.client().join_cluster("kma-bos-4", done.kma_passphrase, csr()[1], csr()[1])
    assert grant.kma["id"] == "kma-bos-4"


def test_a_new_passphrase_replaces_the_machine_and_revokes_its_certificates(node_kma: RunningKma) -> None:
    first = add_entry(node_kma, "kma-bos-4", "alice", "bob", "carol")
    anonymous = node_kma.client()
    anonymous.join_cluster("kma-bos-4", first.kma_passphrase, csr()[1], csr()[1])
    so = node_kma.client("so")
    pending = so.set_kma_passphrase("kma-bos-4", credentials=creds(node_kma, "alice"))
    assert pending.op.pending and "any earlier machine's certificates stop working" in pending.op.summary
    with pytest.raises(Unauthenticated):  # not before the quorum approved it
        anonymous.join_cluster("kma-bos-4", pending.kma_passphrase, csr()[1], csr()[1])
    passphrases = {m["name"]: m["passphrase"] for m in node_kma.demo["key_split"]["members"]}
    node_kma.client("qm1").approve_quorum_operation(pending.op.id, "bob", passphrases["bob"])
    ran = node_kma.client("qm2").approve_quorum_operation(pending.op.id, "carol", passphrases["carol"])
    assert isinstance(ran, PendingQuorumOp) and ran.state == "executed"
    anonymous.join_cluster("kma-bos-4", pending.kma_passphrase, csr()[1], csr()[1])
    with read_only_db(node_kma) as db:
        rows = db.execute(
            "SELECT revoked_at IS NOT NULL FROM kma_certificates WHERE kma_id = 'kma-bos-4' "
            "ORDER BY issued_at, rowid"
        ).fetchall()
    assert [r[0] for r in rows] == [1, 1, 0, 0]  # the first machine's two revoked, the new two valid


def test_only_a_security_officer_creates_entries(node_kma: RunningKma) -> None:
    op: KmsClient = node_kma.client("op")
    with pytest.raises(Forbidden):
        op.add_kma("kma-z", "boston", **ADDRESSES)
    with pytest.raises(Conflict, match="already a KMA"):
        add_entry(node_kma, "kma-dal-1", "alice")


def test_no_join_before_the_cluster_has_a_raft_node(tmp_path: Path) -> None:
    embedded = RunningKma.demo_in(tmp_path)  # still a one-KMA embedded store: nothing to join
    try:
        done = add_entry(embedded, "kma-bos-9", "alice", "bob", "carol")
        with pytest.raises(Conflict, match="not a cluster node yet.*not spent"):
            embedded.client().join_cluster("kma-bos-9", done.kma_passphrase, csr()[1], csr()[1])
        with read_only_db(embedded) as db:
            sql = "SELECT join_passphrase_hash, awaiting_join FROM kmas WHERE id = 'kma-bos-9'"
            row = db.execute(sql).fetchone()
        assert row[0] is not None and row[1] == 1
    finally:
        embedded.stop()


def _as_kma(kma: RunningKma, tmp: Path, cert_pem: str, key: ec.EllipticCurvePrivateKey) -> ssl.SSLContext:
    """A TLS client context that presents a joined KMA's own certificate."""
    cert_file, key_file = tmp / "kma-cert.pem", tmp / "kma-key.pem"
    cert_file.write_text(cert_pem)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    context = ssl.create_default_context(cadata=kma.ca_pem)
    context.load_cert_chain(cert_file, key_file)
    return context


def _answers(context: ssl.SSLContext, url: str) -> int | None:
    """The HTTP status over a connection made with `context`, or None when the KMA refused it."""
    try:
        with httpx.Client(verify=context, timeout=10) as http:
            return http.get(url).status_code
    except httpx.TransportError:
        return None


def test_a_removed_kmas_certificates_are_refused_by_both_listeners(
    node_kma: RunningKma, tmp_path: Path
) -> None:
    done = add_entry(node_kma, "kma-bos-5", "alice", "bob", "carol")
    server_key, server_csr = csr()
    grant = node_kma.client().join_cluster("kma-bos-5", done.kma_passphrase, csr()[1], server_csr)
    as_kma = _as_kma(node_kma, tmp_path, grant.server_certificate_pem, server_key)
    management = f"https://{node_kma.address}/api/v1/status"
    service = f"https://{service_address(node_kma)}/v1/ca"
    assert _answers(as_kma, management) == 200 and _answers(as_kma, service) == 200

    # When the quorum removes it (through another KMA: never itself)
    so = node_kma.client("so")
    with pytest.raises(Conflict, match="cannot remove itself"):
        so.remove_kma("kma-dal-1", credentials=creds(node_kma, "alice", "bob", "carol"))
    pending = so.remove_kma("kma-bos-5", credentials=creds(node_kma, "alice"))
    assert isinstance(pending, PendingQuorumOp) and "certificates stop working at once" in pending.summary
    assert _answers(as_kma, management) == 200  # not before the quorum approved
    passphrases = {m["name"]: m["passphrase"] for m in node_kma.demo["key_split"]["members"]}
    node_kma.client("qm1").approve_quorum_operation(pending.id, "bob", passphrases["bob"])
    assert node_kma.client("qm2").approve_quorum_operation(
        pending.id, "carol", passphrases["carol"]
    ).state == ("executed")

    # Then its certificate no longer works on either listener; managers without one are unaffected
    assert _answers(as_kma, management) is None and _answers(as_kma, service) is None
    assert node_kma.client().get_status().kma_id == "kma-dal-1"
    removed = so.get_kma("kma-bos-5")
    assert removed.removed_at is not None and removed.locked
    refused = events(node_kma, search="refused a client certificate")
    assert {e.operation for e in refused} >= {"api.connection_refused", "service.tls"}
    assert all("kma-bos-5" in e.message for e in refused)
    with pytest.raises(Conflict, match="was removed"):
        so.set_kma_passphrase("kma-bos-5", credentials=creds(node_kma, "alice", "bob", "carol"))
    # And it no longer holds a voter's place
    assert add_entry(node_kma, "kma-bos-6", "alice", "bob", "carol").voters == 2


def test_a_kma_passphrase_expires_after_seven_days(node_kma: RunningKma) -> None:
    done = add_entry(node_kma, "kma-bos-8", "alice", "bob", "carol")
    node_kma.advance_clock(7 * 86400 + 60)
    with pytest.raises(Unauthenticated, match="expired"):
        node_kma.client().join_cluster("kma-bos-8", done.kma_passphrase, csr()[1], csr()[1])
    again = node_kma.client("so").set_kma_passphrase(
        "kma-bos-8", credentials=creds(node_kma, "alice", "bob", "carol")
    )
    assert (
        node_kma.client().join_cluster("kma-bos-8", again.kma_passphrase, csr()[1], csr()[1]).kma["id"]
        == "kma-bos-8"
    )


def test_a_witness_entry_has_only_a_raft_address_votes_and_joins_unlocked(node_kma: RunningKma) -> None:
    from kms_client import ValidationFailed

    so = node_kma.client("so")
    three = creds(node_kma, "alice", "bob", "carol")
    # A witness serves no one: management or service addresses are refused, as is a missing one for a KMA
    with pytest.raises(ValidationFailed, match="witness has no management address"):
        so.add_kma(
            "witness-1",
            "boston",
            raft_address="127.0.0.1:14009",
            witness=True,
            management_address="127.0.0.1:18449",
            credentials=three,
        )
    with pytest.raises(ValidationFailed, match="service address is required"):
        so.add_kma(
            "kma-bos-9",
            "boston",
            raft_address="127.0.0.1:14009",
            management_address="127.0.0.1:18449",
            credentials=three,
        )

    # Given the quorum creates a witness's entry: it counts as a voter (two voters would be three)
    done = so.add_kma("witness-1", "boston", raft_address="127.0.0.1:14009", witness=True, credentials=three)
    assert done.op.state == "executed" and done.voters == 2
    entry = so.get_kma("witness-1")
    assert (entry.witness, entry.voter, entry.key_pool_size, entry.service_address) == (True, True, 0, "")

    # When its machine joins with the passphrase: a node certificate for its Raft address, and the
    # entry is not locked (a witness holds no key to lock)
    grant = node_kma.client().join_cluster("witness-1", done.kma_passphrase, csr()[1], csr()[1])
    assert grant.kma["witness"] is True and grant.members[0].raft_address == FIRST_RAFT
    assert not so.get_kma("witness-1").locked
    with pytest.raises(Conflict, match="nothing to lock"):
        so.lock_kma("witness-1")


def test_each_kma_shows_the_schema_its_release_knows_and_an_entry_none_until_its_machine_starts(
    node_kma: RunningKma,
) -> None:
    # Given a KMA's entry whose machine has not joined (nor started) yet
    add_entry(node_kma, "kma-bos-1", "alice", "bob", "carol", name="Boston 1")
    # Then the KMAs list shows the schema the running KMA's release knows, and none for the entry
    auditor = node_kma.client("auditor")
    kmas = {k.id: k for k in auditor.iter_kmas()}
    assert kmas[auditor.get_status().kma_id].schema_version == latest_schema_version()
    assert kmas["kma-bos-1"].schema_version is None
