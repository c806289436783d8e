"""Keys: issue from the pool, compromise, destroy, and list them by lifecycle state.

Key material never leaves this module except wrapped (and, for agents, inside TLS); the API
returns only a key's metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from hashlib import sha256
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.lifecycle import (
    BACKUP_HOLDS_DESTROYED_KEY,
    BACKUP_HOLDS_KEY,
    DESTROYABLE_SQL,
    KeyState,
    key_in_state,
    key_state_sql,
)
from kma.domain.validation import check_text
from kma.errors import Conflict, NotFound
from kma.services import key_issue
from kma.services.agent_keys import key_lifecycle
from kma.services.common import require, typed_row
from kma.services.integrity import key_macs
from kma.services.paging import (
    Filter,
    ListQuery,
    Page,
    PageRequest,
    SearchIndex,
    boolean,
    choice,
    indexed_rows,
    list_page,
)
from kma.store import Stmt, fts

# What the object is (KMIP: an AES key of its size, Secret Data, an Opaque Object, a registered
# public or private key of its algorithm and size, an X.509 certificate; key_kmip says when it is
# not an AES-256 key), and the Name a client gave it (a general key's, or a tape library's own label).
_KEY_SQL = "CASE m.algorithm WHEN 4 THEN 'RSA' WHEN 5 THEN 'DSA' ELSE 'ECDSA' END || '-' || m.bits"
OBJECT_SQL = (
    "coalesce((SELECT CASE m.object_type WHEN 7 THEN 'Secret Data' WHEN 8 THEN 'Opaque Object' "
    f"WHEN 1 THEN 'X.509 Certificate' WHEN 3 THEN {_KEY_SQL} || ' Public Key' "
    f"WHEN 4 THEN {_KEY_SQL} || ' Private Key' "
    "ELSE 'AES-' || coalesce(m.bits, 256) END FROM key_kmip m WHERE m.key_id = keys.id), 'AES-256')"
)
NAME_SQL = (
    "(SELECT c.value FROM key_custom_attributes c WHERE c.key_id = keys.id AND c.name = 'Name' AND c.idx = 0)"
)
# When the KMA makes an active general key's successor itself (its policy's rotation period after its
# activation, kma/services/successors.py); NULL when it never will (no period, replaced, ended).
ROTATION_DUE_SQL = (
    "(SELECT keys.activated_at + p.rotation_period FROM key_groups g "
    "JOIN key_policies p ON p.id = g.policy_id WHERE g.id = keys.key_group_id AND p.general_keys = 1 "
    "AND keys.activated_at IS NOT NULL AND keys.destroyed_at IS NULL AND keys.compromised_at IS NULL "
    "AND keys.data_unit_id IS NULL AND keys.activated_at + p.rotation_period < keys.deactivate_at "
    "AND NOT EXISTS (SELECT 1 FROM key_kmip m WHERE m.key_id = keys.id "
    "AND (m.replacement_id IS NOT NULL OR coalesce(m.object_type, 2) <> 2)))"
)
PUBLIC = (
    f"id, key_group_id, data_unit_id, agent_id, kma_id, {OBJECT_SQL} AS algorithm, {NAME_SQL} AS name, "
    f"{ROTATION_DUE_SQL} AS rotation_due_at, "
    f"{key_state_sql()} AS state, compromised_at IS NOT NULL AS compromised, compromised_at, "
    "created_at, activated_at, protect_until, deactivate_at, destroyed_at, destroy_comment, backup_mark, "
    "withheld_at, "
    "CASE WHEN destroyed_at IS NULL THEN NULL ELSE NOT EXISTS (SELECT 1 FROM backups b WHERE "
    f"{BACKUP_HOLDS_DESTROYED_KEY.format(t='keys.', b='b.')}) END AS destruction_complete"
)
_NOT_LIKE = "coalesce({} NOT LIKE :search ESCAPE '\\', 1)"
# Each sort and filter is served by an index (migrations 0008, 0014). There is no sort by state: a
# state follows from the key's times and the clock, so no index holds keys in state order; the
# state filter is there instead. Ties in a sort are broken by the key's row number (`seq`, the
# order in which the pool made the keys), which every index ends with: an index ending in the
# random key ID would put each new key at a random place, on the Create path.
LIST = ListQuery(
    select=f"SELECT {PUBLIC}, rowid AS seq FROM keys",
    sort_fields={
        "created_at": "created_at",
        "activated_at": "activated_at",
        "id": "id",
        "data_unit_id": ("data_unit_id", "activated_at"),
    },
    default_sort="activated_at",  # newest issued first; unassigned pool keys (NULL) last
    default_order="desc",
    search=("id", "data_unit_id", "key_group_id"),
    # A key is found by its ID (keys_text), its volser (the ID in data_units_text, or of a unit above
    # that index's mark: not indexed yet, kma/store/fts.py) or its group (a few rows); each part
    # after the first leaves out keys the one before found, so each key comes once.
    search_index=SearchIndex(
        "seq",
        (
            f"{indexed_rows('keys_text', 'rowid')} "
            "UNION ALL SELECT k.rowid FROM data_units_text d CROSS JOIN keys k ON k.data_unit_id = d.id "
            f"WHERE data_units_text MATCH 'id : ' || :search_phrase AND {_NOT_LIKE.format('k.id')} "
            "UNION ALL SELECT k.rowid FROM data_units d CROSS JOIN keys k ON k.data_unit_id = d.id "
            f"WHERE d.rowid > ({fts.LISTS['data_units_text'].mark_sql}) AND d.id LIKE :search ESCAPE '\\' "
            f"AND {_NOT_LIKE.format('k.id')} "
            "UNION ALL SELECT k.rowid FROM key_groups g CROSS JOIN keys k ON k.key_group_id = g.id "
            f"WHERE g.id LIKE :search ESCAPE '\\' AND {_NOT_LIKE.format('k.id')} "
            f"AND {_NOT_LIKE.format('k.data_unit_id')}"
        ),
    ),
    filters={
        # The pool's keys, Generated or Ready by their backup mark, are counted and (when few) found
        # in the pool's own index (migration 0104); walking the list's order for them read every
        # pool key. The other waiting states have indexes in the list's order.
        "state": choice(
            {s: key_in_state(s) for s in KeyState}, own_index=frozenset({KeyState.GENERATED, KeyState.READY})
        ),
        "key_group_id": Filter("key_group_id = :value"),
        "data_unit_id": Filter("data_unit_id = :value"),
        "agent_id": Filter("agent_id = :value"),
        "compromised": choice({1: "compromised_at IS NOT NULL", 0: "compromised_at IS NULL"}, boolean),
    },
    id_sql="seq",
    filtered_sorts={
        "created_at": frozenset({"compromised"}),
        "id": frozenset({"compromised"}),
        "data_unit_id": frozenset({"compromised", "data_unit_id"}),
    },
)


@dataclass(frozen=True)
class HeldBackup:
    """A live database backup that still holds a destroyed key."""

    id: str
    created_at: int


@dataclass(frozen=True)
class KmipAttribute:
    """An attribute a KMIP client set on a key, as text."""

    name: str
    value: str


@dataclass(frozen=True)
class KeyRow:
    """A key in its details (times in seconds since the epoch), never its material; the API's
    `Key` reads it."""

    id: str
    key_group_id: str | None
    data_unit_id: str | None
    agent_id: str | None
    kma_id: str
    algorithm: str
    name: str | None  # the Name a KMIP client gave the object
    state: str
    compromised: bool
    created_at: int
    activated_at: int | None
    protect_until: int | None
    deactivate_at: int | None
    compromised_at: int | None
    destroyed_at: int | None
    destroy_comment: str | None
    destruction_complete: bool | None  # destroyed, and no database backup holds it any more
    rotation_due_at: int | None  # when the KMA makes this general key's successor
    held_by_backups: list[HeldBackup]
    kmip_attributes: list[KmipAttribute]


def _row(row: Any) -> dict[str, Any]:
    out = dict(row)
    out.pop("seq", None)  # the list's tie-break only
    out["compromised"] = bool(out["compromised"])
    if out["destruction_complete"] is not None:
        out["destruction_complete"] = bool(out["destruction_complete"])
    return out


def list_keys(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, LIST, req, {"now": kma.clock.now()})
    return page.with_items([_row(r) for r in page.items])


def get_key(kma: Appliance, key_id: str) -> KeyRow:
    row = kma.store.query_one(
        f"SELECT {PUBLIC} FROM keys WHERE id = :id", {"id": key_id, "now": kma.clock.now()}
    )
    if row is None:
        raise NotFound(f"There is no key '{key_id}'.")
    holds = BACKUP_HOLDS_KEY.format(t="keys.", b="b.")
    held = kma.store.query(
        f"SELECT b.id, b.created_at FROM backups b, keys WHERE keys.id = ? AND {holds} ORDER BY b.created_at",
        (key_id,),
    )
    kept = kma.store.query(
        "SELECT name, value FROM key_custom_attributes WHERE key_id = ? ORDER BY name, idx", (key_id,)
    )
    # Sensitive, set by the client with the object, and Re-Key's Links (kma/kmip/ops_rekey.py) are
    # kept beside what the object is (key_kmip)
    kmip = kma.store.query_one(
        "SELECT sensitive, replacement_id, replaced_id FROM key_kmip WHERE key_id = ?", (key_id,)
    )
    own = []
    if kmip is not None:
        own += [KmipAttribute("Sensitive", "True")] if kmip["sensitive"] else []
        for label, column in (("Replaced by", "replacement_id"), ("Replaces", "replaced_id")):
            if kmip[column] is not None:
                own.append(KmipAttribute(f"Link: {label}", kmip[column]))
    return typed_row(
        KeyRow,
        {
            **_row(row),
            "held_by_backups": [HeldBackup(r["id"], r["created_at"]) for r in held],
            "kmip_attributes": [KmipAttribute(r["name"], r["value"]) for r in kept] + own,
        },
    )


def issue_key(
    kma: Appliance,
    actor: Actor,
    key_group_id: str,
    data_unit_id: str,
    agent_id: str | None = None,
    register_data_unit: bool = False,
) -> KeyRow:
    """Activate a key for a data unit: Protect-and-Process from now, per the group's policy."""
    require(kma, "key group", key_group_id)
    if not register_data_unit:
        require(kma, "data unit", data_unit_id)
    issue = key_issue.prepare(
        kma, key_group_id, data_unit_id, kma.clock.now(), agent_id=agent_id, activate=True, agent_asks=False
    )
    try:
        kma.commit(
            actor,
            "key.issue",
            issue.statements,
            f"issued key {issue.key_id} for data unit '{data_unit_id}' in key group '{key_group_id}'"
            + issue.note,
            ("key", issue.key_id),
        )
    except Conflict:
        issue.give_back()
        raise
    return get_key(kma, issue.key_id)


def compromise_key(kma: Appliance, actor: Actor, key_id: str, comment: str) -> KeyRow:
    check_text(comment, "The comment", max_len=500, required=True)
    require(kma, "key", key_id)
    row = key_macs.sealed_key(kma, key_id)
    now = kma.clock.now()
    kma.commit(
        actor,
        "key.compromise",
        [
            Stmt(
                "UPDATE keys SET compromised_at = ? "
                "WHERE id = ? AND compromised_at IS NULL AND destroyed_at IS NULL",
                (now, key_id),
                expect=1,
                refusal="the key is already compromised or destroyed",
            ),
            key_macs.reseal(kma, row, compromised_at=now),
        ],
        f"marked key {key_id} compromised: {comment}",
        ("key", key_id),
    )
    return get_key(kma, key_id)


def destroy_key(kma: Appliance, actor: Actor, key_id: str, comment: str) -> KeyRow:
    check_text(comment, "The comment", max_len=500, required=True)
    require(kma, "key", key_id)
    row = key_macs.sealed_key(kma, key_id)
    now = kma.clock.now()
    wrapped = kma.store.scalar("SELECT material_wrapped FROM keys WHERE id = ?", (key_id,))
    digest = (  # KMIP's Digest stays with the key once its material is gone
        [
            key_lifecycle.keep_digest(
                key_id, sha256(kma.vault.master().unwrap(f"key:{key_id}", wrapped)).digest()
            )
        ]
        if wrapped is not None
        else []
    )
    kma.commit(
        actor,
        "key.destroy",
        [
            *digest,
            Stmt(
                "UPDATE keys SET destroyed_at = :now, destroy_comment = :comment, material_wrapped = NULL "
                f"WHERE id = :id AND {DESTROYABLE_SQL}",
                {"now": now, "comment": comment, "id": key_id},
                expect=1,
                refusal="only deactivated or compromised keys can be destroyed",
            ),
            key_macs.reseal(kma, row, destroyed_at=now),
            Stmt(  # its data unit changed too (it may now be shredded)
                "UPDATE data_units SET updated_at = ? "
                "WHERE id = (SELECT data_unit_id FROM keys WHERE id = ?)",
                (now, key_id),
            ),
        ],
        f"destroyed key {key_id}: {comment}",
        ("key", key_id),
    )
    return get_key(kma, key_id)


HOUR = 3600


def issued_since(kma: Appliance, since: int, kma_id: str) -> int:
    """Keys `kma_id` issued (activated) at or after `since`: whole hours from their per-hour counts
    (migration 0115), the part of an hour before them from the activation index, so a dashboard at
    a million keys reads a few hundred rows, not the keys."""
    first_whole_hour = -(-since // HOUR)
    counted = kma.store.scalar(
        "SELECT coalesce(sum(keys), 0) FROM keys_issued_per_hour WHERE hour >= ? AND kma_id = ?",
        (first_whole_hour, kma_id),
    )
    before = kma.store.scalar(
        "SELECT count(*) FROM keys WHERE activated_at >= ? AND activated_at < ? AND kma_id = ?",
        (since, first_whole_hour * HOUR, kma_id),
    )
    return int(counted or 0) + int(before or 0)


def issued_per_day(kma: Appliance, first_day: int) -> dict[int, int]:
    """Keys the cluster issued on each day (days since the epoch, UTC) from `first_day` on."""
    return {
        int(day): int(count)
        for day, count in kma.store.query(
            "SELECT hour / 24, sum(keys) FROM keys_issued_per_hour WHERE hour >= ? GROUP BY hour / 24",
            (first_day * 24,),
        )
    }
