"""Key policies: how long a key protects new data and how long it may be used at all."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.key_policies import create_key_policy, update_key_policy
from kms_client import KeyPolicy
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.format import period
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, ListSpec
from ui.lists.paged_model import Column


def _new_policy(page: ListPage[KeyPolicy], _obj: Any) -> None:
    FormDialog(
        page.ctx,
        "New key policy",
        [
            Field("id", "Policy ID", "id", required=True),
            Field("description", "Description"),
            Field(
                "encryption_period",
                "Encryption period",
                "days",
                default=90,
                maximum=36500,
                help="How long a key protects new writes. Cannot change later.",
            ),
            Field(
                "cryptoperiod",
                "Cryptoperiod",
                "days",
                default=3650,
                maximum=36500,
                at_least="encryption_period",
                help="How long a key may be used at all (at least the encryption period). "
                "Cannot change later.",
            ),
            Field("allow_export", "Allow export", "bool"),
            Field("allow_import", "Allow import", "bool"),
            Field(
                "import_needs_quorum",
                "Import needs quorum",
                "bool",
                help="An import of a transfer file into its key groups waits for the key split quorum.",
            ),
            Field("agents_may_revoke", "Agents may revoke keys", "bool"),
            Field(
                "general_keys",
                "General keys (generic KMIP clients)",
                "bool",
                help="Free-text names, AES-128/192/256, secret data and opaque objects. "
                "Off: tape keys (Name is the volser, AES-256).",
            ),
            Field(
                "rotation_period",
                "Rotation period",
                "days",
                default=0,
                minimum=0,
                maximum=36500,
                help="General keys: this long after a key's activation the KMA makes its successor "
                "(a Re-Key, linked both ways). 0: never. Cannot change later.",
            ),
        ],
        lambda v: create_key_policy(
            v["id"],
            encryption_period=v["encryption_period"],
            cryptoperiod=v["cryptoperiod"],
            description=v["description"] or None,
            allow_export=v["allow_export"],
            allow_import=v["allow_import"],
            import_needs_quorum=v["import_needs_quorum"],
            agents_may_revoke=v["agents_may_revoke"],
            general_keys=v["general_keys"],
            rotation_period=v["rotation_period"] or None,
        ),
        intro="Periods are fixed once the policy exists.",
        ok_text="Create policy",
        busy_text="Creating key policy…",
        parent=page,
    ).open()


def _edit_policy(page: ListPage[KeyPolicy], p: KeyPolicy) -> None:
    FormDialog(
        page.ctx,
        f"Edit key policy {p.id}",
        [
            Field("description", "Description", default=p.description),
            Field("allow_export", "Allow export", "bool", default=p.allow_export),
            Field("allow_import", "Allow import", "bool", default=p.allow_import),
            Field("import_needs_quorum", "Import needs quorum", "bool", default=p.import_needs_quorum),
            Field("agents_may_revoke", "Agents may revoke keys", "bool", default=p.agents_may_revoke),
            Field("general_keys", "General keys (generic KMIP clients)", "bool", default=p.general_keys),
        ],
        lambda v: update_key_policy(p.id, **v),
        intro=f"Encryption period {period(p.encryption_period)}, cryptoperiod "
        f"{period(p.cryptoperiod)}: periods cannot change once set.",
        busy_text="Saving key policy…",
        parent=page,
    ).open()


SPEC = ListSpec(
    key="key_policies",
    title="Key policies",
    noun="key policy",
    subtitle="Encryption period and cryptoperiod of the keys in each key group, and whether "
    "they may be exported, imported or revoked by agents.",
    columns=[
        Column("id", "Policy ID", 150),
        Column("description", "Description", 240),
        Column("encryption_period", "Encryption period", 130, format=period, align_right=True),
        Column("cryptoperiod", "Cryptoperiod", 110, format=period, align_right=True),
        Column("allow_export", "Export", 70),
        Column("allow_import", "Import", 70),
        Column("import_needs_quorum", "Import quorum", 100),
        Column("agents_may_revoke", "Agents revoke", 100),
        Column("general_keys", "General keys", 100),
        Column(
            "rotation_period", "Rotation", 100, format=lambda v: period(v) if v else "—", align_right=True
        ),
        Column("created_at", "Created", 140),
        Column("updated_at", "Updated", 140, hidden=True),
    ],
    fetch=lambda client: client.list_key_policies,
    sort_fields=frozenset({"id", "created_at", "encryption_period", "cryptoperiod"}),
    get=lambda client: client.get_key_policy,
    actions=[
        ActionSpec(
            "New key policy…", _new_policy, "policies.write", needs="none", toolbar=True, shortcut="Ctrl+N"
        ),
        ActionSpec("Edit key policy…", _edit_policy, "policies.write", toolbar=True),
    ],
    default_sort=("id", Qt.SortOrder.AscendingOrder),
)


def build(ctx: AppContext) -> ListPage[KeyPolicy]:
    return ListPage(ctx, SPEC)


register(
    PageSpec(
        "key_policies", "Key policies", build, "policies.read", order=40, icon="SP_FileDialogDetailedView"
    )
)
