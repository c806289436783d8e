"""The cluster's membership: adding a KMA, a new one-time KMA passphrase, removing a KMA.

Adding a KMA makes its entry (its row in `kmas`) and its one-time KMA passphrase (OKM's way).

A Security Officer creates the entry (ID, name, site, addresses, voter or not) as a quorum
operation. The KMA makes the one-time KMA passphrase when the request is submitted and hands it
to the submitter once (like the enrolment codes of a key split change); only its Argon2id hash is
kept, in the pending operation and then in the entry. The passphrase opens nothing until the
quorum has approved: the entry, and the hash with it, exists only once the operation has run. On
the new machine `kma init` with `mode = "join"` then spends it (kma/setup/join.py; the cluster's
side: kma/cluster/join.py).

Setting a new passphrase for an existing entry is the same path (quorum, handed out once): for an
entry whose machine died, the new machine joins with it and takes the entry over; the old
machine's certificates are revoked at that join.

Voters: Raft needs a majority of voters, so more voters cost write latency and buy tolerance only
at odd counts. At most `MAX_VOTERS` vote; further KMAs join as non-voters (read replicas).

A witness is an entry of the same kind: a voter with no key service (no listeners, no agents, no
key pool; `kma serve` runs only its rqlited, kma/cluster/witness.py). Two sites with two KMAs each
add one at a third place, so that either site's loss leaves a majority (3 of 5).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kma.appliance import Appliance
from kma.crypto import hash_passphrase
from kma.domain.validation import check_address, check_id, check_text
from kma.errors import Conflict, KmaError, ValidationFailed
from kma.services.change import Change
from kma.services.common import refuse_taken, require
from kma.services.integrity import entry_signatures
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.key_split_change import new_code
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.store import Stmt

MAX_VOTERS = 5
DEFAULT_POOL = 1000
_VOTERS = "(SELECT count(*) FROM kmas WHERE voter = 1 AND removed_at IS NULL)"
MADE_HERE = "(made by the KMA and shown once to the submitter; kept only as its hash)"


def voter_count(kma: Appliance) -> int:
    return int(kma.store.scalar(f"SELECT {_VOTERS}") or 0)


def voter_advice(voters: int) -> str | None:
    """What a Security Officer must know about a cluster with this many voters, or None."""
    if voters == 2:
        return (
            "A two-voter cluster stops management writes when either voter is lost (Raft needs a "
            "majority: 2 of 2). Add a third voter, another KMA or a witness at a third site "
            "(kma cluster add-witness), so one loss is tolerated."
        )
    if voters % 2 == 0 and voters > 0:
        return (
            f"{voters} voters tolerate no more losses than {voters - 1} do (a majority of {voters} "
            f"is {voters // 2 + 1}); an odd number of voters is recommended: add a voter, another KMA or "
            "a witness at a third site (kma cluster add-witness), so that two sites with as many voters "
            "each survive the loss of either."
        )
    return None


def _kma_passphrase() -> str:
    """120 random bits in groups of six letters and digits: typed once on the new machine."""
    return new_code()


def _must_be_member(kma: Appliance, kma_id: str) -> None:
    require(kma, "KMA", kma_id)
    if kma.store.scalar("SELECT removed_at IS NOT NULL FROM kmas WHERE id = ?", (kma_id,)):
        raise Conflict(f"KMA '{kma_id}' was removed from the cluster.")


# --- create a KMA's entry ----------------------------------------------------------------
def _addresses(request: Mapping[str, Any], witness: bool) -> dict[str, str]:
    """A KMA's three addresses; a witness has only its Raft address (it serves no one)."""
    fields = [("raft_address", "The Raft address")]
    if witness:
        for field in ("management_address", "service_address"):
            if request.get(field):
                raise ValidationFailed(
                    f"A witness has no {field.replace('_', ' ')}: it serves no managers and no agents."
                )
    else:
        fields = [
            ("management_address", "The management address"),
            ("service_address", "The service address"),
            *fields,
        ]
    out = {"management_address": "", "service_address": ""}
    for field, what in fields:
        if not request.get(field):
            raise ValidationFailed(f"{what} is required.")
        out[field] = check_address(str(request[field]), what)
    return out


def _prepare_add(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    kma_id = check_id(str(request["id"]), "The KMA ID")
    name = str(request.get("name") or kma_id)
    check_text(name, "The KMA name", required=True)
    site_id = str(request["site_id"])
    require(kma, "site", site_id)
    witness = bool(request.get("witness", False))
    addresses = _addresses(request, witness)
    if witness and request.get("voter") is False:
        raise ValidationFailed("A witness is a voter: voting is all it does.")
    voter = witness or bool(request.get("voter", True))
    pool = 0 if witness else int(request.get("key_pool_size", DEFAULT_POOL))
    refuse_taken(kma, "KMA", kma_id)
    voters = voter_count(kma) + voter
    if voter and voters > MAX_VOTERS:
        raise Conflict(
            f"The cluster already has {MAX_VOTERS} voters, the most it may have; add KMA '{kma_id}' "
            "as a non-voter (a read replica)."
        )
    passphrase = _kma_passphrase()
    shown = {
        "id": kma_id,
        "name": name,
        "site_id": site_id,
        **addresses,
        "voter": voter,
        "witness": witness,
        "key_pool_size": pool,
        "kma_passphrase": MADE_HERE,
    }
    payload = {**shown, "passphrase_hash": hash_passphrase(passphrase)}
    del payload["kma_passphrase"]
    role = (
        "a witness (a voter with no key service)"
        if witness
        else ("a voter" if voter else "a non-voter (read replica)")
    )
    what = "witness" if witness else "KMA"
    summary = (
        f"Add {what} '{kma_id}' ({name}) at site '{site_id}' as {role}; it joins with a one-time "
        "KMA passphrase"
    )
    return Prepared(
        summary,
        shown,
        payload,
        target_kma_id=kma_id,
        exclusive=True,
        handed_out={"kma_passphrase": passphrase},
    )


def _execute_add(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    now = kma.clock.now()
    insert = Stmt(
        "INSERT INTO kmas (id, name, site_id, management_address, service_address, raft_address, voter, "
        "witness, version, locked, awaiting_join, key_pool_size, join_passphrase_hash, "
        "join_passphrase_set_at, created_at, updated_at) SELECT :id, :name, :site_id, :management_address, "
        ":service_address, :raft_address, :voter, :witness, '', 1, 1, :pool, :hash, :now, :now, :now "
        f"WHERE NOT EXISTS (SELECT 1 FROM kmas WHERE id = :id) AND (:voter = 0 OR {_VOTERS} < {MAX_VOTERS})",
        {
            "id": p["id"],
            "name": p["name"],
            "site_id": p["site_id"],
            "management_address": p["management_address"],
            "service_address": p["service_address"],
            "raft_address": p["raft_address"],
            "voter": int(bool(p["voter"])),
            "witness": int(bool(p.get("witness", False))),
            "pool": int(p["key_pool_size"]),
            "hash": p["passphrase_hash"],
            "now": now,
        },
        expect=1,
        refusal=f"there is already a KMA '{p['id']}', or the cluster already has {MAX_VOTERS} voters",
    )
    signed = entry_signatures.sign_entry(
        kma,
        {
            "id": p["id"],
            "witness": int(bool(p.get("witness", False))),
            "awaiting_join": 1,
            "removed_at": None,
            "service_address": p["service_address"],
            "raft_address": p["raft_address"],
            "node_cert_pem": None,
            "join_passphrase_hash": p["passphrase_hash"],
        },
    )
    routed = entry_signatures.sign_routes(
        kma,
        {
            "id": p["id"],
            "name": p["name"],
            "site_id": p["site_id"],
            "management_address": p["management_address"],
            "voter": int(bool(p["voter"])),
            "key_pool_size": int(p["key_pool_size"]),
        },
    )
    role = "a witness" if p.get("witness") else "a voter" if p["voter"] else "a non-voter"
    message = (
        f"created the entry of KMA '{p['id']}' ({p['name']}) at site '{p['site_id']}' as {role}; "
        "it may now join with its one-time KMA passphrase, and starts locked"
    )
    return Outcome(Change("kma.create", [insert, signed, routed], message, ("kma", str(p["id"]))))


ADD_KMA = OpType("add_kma", _prepare_add, _execute_add)


# --- a new one-time KMA passphrase (also: replace a dead KMA) -----------------------------
def _prepare_passphrase(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    kma_id = str(request["kma_id"])
    _must_be_member(kma, kma_id)
    passphrase = _kma_passphrase()
    shown = {"kma_id": kma_id, "kma_passphrase": MADE_HERE}
    payload = {"kma_id": kma_id, "passphrase_hash": hash_passphrase(passphrase)}
    summary = (
        f"Set a new one-time KMA passphrase for KMA '{kma_id}': a machine that joins with it becomes "
        f"KMA '{kma_id}', and any earlier machine's certificates stop working"
    )
    return Prepared(
        summary,
        shown,
        payload,
        target_kma_id=kma_id,
        exclusive=True,
        handed_out={"kma_passphrase": passphrase},
    )


def _execute_passphrase(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    kma_id, now = str(p["kma_id"]), kma.clock.now()
    stmt = Stmt(
        "UPDATE kmas SET join_passphrase_hash = ?, join_passphrase_set_at = ?, updated_at = ? "
        "WHERE id = ? AND removed_at IS NULL",
        (p["passphrase_hash"], now, now, kma_id),
        expect=1,
        refusal=f"KMA '{kma_id}' was removed meanwhile",
    )
    signed = entry_signatures.resign(kma, kma_id, join_passphrase_hash=p["passphrase_hash"])
    message = f"set a new one-time KMA passphrase for KMA '{kma_id}'"
    return Outcome(Change("kma.passphrase", [stmt, signed], message, ("kma", kma_id)))


SET_KMA_PASSPHRASE = OpType("set_kma_passphrase", _prepare_passphrase, _execute_passphrase)


# --- remove a KMA ------------------------------------------------------------------------
def _prepare_remove(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    kma_id = str(request["kma_id"])
    _must_be_member(kma, kma_id)
    if kma_id == kma.kma_id:
        raise Conflict(
            f"KMA '{kma_id}' cannot remove itself: ask another KMA of the cluster (its management address)."
        )
    voter = bool(kma.store.scalar("SELECT voter FROM kmas WHERE id = ?", (kma_id,)))
    left = voter_count(kma) - voter
    advice = voter_advice(left)
    summary = (
        f"Remove KMA '{kma_id}' from the cluster: its certificates stop working at once and it leaves "
        f"Raft; {left} voter{'s' if left != 1 else ''} remain" + (f". {advice}" if advice else "")
    )
    return Prepared(summary, {"kma_id": kma_id}, {"kma_id": kma_id}, target_kma_id=kma_id, exclusive=True)


def _execute_remove(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    kma_id, now = str(p["kma_id"]), kma.clock.now()
    row = entry_signatures.entry(kma, kma_id)
    if row is None:
        raise Conflict(f"There is no KMA '{kma_id}'.")
    # Signed even if the entry was forged: a removed entry grants nothing, whatever else it says.
    removed = {**row, "removed_at": now, "join_passphrase_hash": None}
    statements = [
        Stmt(
            "UPDATE kmas SET removed_at = ?, locked = 1, join_passphrase_hash = NULL, "
            "join_passphrase_set_at = NULL, updated_at = ? WHERE id = ? AND removed_at IS NULL AND id <> ?",
            (now, now, kma_id, kma.kma_id),
            expect=1,
            refusal=f"KMA '{kma_id}' was removed already, or is the KMA running this operation",
        ),
        Stmt(
            "UPDATE kma_certificates SET revoked_at = ? WHERE kma_id = ? AND revoked_at IS NULL",
            (now, kma_id),
        ),
        entry_signatures.sign_entry(kma, removed),
    ]
    message = f"removed KMA '{kma_id}' from the cluster; its certificates are revoked"
    return Outcome(
        Change("kma.remove", statements, message, ("kma", kma_id)), lambda: leave_raft(kma, kma_id)
    )


def leave_raft(kma: Appliance, kma_id: str) -> None:
    """Take the removed KMA's node out of Raft (through this KMA's own node); a KMA on the
    embedded store has no Raft to leave."""
    if kma.store.cluster is not None:
        try:
            kma.store.cluster.remove(kma_id)
        except KmaError as exc:
            raise OSError(f"rqlite did not remove node '{kma_id}': {exc.message}") from None


REMOVE_KMA = OpType("remove_kma", _prepare_remove, _execute_remove)
