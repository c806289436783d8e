"""Agents: the tape drives that enrol with a one-time passphrase and then ask for keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from PySide6.QtCore import Qt

from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.agents import create_agent_with_passphrase, new_enrollment_passphrase, update_agent
from kms_client import Agent
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.dialogs.secret_dialog import OneTimeSecretDialog
from ui.format import when, yes_no
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, FilterSpec, ListSpec
from ui.lists.paged_model import Column
from ui.pages.agent_passphrases import EnrollmentPassphrasesDialog
from ui.pages.common import enabled_tone
from ui.pages.media_pools import drive_fields, generation_filter
from ui.pages.sites import site_choices


def _group_choices(client: Any) -> list[tuple[str, Any]]:
    return [(g.id, g.id) for g in client.iter_key_groups()]


def show_passphrase(page: ListPage[Agent], agent_id: str, passphrase: str) -> OneTimeSecretDialog:
    dialog = OneTimeSecretDialog(
        f"Enrollment passphrase for {agent_id}",
        f"Agent <b>{agent_id}</b> enrols once with this passphrase, then holds a certificate.",
        passphrase,
        page,
    )
    dialog.open()
    page.last_secret_dialog = dialog  # type: ignore[attr-defined]
    return dialog


def _new_agent(page: ListPage[Agent], _obj: Any) -> None:
    def done(result: tuple[Any, Any]) -> None:
        agent, secret = result
        show_passphrase(page, agent.id, secret.passphrase)

    FormDialog(
        page.ctx,
        "New agent",
        [
            Field("id", "Agent ID", "id", required=True, help="e.g. the drive's name"),
            Field("description", "Description", help="e.g. T10000B in library 2, slot 4"),
            Field("site_id", "Site", "choice", required=True, load_choices=site_choices),
            Field(
                "default_key_group_id",
                "Default key group",
                "choice",
                required=True,
                load_choices=_group_choices,
            ),
        ],
        lambda v: create_agent_with_passphrase(
            v["id"], v["site_id"], v["default_key_group_id"], v["description"] or None
        ),
        done,
        intro="The agent gets a one-time enrollment passphrase, shown once after it is created.",
        ok_text="Create agent",
        busy_text="Creating agent…",
        parent=page,
    ).open()


def _new_passphrase(page: ListPage[Agent], agent: Agent) -> None:
    FormDialog(
        page.ctx,
        f"New enrollment passphrase for {agent.id}",
        [],
        lambda _v: new_enrollment_passphrase(agent.id),
        lambda s: show_passphrase(page, agent.id, s.passphrase),
        intro="A new one-time passphrase replaces any earlier one, which stops working. "
        "Use this to re-enrol a replaced drive.",
        ok_text="Generate passphrase",
        busy_text="Generating passphrase…",
        parent=page,
    ).open()


def _bulk_passphrases(page: ListPage[Agent], _obj: Any) -> EnrollmentPassphrasesDialog:
    dialog = EnrollmentPassphrasesDialog(page.ctx, page)
    dialog.open()
    page.last_secret_dialog = dialog  # type: ignore[attr-defined]
    return dialog


def _edit_agent(page: ListPage[Agent], a: Agent) -> None:
    FormDialog(
        page.ctx,
        f"Edit agent {a.id}",
        [
            Field("description", "Description", default=a.description),
            Field("site_id", "Site", "choice", required=True, default=a.site_id, load_choices=site_choices),
            Field(
                "default_key_group_id",
                "Default key group",
                "choice",
                required=True,
                default=a.default_key_group_id,
                load_choices=_group_choices,
            ),
            *drive_fields(a),
        ],
        lambda v: update_agent(a.id, **v),
        busy_text="Saving agent…",
        parent=page,
    ).open()


def _set_enabled(enabled: bool) -> Any:
    def run(page: ListPage[Agent], agent: Agent) -> None:
        label = "Enabling agent…" if enabled else "Disabling agent…"
        page.ctx.ops.write(update_agent(agent.id, enabled=enabled), parent=page, label=label)

    return run


CERTIFICATE_WARNING = timedelta(days=30)


def certificate_tone(agent: Any) -> str | None:
    """Red once the agent's certificate has expired (it can no longer connect), amber within
    30 days of it (enroll it again before then)."""
    expires = agent.certificate_expires_at
    if expires is None:
        return None
    left = expires - datetime.now(UTC)
    return "bad" if left <= timedelta(0) else "warn" if left <= CERTIFICATE_WARNING else None


SPEC = ListSpec(
    key="agents",
    title="Agents",
    noun="agent",
    live=True,
    subtitle="Encrypting tape drives. An agent enrolls once with a one-time passphrase and renews its "
    "certificate itself before it expires; a disabled agent gets no keys.",
    columns=[
        Column("id", "Agent ID", 120),
        Column("description", "Description", 230),
        Column("site_id", "Site", 70),
        Column("default_key_group_id", "Default key group", 125),
        Column("drive_generation", "Drive", 80, sortable=False, format=lambda g: g or ""),
        Column("library", "Library", 100, sortable=False),
        Column("enabled", "Enabled", 65, tone=enabled_tone),
        Column("enrolled", "Enrolled", 65),
        Column("enrollment_pending", "Awaiting enrollment", 130, format=yes_no, hidden=True),
        Column(
            "last_contact_at", "Last contact", 125, sortable=False, format=lambda t: when(t) if t else "Never"
        ),
        Column(
            "certificate_expires_at",
            "Certificate expires",
            125,
            sortable=False,
            format=lambda t: t.astimezone().strftime("%Y-%m-%d") if t else "",
            tone=certificate_tone,
        ),
        Column(
            "keys_served_7d",
            "Keys this week",
            100,
            sortable=False,
            align_right=True,
            format=lambda n: f"{n:,}",
        ),
        Column("created_at", "Created", 140, hidden=True),
        Column("updated_at", "Updated", 140, hidden=True),
    ],
    fetch=lambda client: client.list_agents,
    sort_fields=frozenset({"id", "site_id", "created_at"}),
    filtered_sorts={
        "site_id": frozenset({"site_id", "enabled", "key_group_id"}),
        "created_at": frozenset({"enabled", "key_group_id"}),
    },
    get=lambda client: client.get_agent,
    filters=[
        generation_filter("drive_generation", "Drive generation"),
        FilterSpec(
            "enabled",
            "Enabled",
            [("Enabled and disabled", None), ("Enabled only", True), ("Disabled only", False)],
        ),
        FilterSpec(
            "expires_within_days",
            "Certificate expires",
            [
                ("Any expiry", None),
                ("Within 7 days", 7),
                ("Within 30 days", 30),
                ("Within 90 days", 90),
                ("Within a year", 365),
                ("Already expired", 0),
            ],
        ),
    ],
    actions=[
        ActionSpec("New agent…", _new_agent, "agents.write", needs="none", toolbar=True, shortcut="Ctrl+N"),
        ActionSpec("New enrollment passphrase…", _new_passphrase, "agents.write", toolbar=True),
        ActionSpec(
            "Passphrases for expiring agents…", _bulk_passphrases, "agents.write", needs="none", toolbar=True
        ),
        ActionSpec("Enable", _set_enabled(True), "agents.write", enabled=lambda a: not a.enabled),
        ActionSpec("Disable", _set_enabled(False), "agents.write", enabled=lambda a: a.enabled),
        ActionSpec("Edit agent…", _edit_agent, "agents.write"),
    ],
    default_sort=("id", Qt.SortOrder.AscendingOrder),
)


def build(ctx: AppContext) -> ListPage[Agent]:
    return ListPage(ctx, SPEC)


register(PageSpec("agents", "Agents", build, "agents.read", order=60, icon="SP_DriveHDIcon"))
