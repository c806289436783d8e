"""Data units: tape cartridges (by volser) and the keys that protect them."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.data_units import create_data_unit, issue_key, update_data_unit
from kms_client import DataUnit
from ui.audit.history import history_tab, may_read_history
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.format import words
from ui.lists.details import DetailsDialog
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, FilterSpec, ListSpec
from ui.lists.paged_model import Column
from ui.pages.common import state_tone
from ui.pages.media_pools import generation_filter

STATES = ("no_key", "readable_normal", "readable_needs_rekey", "shredded")


def _new_unit(page: ListPage[DataUnit], _obj: Any) -> None:
    FormDialog(
        page.ctx,
        "New data unit",
        [
            Field(
                "id",
                "Volser or external ID",
                "id",
                required=True,
                help="e.g. E00001 (an 'E' prefix marks encrypted media pools)",
            ),
            Field("description", "Description"),
        ],
        lambda v: create_data_unit(v["id"], v["description"] or None),
        ok_text="Create data unit",
        busy_text="Creating data unit…",
        parent=page,
    ).open()


def _edit_unit(page: ListPage[DataUnit], d: DataUnit) -> None:
    FormDialog(
        page.ctx,
        f"Edit data unit {d.id}",
        [Field("description", "Description", default=d.description)],
        lambda v: update_data_unit(d.id, description=v["description"]),
        busy_text="Saving data unit…",
        parent=page,
    ).open()


def _issue_key(page: ListPage[DataUnit], d: DataUnit) -> None:
    FormDialog(
        page.ctx,
        f"Issue a key for {d.id}",
        [
            Field(
                "key_group_id",
                "Key group",
                "choice",
                required=True,
                load_choices=lambda client: [(g.id, g.id) for g in client.iter_key_groups()],
            )
        ],
        lambda v: issue_key(v["key_group_id"], d.id),
        intro="Issues a key from this KMA's pool, as an agent's request would.",
        ok_text="Issue key",
        busy_text="Issuing key…",
        parent=page,
    ).open()


def _groups_last_used_first(client: Any, unit_id: str) -> list[tuple[str, Any]]:
    """Key groups, the one of the data unit's newest key first (worker thread)."""
    newest = client.list_keys(data_unit_id=unit_id, limit=1).items  # newest issued first
    groups = [g.id for g in client.iter_key_groups()]
    if newest and newest[0].key_group_id in groups:
        groups.remove(newest[0].key_group_id)
        groups.insert(0, newest[0].key_group_id)
    return [(g, g) for g in groups]


def _rekey(page: ListPage[DataUnit], d: DataUnit) -> None:
    FormDialog(
        page.ctx,
        f"Rekey {d.id}",
        [
            Field(
                "key_group_id",
                "Key group",
                "choice",
                required=True,
                load_choices=lambda client: _groups_last_used_first(client, d.id),
            )
        ],
        lambda v: issue_key(v["key_group_id"], d.id),
        intro=f"<b>{d.id}</b> needs a rekey: none of its keys is in its encryption period, so "
        "a drive may read it but write nothing new with them. Rekeying issues a new write "
        "key now; what is already on the tape stays readable with its old keys.",
        ok_text="Rekey",
        busy_text="Rekeying…",
        parent=page,
    ).open()


def _details(page: ListPage[DataUnit], unit: DataUnit) -> None:
    from ui.pages.keys import keys_list

    dialog = DetailsDialog(f"Data unit {unit.id}", unit, page)
    dialog.add_tab(keys_list(page.ctx, {"data_unit_id": unit.id}, dialog), "Keys")
    if may_read_history(page.ctx):
        dialog.add_tab(history_tab(page.ctx, "data_unit", unit.id, dialog), "History")
    dialog.open()


SPEC = ListSpec(
    key="data_units",
    title="Data units",
    noun="data unit",
    live=True,
    subtitle="What agents encrypt, such as tape cartridges by volser. A new write key is issued per tape.",
    columns=[
        Column("id", "Volser / ID", 130),
        Column("description", "Description", 260),
        Column("state", "State", 170, format=words, tone=state_tone),
        Column("key_count", "Keys", 60, align_right=True),
        Column("pool_id", "Media pool", 110, sortable=False, format=lambda p: p or ""),
        Column("writer_generation", "Written by", 90, sortable=False, format=lambda g: g or ""),
        Column("created_at", "Created", 140),
        Column("updated_at", "Updated", 140),
    ],
    fetch=lambda client: client.list_data_units,
    sort_fields=frozenset({"id", "created_at"}),  # the KMA filters by state, does not sort by it
    filtered_sorts={},  # units in a state are listed by ID
    get=lambda client: client.get_data_unit,
    filters=[
        FilterSpec("state", "State", [("Any state", None)] + [(words(s), s) for s in STATES]),
        generation_filter("writer_generation", "Written by"),
        FilterSpec(
            "pool_id",
            "Media pool",
            [("Any media pool", None)],
            load_choices=lambda client: [(p.id, p.id) for p in client.iter_all(client.list_media_pools)],
        ),
    ],
    actions=[
        ActionSpec("New data unit…", _new_unit, "data.write", needs="none", toolbar=True, shortcut="Ctrl+N"),
        ActionSpec("Edit description…", _edit_unit, "data.write"),
        ActionSpec(
            "Rekey…", _rekey, "data.write", toolbar=True, enabled=lambda d: d.state == "readable_needs_rekey"
        ),
        ActionSpec("Issue key…", _issue_key, "data.write", enabled=lambda d: d.state != "shredded"),
    ],
    details=_details,
    default_sort=("id", Qt.SortOrder.AscendingOrder),
)


def build(ctx: AppContext) -> ListPage[DataUnit]:
    return ListPage(ctx, SPEC)


register(PageSpec("data_units", "Data units", build, "data.read", order=70, icon="SP_DriveCDIcon"))
