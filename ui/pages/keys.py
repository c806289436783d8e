"""Keys: tape keys (AES-256) and general KMIP objects (AES keys of any size, secret data, opaque
objects) through their lifecycle; compromise and destroy with a comment."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

import kms_client
from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.keys import compromise_key, destroy_key
from kms_client import Key
from ui.audit.history import history_tab, may_read_history
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.format import when, words, yes_no
from ui.lists.details import DetailsDialog
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, FilterSpec, ListSpec
from ui.lists.paged_model import Column
from ui.pages.common import state_tone

KEY_SORT = frozenset({"created_at", "activated_at", "id", "data_unit_id"})  # the KMA filters by state
# Filtered, keys are listed newest activation first (kma/services/keys.py pairs sorts with filters).
KEY_DEFAULT_SORT = ("activated_at", Qt.SortOrder.DescendingOrder)
KEY_FILTERED_SORTS = {
    "created_at": frozenset({"compromised"}),
    "id": frozenset({"compromised"}),
    "data_unit_id": frozenset({"compromised", "data_unit_id"}),
}


def destroyable(key: Key) -> bool:
    return key.state != "destroyed" and (key.state == "deactivated" or key.compromised)


def _compromise(page: ListPage[Key], key: Key) -> None:
    FormDialog(
        page.ctx,
        f"Mark key {key.id} compromised",
        [Field("comment", "Why", "multiline", required=True, max_length=500)],
        lambda v: compromise_key(key.id, v["comment"]),
        intro="A compromised key can still decrypt existing data but gets flagged everywhere, "
        "and it may then be destroyed.",
        ok_text="Mark compromised",
        busy_text="Marking key compromised…",
        danger=True,
        parent=page,
    ).open()


def _destroy(page: ListPage[Key], key: Key) -> None:
    FormDialog(
        page.ctx,
        f"Destroy key {key.id}",
        [Field("comment", "Reason (recorded in the audit log)", "multiline", required=True, max_length=500)],
        lambda v: destroy_key(key.id, v["comment"]),
        intro="<b>Destroying a key cannot be undone.</b> Data written with it becomes "
        f"unreadable{' on ' + key.data_unit_id if key.data_unit_id else ''}. "
        "Destruction stays incomplete while a backup still holds the key.",
        ok_text="Destroy key",
        busy_text="Destroying key…",
        danger=True,
        parent=page,
    ).open()


def _details(page: ListPage[Key], key: Key) -> None:
    """A list row lacks what only a key's own details carry (the backups holding a destroyed
    key): fetch them, then show the dialog."""
    page.ctx.ops.read(
        lambda worker: worker.client.get_key(key.id),
        parent=page,
        success=lambda full: open_details(page, full),
    )


LABELS = {
    "compromised_at": "Compromised at",
    "algorithm": "Object",
    "kmip_attributes": "KMIP attributes",
    "rotation_due_at": "Rotation due (the KMA makes its successor)",
}


def detail_texts(key: Any) -> dict[str, str]:
    """What a key's details word themselves: its destruction, and what KMIP clients set on it
    (Application Specific Information, names, x- attributes), one per line."""
    texts = destruction_texts(key)
    if key.kmip_attributes:
        texts["kmip_attributes"] = "\n".join(f"{a.name}: {a.value}" for a in key.kmip_attributes)
    return texts


def destruction_texts(key: Any) -> dict[str, str]:
    """The database backups that hold the key (any key's, read with its details), and a destroyed
    key's destruction in words: complete, or incomplete while those backups hold it."""
    held = "\n".join(f"{b.id} (made {when(b.created_at)})" for b in key.held_by_backups)
    texts = {"held_by_backups": held}  # none: "—", as every empty field
    if key.destruction_complete is False:
        texts["destruction_complete"] = (
            "No: the database backups below still hold the key. Deleting them (Backups page) "
            "completes its destruction."
        )
    return texts


def open_details(page: ListPage[Key], key: Key) -> DetailsDialog:
    dialog = DetailsDialog(f"Key {key.id}", key, page, labels=LABELS, texts=detail_texts(key))
    if may_read_history(page.ctx):
        dialog.add_tab(history_tab(page.ctx, "key", key.id, dialog), "History")
    dialog.open()
    return dialog


COLUMNS = [
    Column("id", "Key ID", 290),
    Column("state", "State", 190, format=words, tone=state_tone),
    Column("compromised", "Compromised", 95, format=yes_no, tone=lambda k: "bad" if k.compromised else None),
    Column("algorithm", "Object", 170),  # "RSA-2048 Private Key" unclipped
    Column("name", "Name", 150),
    Column("data_unit_id", "Data unit", 100),
    Column("key_group_id", "Key group", 120),
    Column("created_at", "Created", 140),
    Column("activated_at", "Activated", 140),
    Column("protect_until", "Protect until", 140),
    Column("deactivate_at", "Deactivate at", 140),
    # when the KMA makes its successor itself (its policy's rotation period): general keys only
    Column("rotation_due_at", "Rotation due", 140, sortable=False),
    Column("destroyed_at", "Destroyed", 140, hidden=True),
    Column("kma_id", "KMA", 90, hidden=True),
]

ACTIONS = [
    ActionSpec(
        "Mark compromised…",
        _compromise,
        "data.write",
        enabled=lambda k: not k.compromised and k.state != "destroyed",
    ),
    ActionSpec(
        "Destroy…",
        _destroy,
        "data.write",
        enabled=destroyable,
        toolbar=True,
        danger=True,
        shortcut="Ctrl+Shift+Delete",
    ),
]

SPEC = ListSpec(
    key="keys",
    title="Keys",
    noun="key",
    live=True,
    subtitle="Keys are never shown: only their state and dates. Only deactivated or "
    "compromised keys can be destroyed.",
    columns=COLUMNS,
    fetch=lambda client: client.list_keys,
    sort_fields=KEY_SORT,
    default_sort=KEY_DEFAULT_SORT,
    filtered_sorts=KEY_FILTERED_SORTS,
    get=lambda client: client.get_key,
    filters=[
        FilterSpec("state", "State", [("Any state", None)] + [(words(s), s) for s in kms_client.KEY_STATES]),
        FilterSpec(
            "compromised",
            "Compromised",
            [("Compromised or not", None), ("Compromised only", True), ("Not compromised", False)],
        ),
    ],
    actions=ACTIONS,
    details=_details,
    page_size=250,
)


def keys_list(ctx: AppContext, fixed: dict[str, Any], parent: QWidget | None = None) -> ListPage[Key]:
    """Keys of one data unit or key group, for a details tab."""
    spec = ListSpec(
        key="keys_of",
        title="Keys",
        noun="key",
        columns=COLUMNS,
        shows={"keys"},
        live=True,
        fetch=lambda client: client.list_keys,
        sort_fields=KEY_SORT,
        actions=ACTIONS,
        details=_details,
        fixed_filters=fixed,
        default_sort=KEY_DEFAULT_SORT,
        filtered_sorts=KEY_FILTERED_SORTS,
    )
    return ListPage(ctx, spec, parent, embedded=True)


def build(ctx: AppContext) -> ListPage[Key]:
    return ListPage(ctx, SPEC)


register(PageSpec("keys", "Keys", build, "data.read", order=80, icon="SP_DialogApplyButton"))
