"""The signed media report (docs/media.md): the tapes to relabel before reuse and the tapes that
moved between pools, as one CSV an Operator or Security Officer hands to the library's operators,
signed as every report is (kma/services/reports/signed_report.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kma.appliance import Appliance
from kma.audit.exports import iso
from kma.domain.actor import Actor
from kma.services.media.media_views import list_tapes_moved_between_pools, list_tapes_to_relabel
from kma.services.paging import MAX_LIMIT, Page, PageRequest
from kma.services.reports.signed_report import SignedReportRow, signed_report

COLUMNS = (
    "list",
    "volser",
    "media_pool",
    "pool_key_group",
    "key_groups",
    "written_by",
    "updated_at",
    "to_do",
)


def _all(listed: Callable[[Appliance, PageRequest], Page], kma: Appliance) -> Iterator[Any]:
    cursor = None
    while True:
        page = listed(kma, PageRequest(limit=MAX_LIMIT, cursor=cursor))
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _rows(kma: Appliance) -> list[list[str]]:
    rows = [
        [
            "relabel",
            t["id"],
            t["pool_id"] or "",
            "",
            "",
            t["writer_generation"] or "",
            iso(t["updated_at"]),
            "every key destroyed: write it from BOT (overwrite existing labels) before reuse",
        ]
        for t in _all(list_tapes_to_relabel, kma)
    ]
    rows += [
        [
            "moved_between_pools",
            t["id"],
            t["pool_id"],
            t["pool_key_group_id"] or "(never encrypted)",
            " ".join(t["key_groups"]),
            t["writer_generation"] or "",
            iso(t["updated_at"]),
            "its keys are of another key group than its pool's: check where it belongs",
        ]
        for t in _all(list_tapes_moved_between_pools, kma)
    ]
    return rows


def get_media_report(kma: Appliance, actor: Actor) -> SignedReportRow:
    return signed_report(
        kma, actor, "media", "tapes to relabel and tapes moved between pools", COLUMNS, _rows(kma)
    )
