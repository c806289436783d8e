"""Raising the cluster version (its rules: kma/store/cluster_version.py): a quorum operation a
Security Officer proposes once every KMA runs a release that supports the new version.

Refused, naming the KMAs still too old, while any KMA of the cluster (witnesses too) has not
recorded such a release; checked again when the quorum's last approval runs it. An entry whose
machine has not joined yet does not count: whatever release joins later checks the cluster version
itself (release 0.1.0's start is refused by the store, migration 0043). Once it is committed,
this KMA applies the contract migrations the new version allows to the cluster's store (the other
KMAs find them applied).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kma import __version__
from kma.appliance import Appliance
from kma.errors import Conflict, ValidationFailed
from kma.services.change import Change
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.store import Stmt, cluster_version

NOT_RECORDED = "not started on 0.2.0 or later"


def current(kma: Appliance) -> tuple[int, str]:
    """(the cluster version, the first release that supports it)."""
    return cluster_version.current(kma.store.query(cluster_version.CURRENT_SQL))


def too_old(kma: Appliance, version: int) -> list[str]:
    """The KMAs of the cluster whose recorded release does not support `version`, as 'ID (release)'."""
    rows = kma.store.query(
        "SELECT id, version, schema_version FROM kmas WHERE removed_at IS NULL "
        "AND awaiting_join = 0 ORDER BY id"
    )
    return [
        f"{r['id']} ({_runs(r) or NOT_RECORDED})"
        for r in rows
        if not cluster_version.release_supports(_runs(r), version)
    ]


def _runs(row: Any) -> str | None:
    """The release a KMA ran at its last start (`version`), when that start was its own: release
    0.2.0 and later record `schema_version` beside it. A KMA with none never started on such a
    release (it runs 0.1.0, or has not started since its upgrade): its `version` may be what the
    KMA that made its row ran."""
    return None if row["schema_version"] is None else str(row["version"])


def _refuse_too_old(kma: Appliance, version: int) -> None:
    if old := too_old(kma, version):
        needs = cluster_version.FIRST_RELEASE[version]
        raise Conflict(
            f"Cluster version {version} needs release {needs} or later on every KMA; still too old: "
            f"{', '.join(old)}. Upgrade them (or remove the entries of KMAs that will not come back) first."
        )


def _prepare(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    target = request.get("version")
    if not isinstance(target, int) or isinstance(target, bool):
        raise ValidationFailed("The cluster version must be a whole number.")
    now, _ = current(kma)
    high = cluster_version.supported()[1]
    if target <= now:
        raise Conflict(f"The cluster runs at cluster version {now} already; it is only ever raised.")
    if target > high:
        raise ValidationFailed(
            f"This KMA's release ({__version__}) knows cluster versions up to {high}; "
            "propose the raise on a KMA of a later release."
        )
    _refuse_too_old(kma, target)
    needs = cluster_version.FIRST_RELEASE[target]
    summary = (
        f"Raise the cluster version from {now} to {target}: a KMA of a release before {needs} can no "
        "longer start in this cluster, and the store's contract migrations run"
    )
    return Prepared(summary, {"version": target}, {"version": target, "from": now}, exclusive=True)


def _execute(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    target = int(p["version"])
    _refuse_too_old(kma, target)  # a KMA may have started an older release since the proposal
    needs = cluster_version.FIRST_RELEASE[target]
    # Guarded in the same write: no KMA started release 0.1.0 (the one release before the cluster
    # version, which records no schema version) since the check.
    stmt = Stmt(
        "INSERT INTO cluster_version (id, version, needs_release, raised_at, raised_by_op) "
        "SELECT 1, :version, :needs, :now, :op WHERE NOT EXISTS (SELECT 1 FROM kmas WHERE removed_at IS NULL "
        "AND awaiting_join = 0 AND (schema_version IS NULL OR version = '0.1.0')) "
        "ON CONFLICT (id) DO UPDATE SET version = excluded.version, needs_release = excluded.needs_release, "
        "raised_at = excluded.raised_at, raised_by_op = excluded.raised_by_op "
        "WHERE cluster_version.version < excluded.version",
        {"version": target, "needs": needs, "now": kma.clock.now(), "op": op_id},
        expect=1,
        refusal=f"the cluster version was raised to {target} or beyond meanwhile, or a KMA started an "
        "older release meanwhile",
    )
    message = f"raised the cluster version from {p['from']} to {target} (every KMA runs {needs} or later)"
    change = Change("cluster.version", [stmt], message, ("cluster_version", str(target)))
    return Outcome(change, lambda: _contract_migrations(kma, target))


def _contract_migrations(kma: Appliance, version: int) -> None:
    from kma.store.rqlite import RqliteStore

    if isinstance(kma.store, RqliteStore):  # an embedded store applied them at once
        kma.store.apply_contract_migrations(version)


RAISE_CLUSTER_VERSION = OpType("raise_cluster_version", _prepare, _execute)
