"""Media pools: which tapes are encrypted and in which key group, the migration view of a pool's
drive generations, the tapes to relabel, those moved between pools (with a signed report of
both), and this KMA's refused write keys (docs/media.md)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.media_pools import (
    create_media_pool,
    delete_media_pool,
    update_media_pool,
    update_media_settings,
)
from kms_client.wire import MediaPool
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, FilterSpec, ListSpec
from ui.lists.paged_model import Column
from ui.reports.signed_report import save_signed_report
from ui.widgets import page_header

NO_GROUP = ""  # the drive's default key group
# The generations the KMA knows (kma/domain/media.py), oldest first within each drive type.
DRIVE_GENERATIONS = (
    *(f"LTO-{n}" for n in range(5, 10)),
    *(f"T10000{g}" for g in "ABCD"),
    *(f"T9840{g}" for g in "ABCD"),
)


def generation_filter(param: str, label: str) -> FilterSpec:
    return FilterSpec(param, label, [("Any generation", None)] + [(g, g) for g in DRIVE_GENERATIONS])


def drive_fields(agent: Any) -> list[Field]:
    """A tape drive's model, generation, library and partition (docs/media.md)."""
    return [
        Field(
            "drive_generation",
            "Drive generation",
            "choice",
            default=agent.drive_generation or "",
            choices=[("(not a tape drive)", "")] + [(g, g) for g in DRIVE_GENERATIONS],
            help="What the KMA judges appends and writes from BOT by.",
        ),
        Field("drive_model", "Drive model", default=agent.drive_model),
        Field("library", "Library", default=agent.library),
        Field("library_partition", "Partition", default=agent.library_partition),
    ]


REFUSALS = {
    "never_encrypted": "never-encrypted pool",
    "read_only": "read-only pool",
    "no_pool": "no pool",
    "two_pools": "two pools",
    "key_group": "pool's key group",
    "generation": "drive generation",
    "relabel": "not relabelled",
}
MIGRATION_COLUMNS = (
    ("generation", "Drive generation"),
    ("drives", "Drives"),
    ("append", "Appends to"),
    ("read_only", "Only reads"),
    ("rewrite_from_bot", "Must rewrite from BOT"),
    ("unreadable_without", "Unreadable if retired"),
)


def refusals_line(counts: Any) -> str:
    """The refused write keys by reason, in words (the page and the dashboard): the cluster's when
    it has several KMAs, each counting since its own start."""
    kmas = getattr(counts, "cluster_kmas", 1)
    numbers = counts.cluster if kmas > 1 and counts.cluster else {k: getattr(counts, k) for k in REFUSALS}
    said = [f"{numbers.get(key, 0):,} {text}" for key, text in REFUSALS.items() if numbers.get(key)]
    where = "on this KMA since it started"
    if kmas > 1:
        where = f"by the cluster's {kmas} KMAs, each since it started"
    return f"Write keys refused by the media rules {where}: " + (", ".join(said) + "." if said else "none.")


def _groups(client: Any) -> list[tuple[str, Any]]:
    return [("(the drive's default key group)", NO_GROUP)] + [(g.id, g.id) for g in client.iter_key_groups()]


def _kind(pool: Any) -> str:
    if pool.never_encrypted:
        return "never encrypted"
    return f"key group {pool.key_group_id}" if pool.key_group_id else "drive's default group"


class _KindColumn(Column):
    """What the pool is: its key group, never encrypted, or the drive's default group."""

    def value(self, obj: Any) -> Any:
        return _kind(obj)


def _tone(pool: Any) -> str | None:
    return "warn" if pool.never_encrypted else None


def _fields(pool: Any | None) -> list[Field]:
    return [
        Field(
            "pattern",
            "Volsers",
            required=True,
            default=pool.pattern if pool else "",
            help="A pattern (E*, N*) or a range of one length (E00000-E49999, ABC000L8-ABC999L8).",
        ),
        Field(
            "key_group_id",
            "Key group",
            "choice",
            default=(pool.key_group_id or NO_GROUP) if pool else NO_GROUP,
            load_choices=_groups,
        ),
        Field(
            "never_encrypted",
            "Never encrypted",
            "bool",
            default=bool(pool and pool.never_encrypted),
            help="A write key for one of its tapes is refused (plain drives only: the 'N' volsers).",
        ),
        Field(
            "read_only",
            "Read only",
            "bool",
            default=bool(pool and pool.read_only),
            help="Its tapes are read, never written (a migrated generation's old pool).",
        ),
        Field("description", "Description", default=pool.description if pool else ""),
    ]


def _new_pool(page: ListPage[MediaPool], _obj: Any) -> None:
    FormDialog(
        page.ctx,
        "New media pool",
        [Field("id", "Pool ID", "id", required=True), *_fields(None)],
        lambda v: create_media_pool(
            v["id"],
            v["pattern"],
            key_group_id=v["key_group_id"] or None,
            never_encrypted=v["never_encrypted"],
            read_only=v["read_only"],
            description=v["description"] or None,
        ),
        ok_text="Create pool",
        busy_text="Creating media pool…",
        parent=page,
    ).open()


def _edit_pool(page: ListPage[MediaPool], pool: Any) -> None:
    FormDialog(
        page.ctx,
        f"Edit media pool {pool.id}",
        _fields(pool),
        lambda v: update_media_pool(
            pool.id,
            pattern=v["pattern"],
            key_group_id=v["key_group_id"],
            never_encrypted=v["never_encrypted"],
            read_only=v["read_only"],
            description=v["description"],
        ),
        busy_text="Saving media pool…",
        parent=page,
    ).open()


def _delete_pool(page: ListPage[MediaPool], pool: Any) -> None:
    FormDialog(
        page.ctx,
        f"Delete media pool {pool.id}",
        [],
        lambda _v: delete_media_pool(pool.id),
        intro=f"Delete the pool <b>{pool.id}</b>? Its tapes then follow the setting for volsers of no pool.",
        ok_text="Delete pool",
        busy_text="Deleting media pool…",
        danger=True,
        parent=page,
    ).open()


def _settings(page: ListPage[MediaPool], _obj: Any) -> None:
    def ask(settings: Any) -> None:
        FormDialog(
            page.ctx,
            "Media settings",
            [
                Field(
                    "unmatched",
                    "Volser of no pool",
                    "choice",
                    default=settings.unmatched,
                    choices=[
                        ("Serve the key", "serve"),
                        ("Serve, with a warning", "warn"),
                        ("Refuse", "refuse"),
                    ],
                ),
                Field(
                    "generation_rule",
                    "Write a generation cannot make",
                    "choice",
                    default=settings.generation_rule,
                    choices=[("Serve, with a warning", "warn"), ("Refuse", "refuse")],
                ),
            ],
            lambda v: update_media_settings(unmatched=v["unmatched"], generation_rule=v["generation_rule"]),
            busy_text="Saving media settings…",
            parent=page,
        ).open()

    page.ctx.ops.read(lambda c: c.client.get_media_settings(), parent=page, success=ask)


def _migration(page: ListPage[MediaPool], pool: Any) -> None:
    page.ctx.ops.read(
        lambda c: c.client.get_media_pool_migration(pool.id),
        parent=page,
        success=lambda view: MigrationDialog(view, page).open(),
    )


class MigrationDialog(QDialog):
    """A pool's tapes by what each drive generation can do with them."""

    def __init__(self, view: Any, parent: QWidget) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Migration view of media pool {view.pool_id}")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(640)
        layout = QVBoxLayout(self)
        written = ", ".join(f"{w.tapes:,} by {w.generation}" for w in view.written_by) or "none recorded"
        layout.addWidget(
            QLabel(f"{view.tapes:,} tapes; written: {written}; writer unknown: {view.writer_unknown:,}.")
        )
        self.table = QTableWidget(len(view.generations), len(MIGRATION_COLUMNS))
        self.table.setHorizontalHeaderLabels([title for _, title in MIGRATION_COLUMNS])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for row, generation in enumerate(view.generations):
            for col, (key, _) in enumerate(MIGRATION_COLUMNS):
                value = getattr(generation, key)
                text = value if isinstance(value, str) else f"{value:,}"
                self.table.setItem(row, col, QTableWidgetItem(text))
        layout.addWidget(self.table)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)


POOLS = ListSpec(
    key="media_pools",
    title="Media pools",
    noun="media pool",
    columns=[
        Column("id", "Pool", 140),
        Column("pattern", "Volsers", 160),
        _KindColumn("key_group_id", "Encryption", 200, sortable=False, tone=_tone),
        Column("read_only", "Read only", 80, format=lambda v: "yes" if v else ""),
        Column("tapes", "Tapes", 80, align_right=True, format=lambda v: f"{v:,}"),
        Column("description", "Description", 260),
    ],
    fetch=lambda client: client.list_media_pools,
    sort_fields=frozenset({"id"}),
    actions=[
        ActionSpec("New pool…", _new_pool, "media.write", needs="none", toolbar=True),
        ActionSpec("Edit pool…", _edit_pool, "media.write"),
        ActionSpec("Migration view…", _migration, toolbar=True),
        ActionSpec("Media settings…", _settings, "media.write", needs="none", toolbar=True),
        ActionSpec("Delete pool…", _delete_pool, "media.write", danger=True),
    ],
    default_sort=("id", Qt.SortOrder.AscendingOrder),
)

RELABEL = ListSpec(
    key="media_relabel",
    title="Tapes to relabel",
    noun="tape",
    columns=[
        Column("id", "Volser", 140),
        Column("pool_id", "Pool", 140, format=lambda v: v or ""),
        Column("key_count", "Destroyed keys", 110, align_right=True),
        Column("description", "Description", 260),
    ],
    fetch=lambda client: client.list_tapes_to_relabel,
    sort_fields=frozenset(),
    searchable=False,
    shows={"media_pools", "keys", "data_units"},
)


def _group_or_plain(group: str | None) -> str:
    return group or "never encrypted"


def _media_report(page: ListPage[Any], _obj: Any) -> None:
    """The tapes to relabel and those moved between pools, as a signed CSV for the library's people."""
    save_signed_report(page, lambda client: client.get_media_report())


MOVED = ListSpec(
    key="media_moved",
    title="Tapes moved between pools",
    noun="tape",
    columns=[
        Column("id", "Volser", 140),
        Column("pool_id", "Pool now", 140),
        Column("pool_key_group_id", "Pool's key group", 170, sortable=False, format=_group_or_plain),
        Column("key_groups", "Its keys' groups", 200, sortable=False, format=", ".join),
        Column("writer_generation", "Written by", 100, sortable=False, format=lambda g: g or ""),
    ],
    fetch=lambda client: client.list_tapes_moved_between_pools,
    sort_fields=frozenset({"id"}),
    actions=[ActionSpec("Signed report…", _media_report, needs="none", toolbar=True)],
    shows={"media_pools", "keys", "data_units"},
    default_sort=("id", Qt.SortOrder.AscendingOrder),
)


class MediaPoolsPage(QWidget):
    """Pools above; the tapes to relabel and those moved between pools below (a signed report of
    both); and this KMA's refused write keys by reason."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        layout = QVBoxLayout(self)
        layout.addWidget(
            page_header(
                "Media pools",
                "Encrypted and plain tapes in separate pools ('E' and 'N' volsers), each pool's key "
                "group, and what each drive generation may write. The KMA enforces them.",
            )
        )
        self.refusals = QLabel()
        self.refusals.setObjectName("mediaRefusals")
        layout.addWidget(self.refusals)
        split = QSplitter(Qt.Orientation.Vertical)
        self.pools = ListPage(ctx, POOLS, embedded=True)
        self.relabel = ListPage(ctx, RELABEL, embedded=True)
        self.moved = ListPage(ctx, MOVED, embedded=True)
        for title, widget in (
            ("Pools", self.pools),
            ("Tapes to relabel before reuse", self.relabel),
            ("Tapes whose keys are of another key group than their pool's", self.moved),
        ):
            box = QWidget()
            inner = QVBoxLayout(box)
            inner.setContentsMargins(0, 0, 0, 0)
            inner.addWidget(QLabel(f"<b>{title}</b>"))
            inner.addWidget(widget)
            split.addWidget(box)
        layout.addWidget(split, 1)
        self.refresh()

    def refresh(self) -> None:
        self.pools.refresh()
        self.relabel.refresh()
        self.moved.refresh()
        self.ctx.ops.read(lambda c: c.client.get_media_refusals(), parent=self, success=self._show_refusals)

    def _show_refusals(self, counts: Any) -> None:
        self.refusals.setText(refusals_line(counts))

    def save_state(self) -> None:
        self.pools.save_state()
        self.relabel.save_state()
        self.moved.save_state()


register(
    PageSpec(
        "media_pools",
        "Media pools",
        MediaPoolsPage,
        permission="media.read",
        order=75,
        icon="SP_DriveCDIcon",
        description="Media pools by volser: encrypted or never, their key group, drive generations",
    )
)
