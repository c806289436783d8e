"""A KMA entry's signature by the cluster CA (kma/crypto/entry_signature.py): made over the fields
that grant trust, checked with the CA certificate only, refused for any change or another CA."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kma.crypto import entry_signature
from kma.crypto.ca import create_cluster_ca

CA = create_cluster_ca("test cluster")
ENTRY = {
    "id": "kma-2",
    "witness": 0,
    "awaiting_join": 0,
    "removed_at": None,
    "service_address": "10.0.0.2:5696",
    "raft_address": "10.0.0.2:4002",
    "node_cert_pem": "-----BEGIN CERTIFICATE-----\nnode\n-----END CERTIFICATE-----\n",
    "join_passphrase_hash": None,
}


def signed(**changes: object) -> dict[str, object]:
    return {**ENTRY, **changes, "signature": entry_signature.sign(CA.key_pem, ENTRY)}


def test_a_signed_entry_verifies_with_the_ca_certificate_alone() -> None:
    assert entry_signature.problem(CA.cert_pem, True, signed()) is None
    assert entry_signature.problem(CA.cert_pem, True, signed(witness=False)) is None  # 0 or False alike


def test_any_change_to_a_field_that_grants_trust_breaks_the_signature() -> None:
    for field, value in [
        ("service_address", "203.0.113.9:5696"),
        ("node_cert_pem", "-----BEGIN CERTIFICATE-----\ndrive\n-----END CERTIFICATE-----\n"),
        ("removed_at", 1700000000),
        ("join_passphrase_hash", "$argon2id$forged"),
        ("id", "kma-3"),
    ]:
        assert (
            entry_signature.problem(CA.cert_pem, True, signed(**{field: value}))
            == entry_signature.BAD_SIGNATURE
        )


def test_another_cas_signature_or_none_is_refused_once_entries_are_signed() -> None:
    other = create_cluster_ca("another cluster")
    forged = {**ENTRY, "signature": entry_signature.sign(other.key_pem, ENTRY)}
    assert entry_signature.problem(CA.cert_pem, True, forged) == entry_signature.BAD_SIGNATURE
    unsigned = {**ENTRY, "signature": None}
    assert entry_signature.problem(CA.cert_pem, True, unsigned) == entry_signature.NO_SIGNATURE
    assert entry_signature.problem(CA.cert_pem, False, unsigned) is None  # before: trusted on first use


def test_audit_verify_lists_the_tampered_entries(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    columns = ", ".join((*entry_signature.SIGNED, "signature"))
    conn.execute(f"CREATE TABLE kmas ({columns})")
    marks = ", ".join("?" * (len(entry_signature.SIGNED) + 1))
    good = signed()
    conn.execute(
        f"INSERT INTO kmas VALUES ({marks})", [good[c] for c in (*entry_signature.SIGNED, "signature")]
    )
    bad = signed(id="mallory")
    conn.execute(
        f"INSERT INTO kmas VALUES ({marks})", [bad[c] for c in (*entry_signature.SIGNED, "signature")]
    )
    assert entry_signature.tampered_entries(conn, CA.cert_pem, tmp_path) == [
        "kmas 'mallory' has a signature that does not verify"
    ]


ROUTES = {
    "id": "kma-2",
    "name": "Dallas 2",
    "site_id": "dallas",
    "management_address": "10.0.0.2:8443",
    "voter": 1,
    "key_pool_size": 200,
}


def test_the_management_address_name_site_and_vote_are_signed_too() -> None:
    """Issue 39, item 1: where the manager fails over to with a bearer token is signed."""
    good = {**ROUTES, "route_signature": entry_signature.sign_routes(CA.key_pem, ROUTES)}
    assert entry_signature.routes_problem(CA.cert_pem, True, good) is None
    assert entry_signature.routes_problem(CA.cert_pem, True, {**good, "voter": True}) is None
    for field, value in [
        ("management_address", "203.0.113.9:8443"),
        ("name", "Boston 1"),
        ("site_id", "boston"),
        ("voter", 0),
        ("key_pool_size", 0),
        ("id", "kma-3"),
    ]:
        assert entry_signature.routes_problem(CA.cert_pem, True, {**good, field: value}) is not None
    # An entry signature is no route signature, nor the other way round.
    swapped = {**good, "route_signature": entry_signature.sign(CA.key_pem, ENTRY)}
    assert entry_signature.routes_problem(CA.cert_pem, True, swapped) is not None
    unsigned = {**ROUTES, "route_signature": None}
    assert entry_signature.routes_problem(CA.cert_pem, True, unsigned) is not None
    assert entry_signature.routes_problem(CA.cert_pem, False, unsigned) is None  # an older store
