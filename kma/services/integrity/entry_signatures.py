"""Signing KMA entries where they are written, and checking them where they are used
(kma/crypto/entry_signature.py says why a signature, and by the cluster CA).

Every write of an entry's signed fields adds `sign_entry` to its own audited batch: the statement
that sets the signature only if the row still holds exactly the values signed. `resign` first checks
the entry as it is, so that a change never blesses what someone wrote into the store. A KMA records
its own service address, Raft address and node certificate, first-hand, when it unlocks
(`after_unlock`, also at a start that unlocks): a locked KMA cannot sign, so it leaves its entry as
it is (it serves no agent meanwhile anyway). Its own entry, should it not verify, it writes anew
from what it knows first-hand (`own_entry`).

The routing fields (`ROUTED`: management address, name, site, vote, key pool) are signed the same
way in `route_signature` (`sign_routes`, `resign_routes`); its own management address a KMA records
first-hand when it unlocks (`own_routes`). `trusted_ids` are the entries whose both signatures
verify: only those are in the topology, the manager's failover list and the upgrade check.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict, cast

from kma.appliance import Appliance
from kma.crypto import entry_signature
from kma.crypto.entry_signature import ROUTED, SELECT, SELECT_ROUTES, SIGNED
from kma.errors import Conflict, KmaError
from kma.services.integrity import row_macs
from kma.store import Stmt

log = logging.getLogger(__name__)


# An entry's signed column sets as the store holds them (0 and 1 for flags: a signature covers the
# stored values exactly). Dicts rather than rows on purpose: a write signs the entry as its change
# leaves it (`{**entry, **changes}`), and the signing code reads the columns by the names in
# kma/crypto/entry_signature.py (SIGNED, ROUTED), the one list of what is signed.
class SignedEntry(TypedDict):
    """`SELECT`: the fields that grant trust, and their signature."""

    id: str
    witness: int
    awaiting_join: int
    removed_at: int | None
    service_address: str
    raft_address: str
    node_cert_pem: str | None
    join_passphrase_hash: str | None
    signature: str | None


class EntryRoutes(TypedDict):
    """`SELECT_ROUTES`: where users and agents are sent, and its signature."""

    id: str
    name: str
    site_id: str
    management_address: str
    voter: int
    key_pool_size: int
    route_signature: str | None


KMAS = row_macs.Sealed("kmas", ("id",), SIGNED, "kma")  # how a tampered entry is reported


def _ca_cert(kma: Appliance) -> bytes:
    """The cluster CA certificate from this KMA's data dir: the store's copy could be swapped."""
    return kma.data_dir.ca_cert.read_bytes()


def signed_before(kma: Appliance) -> bool:
    return entry_signature.marker(kma.data_dir.root).exists()


def routes_signed_before(kma: Appliance) -> bool:
    return entry_signature.routes_marker(kma.data_dir.root).exists()


def routes_genuine(kma: Appliance, row: Mapping[str, Any] | sqlite3.Row) -> bool:
    """Whether the entry's routing fields (a `SELECT_ROUTES` row) are as the cluster CA signed them;
    reported as tampered with when not."""
    why = entry_signature.routes_problem(_ca_cert(kma), routes_signed_before(kma), row)
    if why is None:
        return True
    row_macs.report_tamper(kma, KMAS, row, why)
    return False


def genuine(kma: Appliance, row: Mapping[str, Any] | sqlite3.Row) -> bool:
    """Whether the entry's signature verifies (and it is not a removed KMA written back as not
    removed); an entry that fails is reported as tampered with."""
    root = kma.data_dir.root
    why = entry_signature.problem(_ca_cert(kma), signed_before(kma), row, entry_signature.seen_removed(root))
    if why is None:
        return True
    row_macs.report_tamper(kma, KMAS, row, why)
    return False


def entry(kma: Appliance, kma_id: str) -> SignedEntry | None:
    row = kma.store.query_one(f"{SELECT} WHERE id = ?", (kma_id,))
    return None if row is None else cast(SignedEntry, dict(row))


def _ca_key(kma: Appliance) -> bytes:
    cluster = kma.store.query_one("SELECT ca_key_wrapped FROM cluster WHERE id = 1")
    if cluster is None:
        raise KmaError("the store has no cluster CA")
    return kma.vault.master().unwrap("cluster-ca-key", cluster["ca_key_wrapped"])


def sign_routes(kma: Appliance, row: Mapping[str, Any]) -> Stmt:
    """The statement that signs the entry's routing fields, for the batch that writes them (after its
    write): `row` holds every `ROUTED` field as the row has it once written. Needs an unlocked KMA."""
    values = {f: row[f] for f in ROUTED}
    where = " AND ".join(f"{f} IS :{f}" for f in ROUTED)
    return Stmt(
        f"UPDATE kmas SET route_signature = :route_signature WHERE {where}",
        {**values, "route_signature": entry_signature.sign_routes(_ca_key(kma), values)},
        expect=1,
        refusal=f"the entry of KMA '{row['id']}' changed meanwhile; try again",
    )


def routes(kma: Appliance, kma_id: str) -> EntryRoutes | None:
    row = kma.store.query_one(f"{SELECT_ROUTES} WHERE id = ?", (kma_id,))
    return None if row is None else cast(EntryRoutes, dict(row))


def resign_routes(kma: Appliance, kma_id: str, **changes: Any) -> Stmt:
    """`sign_routes` for the entry as `changes` leave it, refused when its routes do not verify now."""
    row = routes(kma, kma_id)
    if row is None:
        raise Conflict(f"There is no KMA '{kma_id}'.")
    if not routes_genuine(kma, row):
        raise Conflict(
            f"The management address, name or site of KMA '{kma_id}' was written in the store without "
            "the KMA (its signature does not verify), so it is not changed or trusted; remove it (a quorum "
            "operation)."
        )
    return sign_routes(kma, {**row, **changes})


def sign_entry(kma: Appliance, row: Mapping[str, Any]) -> Stmt:
    """The statement that signs the entry, for the batch that writes it (after its write): `row` holds
    every signed field as the row has it once written. Needs an unlocked KMA (the CA's key)."""
    ca_key = _ca_key(kma)
    values = {f: row[f] for f in SIGNED}
    where = " AND ".join(f"{f} IS :{f}" for f in SIGNED)
    return Stmt(
        f"UPDATE kmas SET signature = :signature WHERE {where}",
        {**values, "signature": entry_signature.sign(ca_key, values)},
        expect=1,
        refusal=f"the entry of KMA '{row['id']}' changed meanwhile; try again",
    )


def resign(kma: Appliance, kma_id: str, **changes: Any) -> Stmt:
    """`sign_entry` for the entry as `changes` leave it, refused when the entry does not verify now:
    signing it would bless what someone wrote into the store."""
    row = entry(kma, kma_id)
    if row is None:
        raise Conflict(f"There is no KMA '{kma_id}'.")
    if not genuine(kma, row):
        raise Conflict(
            f"The entry of KMA '{kma_id}' was written or altered in the store without the KMA (its "
            "signature does not verify), so it is not changed or trusted; remove it (a quorum operation)."
        )
    return sign_entry(kma, {**row, **changes})


def own_entry(kma: Appliance) -> tuple[list[Stmt], str]:
    """The statements that record this KMA's own addresses and node certificate, first-hand, and
    sign its entry, with what they do; none when they are recorded and signed already.

    An entry of its own that does not verify (reported) is written anew from what this running,
    unlocked KMA knows first-hand: it has joined, is a KMA and no witness, and no machine is to join
    as it (no KMA passphrase pending); nothing someone wrote into it is signed over. A removed
    KMA's entry is left as it is."""
    row = entry(kma, kma.kma_id)
    if row is None:
        return [], ""
    first_hand: dict[str, Any] = {f: v for f, v in kma.own_entry.items() if f in SIGNED}
    if not first_hand:  # not served (a restore, a command): nothing known first-hand
        return [], ""
    ok = genuine(kma, row)
    if ok and row["signature"] is not None and all(row.get(f) == v for f, v in first_hand.items()):
        return [], ""
    what = "recorded this KMA's service address, Raft address and node certificate in its entry, signed"
    if not ok:
        if row["removed_at"] is not None:
            return [], ""
        first_hand.update(witness=0, awaiting_join=0, join_passphrase_hash=None)
        what = (
            "wrote this KMA's own entry anew, signed, from what it knows first-hand (joined, no KMA "
            "passphrase pending, its addresses and node certificate): it did not verify"
        )
    sets = ", ".join(f"{f} = :{f}" for f in first_hand)
    update = Stmt(f"UPDATE kmas SET {sets} WHERE id = :id", {**first_hand, "id": kma.kma_id}, expect=1)
    return [update, sign_entry(kma, {**row, **first_hand})], what


def own_routes(kma: Appliance) -> tuple[list[Stmt], str]:
    """The statements that record this KMA's own management address, first-hand, and sign its routes;
    none when they are recorded and signed already, or nothing is known first-hand (a command)."""
    address = kma.own_entry.get("management_address")
    row = routes(kma, kma.kma_id)
    if row is None or address is None:
        return [], ""
    ok = routes_genuine(kma, row)
    if ok and row["route_signature"] is not None and row["management_address"] == address:
        return [], ""
    what = f"recorded this KMA's management address ({address}) in its entry, signed"
    if not ok:
        kma_row = kma.store.query_one("SELECT removed_at FROM kmas WHERE id = ?", (kma.kma_id,))
        if kma_row is None or kma_row["removed_at"] is not None:
            return [], ""
        # Its name, site, vote and pool size it does not know first-hand: signed as the store holds
        # them, and said, so that an officer checks them (the KMA list shows them).
        what += (
            f"; its routes did not verify, so it also signed, as the store holds them: name "
            f"'{row['name']}', site '{row['site_id']}', {'voter' if row['voter'] else 'non-voter'}, "
            f"key pool {row['key_pool_size']} (check them)"
        )
    update = Stmt("UPDATE kmas SET management_address = ? WHERE id = ?", (address, kma.kma_id), expect=1)
    return [update, sign_routes(kma, {**row, "management_address": address})], what


def _sign_first_use(
    kma: Appliance, select: str, sign: Callable[[Appliance, Mapping[str, Any]], Stmt], what: str, marker: Path
) -> None:
    """Sign the entries of a store from before such signatures (`select` names the unsigned ones),
    trusting them on first use, then mark the data directory so it is done once."""
    unsigned = [dict(r) for r in kma.store.query(select)]
    if unsigned:
        kma.commit(
            kma.itself,
            "security.entries_signed",
            [sign(kma, r) for r in unsigned],
            f"signed {what} of {len(unsigned)} KMA entries written before they were signed, trusting "
            "them on first use",
        )
    marker.write_text(f"every KMA entry's {what} carry the cluster CA's signature\n", encoding="utf-8")


def after_unlock(kma: Appliance) -> None:
    """Sign the entries of a store from before signatures (first unlock on this version: trust on
    first use), record this KMA's own entry, then check every entry. A failure (no cluster majority
    now) is logged: the next unlock tries again."""
    try:
        root = kma.data_dir.root
        if not routes_signed_before(kma):
            routes = f"{SELECT_ROUTES} WHERE route_signature IS NULL"
            where = "management address, name and site"
            _sign_first_use(kma, routes, sign_routes, where, entry_signature.routes_marker(root))
        if not signed_before(kma):
            entries = f"{SELECT} WHERE signature IS NULL"
            what = "service and Raft addresses and node certificate"
            _sign_first_use(kma, entries, sign_entry, what, entry_signature.marker(root))
        sweep(kma)
    except KmaError as exc:
        log.error("the KMA entries could not be signed or checked after the unlock: %s", exc)


def sweep(kma: Appliance) -> None:
    """Check every entry (reported at most once an hour each), and put this KMA's own right when it
    is unlocked: the cluster watch does, each round, so an entry forged anywhere is reported even if
    nobody uses it, and its own is mended at once. Removals are remembered here."""
    rows = kma.store.query(SELECT)
    entry_signature.remember_removed(kma.data_dir.root, _ca_cert(kma), rows)
    for row in rows:
        genuine(kma, row)
    routed = kma.store.query(SELECT_ROUTES)
    if all([routes_genuine(kma, r) for r in routed]) and all(r["route_signature"] for r in routed):
        marker = entry_signature.routes_marker(kma.data_dir.root)
        if routed and not marker.exists():  # signed by another KMA's first unlock on this release
            marker.write_text("every KMA entry's routes carry the cluster CA's signature\n", encoding="utf-8")
    if not kma.vault.locked:
        own, what = own_entry(kma)
        if own:
            kma.commit(kma.itself, "kma.entry", own, what, ("kma", kma.kma_id))
        own, what = own_routes(kma)
        if own:
            kma.commit(kma.itself, "kma.entry", own, what, ("kma", kma.kma_id))


def genuine_ids(kma: Appliance) -> set[str]:
    """The IDs of the entries whose signature verifies."""
    return {str(r["id"]) for r in kma.store.query(SELECT) if genuine(kma, r)}


def trusted_ids(kma: Appliance) -> set[str]:
    """The IDs of the entries whose both signatures verify: those a user may be sent to."""
    routed = {str(r["id"]) for r in kma.store.query(SELECT_ROUTES) if routes_genuine(kma, r)}
    return genuine_ids(kma) & routed
