"""Sites and KMAs: where the cluster's appliances are (Security Officers change them)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.sites import create_site, delete_site, update_kma, update_site
from kms_client import Kma, Site
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.format import when, yes_no
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, ListSpec
from ui.lists.paged_model import Column
from ui.pages import kma_membership
from ui.widgets import page_header


def site_choices(client: Any) -> list[tuple[str, Any]]:
    return [(f"{s.name} ({s.id})", s.id) for s in client.iter_sites()]


def _new_site(page: ListPage[Site], _obj: Any) -> None:
    FormDialog(
        page.ctx,
        "New site",
        [
            Field("id", "Site ID", "id", required=True),
            Field("name", "Name", required=True),
            Field("description", "Description", "multiline"),
        ],
        lambda v: create_site(v["id"], v["name"], v["description"] or None),
        ok_text="Create site",
        busy_text="Creating site…",
        parent=page,
    ).open()


def _edit_site(page: ListPage[Site], site: Site) -> None:
    FormDialog(
        page.ctx,
        f"Edit site {site.id}",
        [
            Field("name", "Name", required=True, default=site.name),
            Field("description", "Description", "multiline", default=site.description),
        ],
        lambda v: update_site(site.id, name=v["name"], description=v["description"]),
        busy_text="Saving site…",
        parent=page,
    ).open()


def _delete_site(page: ListPage[Site], site: Site) -> None:
    FormDialog(
        page.ctx,
        f"Delete site {site.id}",
        [],
        lambda _v: delete_site(site.id),
        intro=f"Delete the site <b>{site.name}</b>? The KMA refuses while KMAs or agents still belong to it.",
        ok_text="Delete site",
        busy_text="Deleting site…",
        danger=True,
        parent=page,
    ).open()


def _edit_kma(page: ListPage[Kma], kma: Kma) -> None:
    FormDialog(
        page.ctx,
        f"Edit KMA {kma.id}",
        [
            Field("name", "Name", required=True, default=kma.name),
            Field("site_id", "Site", "choice", required=True, default=kma.site_id, load_choices=site_choices),
            Field(
                "key_pool_size",
                "Key pool size",
                "int",
                default=kma.key_pool_size,
                minimum=1,
                maximum=1_000_000,
                help="Keys kept ready so issuing never waits for replication (default 1,000).",
            ),
        ],
        lambda v: update_kma(kma.id, name=v["name"], site_id=v["site_id"], key_pool_size=v["key_pool_size"]),
        busy_text="Saving KMA…",
        parent=page,
    ).open()


SITES = ListSpec(
    key="sites",
    title="Sites",
    noun="site",
    columns=[
        Column("id", "Site ID", 140),
        Column("name", "Name", 200),
        Column("description", "Description", 360),
        Column("created_at", "Created", 140),
    ],
    fetch=lambda client: client.list_sites,
    sort_fields=frozenset({"id", "name", "created_at"}),
    actions=[
        ActionSpec("New site…", _new_site, "sites.write", needs="none", toolbar=True),
        ActionSpec("Edit site…", _edit_site, "sites.write"),
        ActionSpec("Delete site…", _delete_site, "sites.write", danger=True),
    ],
    default_sort=("id", Qt.SortOrder.AscendingOrder),
)

KMAS = ListSpec(
    key="kmas",
    title="KMAs",
    noun="KMA",
    plural="KMAs",
    live=True,
    columns=[
        Column("id", "KMA ID", 120),
        Column("name", "Name", 140),
        Column("site_id", "Site", 90),
        Column(
            "awaiting_join",
            "Member",
            80,
            format=lambda v: "waiting" if v else "joined",
            tone=lambda k: "warn" if k.awaiting_join or k.removed_at else None,
        ),
        Column("voter", "Voter", 55, format=yes_no),
        Column(
            "entry_problem",
            "Entry",
            80,
            format=lambda v: "not trusted" if v else "signed",
            tone=lambda k: "bad" if k.entry_problem else None,
        ),
        Column("locked", "Locked", 65, format=yes_no, tone=lambda k: "bad" if k.locked else None),
        Column("management_address", "Management address", 160),
        Column("service_address", "Service address", 160),
        Column("pool_ready", "Pool ready", 85, align_right=True, format=lambda v: f"{v:,}"),
        Column("key_pool_size", "Pool size", 80, align_right=True, format=lambda v: f"{v:,}"),
        Column("version", "Version", 70),
        Column("schema_version", "Schema", 60, format=lambda v: "" if v is None else str(v)),
        Column("removed_at", "Removed", 140, format=lambda v: when(v) if v else ""),
        Column("created_at", "Created", 140, hidden=True),
    ],
    fetch=lambda client: client.list_kmas,
    sort_fields=frozenset({"id", "name", "site_id"}),
    actions=[ActionSpec("Edit KMA…", _edit_kma, "kmas.write", toolbar=True), *kma_membership.ACTIONS],
    searchable=False,
)


class SitesPage(QWidget):
    """Sites above, KMAs below: one place for the cluster's layout."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.addWidget(
            page_header(
                "Sites and KMAs",
                "Agents prefer the KMAs of their own site and fail over to other sites. "
                "At least two KMAs per site is recommended.",
            )
        )
        split = QSplitter(Qt.Orientation.Vertical)
        self.sites = ListPage(ctx, SITES, embedded=True)
        self.kmas = ListPage(ctx, KMAS, embedded=True)
        for title, widget in (("Sites", self.sites), ("KMAs", self.kmas)):
            box = QWidget()
            inner = QVBoxLayout(box)
            inner.setContentsMargins(0, 0, 0, 0)
            label = QLabel(f"<b>{title}</b>")
            inner.addWidget(label)
            inner.addWidget(widget)
            split.addWidget(box)
        layout.addWidget(split, 1)

    def refresh(self) -> None:
        self.sites.refresh()
        self.kmas.refresh()

    def save_state(self) -> None:
        self.sites.save_state()
        self.kmas.save_state()


register(PageSpec("sites", "Sites and KMAs", SitesPage, order=30, icon="SP_DriveNetIcon"))
