"""The KMAs of the cluster, with each one's key pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.lifecycle import HELD_OR_REPLICATED
from kma.domain.validation import check_text
from kma.errors import NotFound, ValidationFailed
from kma.services.common import describe, patch, require, typed_row
from kma.services.integrity import entry_signatures
from kma.services.keypool import key_pool
from kma.services.paging import ListQuery, Page, PageRequest, list_page

# The expiry of a KMA's current (newest, not revoked) certificate of one purpose
_CURRENT = (
    "(SELECT c.not_after FROM kma_certificates c WHERE c.kma_id = kmas.id AND c.purpose = '{purpose}' "
    "AND c.revoked_at IS NULL ORDER BY c.issued_at DESC LIMIT 1)"
)
LIST = ListQuery(
    select=(
        "SELECT id, name, site_id, management_address, service_address, raft_address, voter, witness, "
        "awaiting_join, removed_at, version, schema_version, rqlite_version, locked, key_pool_size, "
        # Ready as the pool, the Backups page and the key states count it: a pool key a backup or
        # another KMA holds (a Generated one waiting for its backup is not Ready).
        "(SELECT count(*) FROM keys k WHERE k.kma_id = kmas.id AND k.activated_at IS NULL "
        "AND k.destroyed_at IS NULL AND k.key_group_id IS NULL AND k.withheld_at IS NULL "
        f"AND {HELD_OR_REPLICATED.format(t='k.')}) "
        "AS pool_ready, created_at, "
        + _CURRENT.format(purpose="server")
        + " AS certificate_expires_at, "
        + _CURRENT.format(purpose="node")
        + " AS node_certificate_expires_at, "
        "certificate_renewal_requested_at IS NOT NULL AS certificate_renewal_requested "
        "FROM kmas"
    ),
    sort_fields={"id": "id", "name": "name", "site_id": "site_id"},
    default_sort="name",
    search=("id", "name", "site_id"),
)


UNTRUSTED = (
    "written or altered in the store without a KMA (its signature does not verify): nobody is sent "
    "to it; remove it (a quorum operation)"
)


@dataclass(frozen=True)
class KmaRow:
    """A KMA of the cluster as its entry and its key pool say (times in seconds since the epoch);
    the API's `Kma` reads it."""

    id: str
    name: str
    site_id: str
    management_address: str
    service_address: str
    raft_address: str
    voter: bool
    witness: bool
    awaiting_join: bool
    removed_at: int | None
    version: str
    schema_version: int | None
    rqlite_version: str | None
    locked: bool
    key_pool_size: int
    pool_ready: int
    created_at: int
    certificate_expires_at: int | None
    node_certificate_expires_at: int | None
    certificate_renewal_requested: bool
    entry_problem: str | None  # why its entry is not trusted; None: its signature verifies


def _row(kma: Appliance, row: Any, trusted: set[str]) -> dict[str, Any]:
    out = dict(row)
    # This KMA knows its own lock state first-hand; the others' is what they last recorded.
    out["locked"] = kma.vault.locked if out["id"] == kma.kma_id else bool(out["locked"])
    for flag in ("voter", "witness", "awaiting_join", "certificate_renewal_requested"):
        out[flag] = bool(out[flag])
    out["entry_problem"] = None if out["id"] in trusted else UNTRUSTED
    return out


def list_kmas(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, LIST, req)
    trusted = entry_signatures.trusted_ids(kma)
    return page.with_items([_row(kma, r, trusted) for r in page.items])


def get_kma(kma: Appliance, kma_id: str) -> KmaRow:
    row = kma.store.query_one(f"SELECT * FROM ({LIST.select}) WHERE id = ?", (kma_id,))
    if row is None:
        raise NotFound(f"There is no KMA '{kma_id}'.")
    return typed_row(KmaRow, _row(kma, row, entry_signatures.trusted_ids(kma)))


def update_kma(kma: Appliance, actor: Actor, kma_id: str, **changes: Any) -> KmaRow:
    changes = {k: v for k, v in changes.items() if v is not None}
    if "name" in changes:
        check_text(changes["name"], "The name", required=True)
    if "site_id" in changes:
        require(kma, "site", changes["site_id"])
    if "key_pool_size" in changes and not 0 <= changes["key_pool_size"] <= 100_000:
        raise ValidationFailed("The key pool size must be 0 to 100,000.")
    if changes:
        kma.commit(
            actor,
            "kma.update",
            [
                patch("KMA", kma_id, changes, kma.clock.now()),
                entry_signatures.resign_routes(kma, kma_id, **changes),
            ],
            f"changed KMA '{kma_id}': {describe(changes)}",
            ("kma", kma_id),
        )
        key_pool(kma).take_notice()
    return get_kma(kma, kma_id)
