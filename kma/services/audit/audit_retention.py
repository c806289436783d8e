"""Retention classes, signed checkpoints and pruning: how old events leave without a trace of doubt.

Pruning is deliberate and narrow: it verifies the whole trail first (a broken trail is evidence
and is never pruned), then, chain by chain and in bounded chunks, signs a checkpoint and removes
only events that are both below that checkpoint and older than their class's period. The removal
runs in one batch with its checkpoint, a permit the delete-blocking trigger checks, and its own
audit event, so either all of it is committed or none. A chunk is at most CHUNK events, which
keeps the store's single writer (and so key issuance) from waiting long on a big first prune.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.audit.checkpoint import RetainedDigest, signed_message
from kma.audit.record import Condition, Retention
from kma.audit.signing import Signer
from kma.domain.actor import Actor
from kma.errors import Conflict, ValidationFailed
from kma.services.audit.audit_signer import signer, signing
from kma.services.audit.audit_verification import verify_chain
from kma.services.change import Change
from kma.services.common import typed_row
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.store import Stmt

DAY = 86400
# The shortest each class may be (migration 0012 holds them in the store too): long keeps a year
# as compliance regimes ask at the least; medium and short keep what an investigation of the
# last quarter and month needs.
FLOORS = {"long": 365 * DAY, "medium": 90 * DAY, "short": 30 * DAY}
MAX_PERIOD = 100 * 365 * DAY
CHUNK = 10_000
CLASSES = ("long", "medium", "short")


class ScheduleChanged(threading.Event):
    """Set when this KMA's retention schedule changes: it wakes the automatic pruner (audit_pruner),
    which then looks now rather than at its next check."""

    def __init__(self, kma: Appliance) -> None:
        super().__init__()


def schedule_changed(kma: Appliance) -> threading.Event:
    return kma.part(ScheduleChanged)


@dataclass(frozen=True)
class RetentionRow:
    """The retention periods (seconds) and pruning's state; the API's `Retention` reads it."""

    long: int
    medium: int
    short: int
    auto_prune: bool  # the KMA prunes by itself once a day
    updated_at: int
    last_pruned_at: int | None
    last_prune: str | None  # the last prune's audit message
    checkpoints: int  # signed checkpoints kept

    def period(self, retention_class: str) -> int:
        """The period of `long`, `medium` or `short`."""
        return {"long": self.long, "medium": self.medium, "short": self.short}[retention_class]


@dataclass(frozen=True)
class CheckpointRow:
    """A signed checkpoint of one KMA's chain; the API's `Checkpoint` reads it."""

    id: int
    kma_id: str
    chain_seq: int
    hash: str
    created_at: int
    retained_count: int
    signing_key_id: int
    signing_key: str  # the audit signing key's fingerprint


@dataclass(frozen=True)
class PruneRow:
    """What a prune did; the API's `PruneResult` reads it."""

    removed: int
    checkpoints: int
    cutoffs: dict[str, int]  # retention class -> events created before this were due
    retention: RetentionRow


def get_audit_retention(kma: Appliance) -> RetentionRow:
    row = kma.store.query_one(
        "SELECT long, medium, short, auto_prune, updated_at FROM audit_retention WHERE id = 1"
    )
    assert row is not None, "migration 0004 inserts the retention row"
    last = kma.store.query_one(
        "SELECT created_at, message FROM audit_events WHERE operation = 'audit.prune' "
        "AND condition = 'success' ORDER BY id DESC LIMIT 1"
    )
    checkpoints = int(kma.store.scalar("SELECT count(*) FROM audit_checkpoints") or 0)
    return RetentionRow(
        long=row["long"],
        medium=row["medium"],
        short=row["short"],
        auto_prune=bool(row["auto_prune"]),
        updated_at=row["updated_at"],
        last_pruned_at=last["created_at"] if last else None,
        last_prune=last["message"] if last else None,
        checkpoints=checkpoints,
    )


def _years_days(seconds: int) -> str:
    days = seconds // DAY
    return f"{days // 365} y {days % 365} d" if days >= 365 else f"{days} d"


def _checked(kma: Appliance, periods: Mapping[str, int | None]) -> tuple[dict[str, int], dict[str, int]]:
    """(the periods given, all three as they would be), checked against the floors and the order."""
    given = {k: int(v) for k, v in periods.items() if v is not None}
    for name, value in given.items():
        if name not in CLASSES:
            raise ValidationFailed(f"Unknown retention class '{name}'.")
        if not FLOORS[name] <= value <= MAX_PERIOD:
            raise ValidationFailed(
                f"The {name} retention period must be {_years_days(FLOORS[name])} to 100 years, in seconds "
                f"(floors: {', '.join(f'{c} {_years_days(f)}' for c, f in FLOORS.items())})."
            )
    current = get_audit_retention(kma)
    new = {c: given.get(c, current.period(c)) for c in CLASSES}
    if not new["long"] >= new["medium"] >= new["short"]:
        raise ValidationFailed("Retention periods must keep long >= medium >= short.")
    return given, new


def shortens(kma: Appliance, **periods: int | None) -> bool:
    """Whether these periods shorten any class: that removes history, so it needs the quorum."""
    current = get_audit_retention(kma)
    return any(v is not None and v < current.period(c) for c, v in periods.items() if c in CLASSES)


def _change(kma: Appliance, given: Mapping[str, int], auto_prune: bool | None) -> Change:
    current = get_audit_retention(kma)
    new = {c: given.get(c, current.period(c)) for c in CLASSES}
    auto = current.auto_prune if auto_prune is None else auto_prune
    what = ", ".join(f"{c} {_years_days(new[c])}" for c in CLASSES)
    sets = ", ".join(f"{c} = :{c}" for c in given)
    return Change(
        "audit.retention",
        [
            Stmt(
                f"UPDATE audit_retention SET {sets}{', ' if sets else ''}auto_prune = :auto, "
                "updated_at = :now WHERE id = 1",
                {**given, "auto": int(auto), "now": kma.clock.now()},
                expect=1,
                refusal="the retention periods would break long >= medium >= short or a floor",
            )
        ],
        f"set audit retention: {what}; pruning {'every day' if auto else 'by hand only'}",
        ("audit", "retention"),
    )


def set_audit_retention(
    kma: Appliance, actor: Actor, auto_prune: bool | None = None, **periods: int | None
) -> RetentionRow:
    """Lengthen periods or switch automatic pruning; shortening goes through the quorum
    (`SHORTEN_RETENTION`), so one Security Officer cannot make pruning erase history."""
    given, _ = _checked(kma, periods)
    if shortens(kma, **given):
        raise Conflict("Shortening a retention period needs the quorum of the key split.")
    if given or auto_prune is not None:
        change = _change(kma, given, auto_prune)
        kma.commit(actor, change.operation, change.statements, change.message, change.subject)
        schedule_changed(kma).set()  # a schedule just turned on may be due now
    return get_audit_retention(kma)


def _prepare_shorten(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    given, new = _checked(kma, {c: request.get(c) for c in CLASSES})
    auto = request.get("auto_prune")
    current = get_audit_retention(kma)
    what = ", ".join(
        f"{c} {_years_days(current.period(c))} -> {_years_days(new[c])}" for c in CLASSES if c in given
    )
    shown: dict[str, Any] = {**given, **({"auto_prune": auto} if auto is not None else {})}
    return Prepared(f"Change audit retention: {what}", shown, {"periods": given, "auto_prune": auto})


def _execute_shorten(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    change = _change(kma, dict(p["periods"]), p.get("auto_prune"))
    return Outcome(change, schedule_changed(kma).set)


SHORTEN_RETENTION = OpType("shorten_audit_retention", _prepare_shorten, _execute_shorten)


def prune_due(kma: Appliance) -> bool:
    """Automatic pruning is on and the last prune (by anyone) is a day old or more."""
    retention = get_audit_retention(kma)
    last = retention.last_pruned_at
    return retention.auto_prune and (last is None or kma.clock.now() - last >= DAY)


@dataclass(frozen=True)
class _Cut:
    """One chunk of one chain: checkpoint at `seq` (ending in `head`), removing `removed` events."""

    kma_id: str
    seq: int
    head: str
    removed: int
    kept_count: int
    kept_digest: str


def _plan(kma: Appliance, cutoffs: dict[str, int] | None) -> list[_Cut]:
    """Walk every chain up to its committed head; cut a chunk every CHUNK removals.

    With `cutoffs` None nothing is removed: one checkpoint per chain, at its head.
    """
    cuts: list[_Cut] = []
    with kma.store.snapshot() as conn:
        heads = conn.execute("SELECT kma_id, chain_seq, hash FROM audit_heads ORDER BY kma_id").fetchall()
        for kma_id, head_seq, head_hash in heads:
            kept, removed = RetainedDigest(), 0
            rows = conn.execute(
                "SELECT chain_seq, hash, retention, created_at FROM audit_events "
                "WHERE kma_id = ? AND chain_seq <= ? ORDER BY chain_seq",
                (kma_id, head_seq),
            )
            for seq, event_hash, retention, created_at in rows:
                if cutoffs is not None and created_at < cutoffs.get(retention, cutoffs["short"]):
                    removed += 1
                else:
                    kept.add(seq, event_hash)
                if removed >= CHUNK:
                    cuts.append(_Cut(kma_id, seq, event_hash, removed, kept.count, kept.hexdigest()))
                    removed = 0
            if removed or not cuts or cuts[-1].kma_id != kma_id:
                cuts.append(_Cut(kma_id, head_seq, head_hash, removed, kept.count, kept.hexdigest()))
    return cuts


def _checkpoint_stmt(sig: Signer, cut: _Cut, now: int) -> Stmt:
    message = signed_message(cut.kma_id, cut.seq, cut.head, now, cut.kept_count, cut.kept_digest)
    return Stmt(
        "INSERT INTO audit_checkpoints (kma_id, chain_seq, hash, created_at, retained_count, "
        "retained_digest, signing_key_id, signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (cut.kma_id, cut.seq, cut.head, now, cut.kept_count, cut.kept_digest, sig.key_id, sig.sign(message)),
    )


def _refuse_broken(kma: Appliance, actor: Actor, operation: str) -> None:
    report = verify_chain(kma.store, kma.data_dir.ca_cert.read_bytes())
    if not report.intact:
        message = f"the audit trail does not verify ({report.reason}); nothing was changed"
        kma.audit(
            actor,
            operation,
            f"refused: {message}",
            condition=Condition.ERROR,
            subject=("audit", "chain"),
            retention=Retention.LONG,
            event_class="audit",
        )
        raise Conflict(message[0].upper() + message[1:] + ".", audited=True)


def create_audit_checkpoint(kma: Appliance, actor: Actor) -> list[CheckpointRow]:
    """Sign each chain's current head (after verifying the whole trail)."""
    sig = signer(kma)
    with signing(kma).prune_lock:
        _refuse_broken(kma, actor, "audit.checkpoint")
        now = kma.clock.now()
        cuts = _plan(kma, None)
        what = ", ".join(f"KMA {c.kma_id} up to chain #{c.seq}" for c in cuts)
        kma.commit(
            actor,
            "audit.checkpoint",
            [_checkpoint_stmt(sig, c, now) for c in cuts],
            f"signed audit checkpoints: {what}",
            ("audit", "chain"),
        )
    return list_audit_checkpoints(kma)[: len(cuts)]


def prune_audit_events(kma: Appliance, actor: Actor) -> PruneRow:
    """Remove events older than their retention class's period, up to signed checkpoints."""
    sig = signer(kma)
    with signing(kma).prune_lock:
        _refuse_broken(kma, actor, "audit.prune")
        now = kma.clock.now()
        periods = get_audit_retention(kma)
        cutoffs = {c: now - periods.period(c) for c in CLASSES}
        cuts = _plan(kma, cutoffs)
        removed = 0
        for cut in cuts:
            kma.commit(
                actor,
                "audit.prune",
                [
                    _checkpoint_stmt(sig, cut, now),
                    Stmt(
                        "INSERT INTO audit_prune_permits (kma_id, checkpoint_id, cutoff_long, cutoff_medium, "
                        "cutoff_short) VALUES (?, last_insert_rowid(), ?, ?, ?)",
                        (cut.kma_id, cutoffs["long"], cutoffs["medium"], cutoffs["short"]),
                    ),
                    Stmt(
                        "DELETE FROM audit_events WHERE kma_id = :kma AND chain_seq <= :seq AND created_at < "
                        "CASE retention WHEN 'long' THEN :long WHEN 'medium' THEN :medium ELSE :short END",
                        {"kma": cut.kma_id, "seq": cut.seq, **cutoffs},
                        expect=cut.removed,
                        refusal="the events to prune changed while pruning; try again",
                    ),
                    Stmt("DELETE FROM audit_prune_permits WHERE kma_id = ?", (cut.kma_id,), expect=1),
                ],
                f"pruned {cut.removed} audit events of KMA {cut.kma_id} up to chain #{cut.seq} under a "
                f"signed checkpoint (retention: long {_years_days(periods.long)}, medium "
                f"{_years_days(periods.medium)}, short {_years_days(periods.short)})",
                ("audit", "chain"),
            )
            removed += cut.removed
    return PruneRow(removed, len(cuts), cutoffs, get_audit_retention(kma))


def list_audit_checkpoints(kma: Appliance, limit: int = 100) -> list[CheckpointRow]:
    rows = kma.store.query(
        "SELECT c.id, c.kma_id, c.chain_seq, c.hash, c.created_at, c.retained_count, c.signing_key_id, "
        "k.public_key FROM audit_checkpoints c JOIN audit_signing_keys k ON k.id = c.signing_key_id "
        "ORDER BY c.id DESC LIMIT ?",
        (limit,),
    )
    from kma.audit.signing import key_fingerprint

    return [
        typed_row(CheckpointRow, {**dict(r), "signing_key": key_fingerprint(bytes(r["public_key"]))})
        for r in rows
    ]
