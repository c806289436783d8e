"""Signatures on KMA entries, so that a `kmas` row written straight into the store trusts nobody.

A leaked replica file or node credential lets someone write rows without the KMA. A KMA entry
grants trust: every node's rqlited pins its node certificate (kma/cluster/trust.py), agents are
sent to its service address, a machine may join as it with its one-time KMA passphrase, and being
removed is what cuts a machine off. Witnesses and locked KMAs must check entries too, and hold no
master key, so an HMAC (kma/services/integrity/row_macs.py) does not fit: the fields that grant trust are
signed with the cluster CA's key (stored wrapped under the master key: only an unlocked KMA signs,
in the audited batch that writes them) and checked with the CA certificate every node keeps in its
data dir (public). An entry whose signature is missing or wrong is not pinned, not given to agents,
not joined as, and is reported as tampered with (kma/services/integrity/entry_signatures.py).

Entries of a store made before signatures are signed, trusted on first use, at the first unlock on
this version; a node marks in its data dir (`marker`) that it has seen every entry signed, and from
then on an entry without a signature is tampered with.

The fields that route a user or say what a KMA is (`ROUTED`: its management address, where the
manager fails over to with a bearer token or passphrase; its name, site, vote and key pool) carry a
second signature, `route_signature`, made and checked the same way (its own marker, `routes_marker`).
A column of its own: an older release signs `SIGNED` only, and during a rolling upgrade its entries
must go on granting what it signed. The lock state is not signed: each KMA knows its own first-hand,
and a forged one can only lock a KMA, which whoever writes the store can do by worse means.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

# The fields that grant trust. Not signed: names, sites, lock state, versions, pool sizes.
SIGNED = (
    "id",
    "witness",
    "awaiting_join",
    "removed_at",
    "service_address",
    "raft_address",
    "node_cert_pem",
    "join_passphrase_hash",
)
SELECT = f"SELECT {', '.join(SIGNED)}, signature FROM kmas"
ROUTED = ("id", "name", "site_id", "management_address", "voter", "key_pool_size")
SELECT_ROUTES = f"SELECT {', '.join(ROUTED)}, route_signature FROM kmas"
# Said first in what is signed, so that no certificate or other use of the CA's key can pass for it.
CONTEXT = "kms-manager KMA entry signature v1"
ROUTES_CONTEXT = "kms-manager KMA entry routes signature v1"
NO_SIGNATURE = "has no signature"
BAD_SIGNATURE = "has a signature that does not verify"
REMOVED_BEFORE = "was removed, and is written back as not removed (an older signed state)"


def marker(data_root: Path) -> Path:
    """Present once this node has seen every KMA entry signed: then a missing signature is tampering."""
    return data_root / "entries-signed"


def routes_marker(data_root: Path) -> Path:
    """Present once this node has seen every KMA entry's routes signed."""
    return data_root / "entry-routes-signed"


def removed_file(data_root: Path) -> Path:
    """The KMA IDs this node has seen removed (signed), one a line: a removal is for good, so an entry
    written back with the signature it had before its removal is refused all the same."""
    return data_root / "removed-kmas"


def seen_removed(data_root: Path) -> set[str]:
    path = removed_file(data_root)
    return set(path.read_text(encoding="ascii").split()) if path.exists() else set()


def remember_removed(
    data_root: Path, ca_cert_pem: bytes, rows: Iterable[Mapping[str, Any] | sqlite3.Row]
) -> None:
    """Add the entries signed as removed to the removed KMAs this node remembers (the file rewritten
    whole: never half a file)."""
    kma_ids = {
        str(r["id"])
        for r in rows
        if r["removed_at"] is not None
        and r["signature"] is not None
        and problem(ca_cert_pem, True, r) is None
    }
    known = seen_removed(data_root)
    if kma_ids <= known:
        return
    path = removed_file(data_root)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(f"{i}\n" for i in sorted(known | kma_ids)), encoding="ascii")
    tmp.replace(path)


def message(row: Mapping[str, Any] | sqlite3.Row) -> bytes:
    values = [row[f] for f in SIGNED]
    values[1:3] = [int(values[1]), int(values[2])]  # witness, awaiting_join: 0/1 however given
    return json.dumps([CONTEXT, values], separators=(",", ":"), ensure_ascii=True).encode()


def routes_message(row: Mapping[str, Any] | sqlite3.Row) -> bytes:
    values = [row[f] for f in ROUTED]
    values[4:6] = [int(values[4]), int(values[5])]  # voter, key_pool_size: 0/1 or numbers however given
    return json.dumps([ROUTES_CONTEXT, values], separators=(",", ":"), ensure_ascii=True).encode()


def _sign(ca_key_pem: bytes, signed: bytes) -> str:
    key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("the cluster CA's key is not an EC key")
    return base64.b64encode(key.sign(signed, ec.ECDSA(hashes.SHA256()))).decode("ascii")


def sign(ca_key_pem: bytes, row: Mapping[str, Any] | sqlite3.Row) -> str:
    """The signature of the entry's trust-granting fields, made with the cluster CA's key."""
    return _sign(ca_key_pem, message(row))


def sign_routes(ca_key_pem: bytes, row: Mapping[str, Any] | sqlite3.Row) -> str:
    """The signature of the entry's routing fields (`ROUTED`), made with the cluster CA's key."""
    return _sign(ca_key_pem, routes_message(row))


@lru_cache(maxsize=4096)
def _verifies(ca_cert_pem: bytes, signed: bytes, signature: str) -> bool:
    """Remembered: an entry is checked on every use, and its bytes only change with a new signature."""
    try:
        public = x509.load_pem_x509_certificate(ca_cert_pem).public_key()
        if not isinstance(public, ec.EllipticCurvePublicKey):
            return False
        public.verify(base64.b64decode(signature, validate=True), signed, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError):
        return False
    return True


def problem(
    ca_cert_pem: bytes,
    signed_before: bool,
    row: Mapping[str, Any] | sqlite3.Row,
    removed: set[str] | frozenset[str] = frozenset(),
) -> str | None:
    """Why the entry grants nothing, or None when it is genuine. `signed_before`: this node has seen
    every entry signed (`marker`), so an entry without a signature is no older one. `removed`: the
    KMAs this node has seen removed (`seen_removed`)."""
    signature = row["signature"]
    if signature is None:
        why = NO_SIGNATURE if signed_before else None
    else:
        why = None if _verifies(ca_cert_pem, message(row), str(signature)) else BAD_SIGNATURE
    if why is None and row["removed_at"] is None and row["id"] in removed:
        return REMOVED_BEFORE
    return why


def routes_problem(
    ca_cert_pem: bytes, signed_before: bool, row: Mapping[str, Any] | sqlite3.Row
) -> str | None:
    """Why the entry's routes (`ROUTED`, read with `SELECT_ROUTES`) are not to be followed, or None.
    `signed_before`: this node has seen every entry's routes signed (`routes_marker`)."""
    signature = row["route_signature"]
    if signature is None:
        return "has no signature over its management address, name and site" if signed_before else None
    if _verifies(ca_cert_pem, routes_message(row), str(signature)):
        return None
    return "has a management address, name or site that its signature does not cover (altered)"


def all_signed(ca_cert_pem: bytes, rows: list[sqlite3.Row] | list[Mapping[str, Any]]) -> bool:
    """Whether every entry carries a signature that verifies (then this node writes its `marker`)."""
    return bool(rows) and all(
        r["signature"] is not None and problem(ca_cert_pem, True, r) is None for r in rows
    )


def tampered_entries(conn: sqlite3.Connection, ca_cert_pem: bytes, data_root: Path) -> list[str]:
    """Offline (`kma audit verify`): the KMA entries whose signature does not verify, described."""
    out = []
    signed_before, removed = marker(data_root).exists(), seen_removed(data_root)
    for row in conn.execute(SELECT):
        why = problem(ca_cert_pem, signed_before, row, removed)
        if why is not None:
            out.append(f"kmas '{row['id']}' {why}")
    routes_before = routes_marker(data_root).exists()
    try:
        rows = conn.execute(SELECT_ROUTES).fetchall()
    except sqlite3.OperationalError:  # a store from before route signatures (migration 0059)
        rows = []
    for row in rows:
        why = routes_problem(ca_cert_pem, routes_before, row)
        if why is not None:
            out.append(f"kmas '{row['id']}' {why}")
    return out
