"""Sites: the named locations KMAs and agents belong to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.validation import check_id, check_text
from kma.errors import NotFound
from kma.services.common import describe, patch, require, typed_row
from kma.services.paging import ListQuery, Page, PageRequest, list_page
from kma.store import Stmt

LIST = ListQuery(
    select="SELECT id, name, description, created_at, updated_at FROM sites",
    sort_fields={"id": "id", "name": "name", "created_at": "created_at"},
    default_sort="name",
    search=("id", "name", "description"),
)


@dataclass(frozen=True)
class SiteRow:
    """A site as the store holds it (times in seconds since the epoch); the API's `Site` reads it."""

    id: str
    name: str
    description: str
    created_at: int
    updated_at: int


def list_sites(kma: Appliance, req: PageRequest) -> Page:
    return list_page(kma.store, LIST, req)


def get_site(kma: Appliance, site_id: str) -> SiteRow:
    row = kma.store.query_one(LIST.select + " WHERE id = ?", (site_id,))
    if row is None:
        raise NotFound(f"There is no site '{site_id}'.")
    return typed_row(SiteRow, row)


def create_site(kma: Appliance, actor: Actor, site_id: str, name: str, description: str = "") -> SiteRow:
    check_id(site_id, "The site ID")
    check_text(name, "The name", required=True)
    check_text(description, "The description")
    now = kma.clock.now()
    kma.commit(
        actor,
        "site.create",
        [
            Stmt(
                "INSERT INTO sites (id, name, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                (site_id, name, description, now, now),
            )
        ],
        f"created site '{site_id}' ({name})",
        ("site", site_id),
    )
    return get_site(kma, site_id)


def update_site(kma: Appliance, actor: Actor, site_id: str, **changes: Any) -> SiteRow:
    changes = {k: v for k, v in changes.items() if v is not None}
    if "name" in changes:
        check_text(changes["name"], "The name", required=True)
    if "description" in changes:
        check_text(changes["description"], "The description")
    if changes:
        kma.commit(
            actor,
            "site.update",
            [patch("site", site_id, changes, kma.clock.now())],
            f"changed site '{site_id}': {describe(changes)}",
            ("site", site_id),
        )
    return get_site(kma, site_id)


def delete_site(kma: Appliance, actor: Actor, site_id: str) -> None:
    require(kma, "site", site_id)
    kma.commit(
        actor,
        "site.delete",
        [
            Stmt(
                "DELETE FROM sites WHERE id = :id AND NOT EXISTS (SELECT 1 FROM kmas WHERE site_id = :id) "
                "AND NOT EXISTS (SELECT 1 FROM agents WHERE site_id = :id)",
                {"id": site_id},
                expect=1,
                refusal=f"site '{site_id}' still has KMAs or agents",
            )
        ],
        f"deleted site '{site_id}'",
        ("site", site_id),
    )
