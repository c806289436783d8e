"""Key groups: sets of keys under one policy, and which agents may use them."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.key_groups import create_key_group, set_key_group_agents, update_key_group
from kms_client import KeyGroup
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, ListSpec
from ui.lists.paged_model import Column
from ui.widgets import ErrorLabel


def _policy_choices(client: Any) -> list[tuple[str, Any]]:
    return [
        (p.id + (f" — {p.description}" if p.description else ""), p.id) for p in client.iter_key_policies()
    ]


def _new_group(page: ListPage[KeyGroup], _obj: Any) -> None:
    FormDialog(
        page.ctx,
        "New key group",
        [
            Field("id", "Key group ID", "id", required=True),
            Field("description", "Description"),
            Field("policy_id", "Key policy", "choice", required=True, load_choices=_policy_choices),
        ],
        lambda v: create_key_group(v["id"], description=v["description"] or None, policy_id=v["policy_id"]),
        ok_text="Create key group",
        busy_text="Creating key group…",
        parent=page,
    ).open()


def _edit_group(page: ListPage[KeyGroup], g: KeyGroup) -> None:
    FormDialog(
        page.ctx,
        f"Edit key group {g.id}",
        [Field("description", "Description", default=g.description)],
        lambda v: update_key_group(g.id, description=v["description"]),
        busy_text="Saving key group…",
        parent=page,
    ).open()


class AgentAccessDialog(QDialog):
    """Tick the agents that may use a key group; sent as one PUT of the whole set."""

    def __init__(self, page: ListPage[KeyGroup], group: KeyGroup) -> None:
        super().__init__(page)
        self.page = page
        self.group = group
        self.setWindowTitle(f"Agent access to {group.id}")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.resize(460, 480)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"Agents that may use keys of <b>{group.id}</b>:"))
        self.search = QLineEdit()
        self.search.setPlaceholderText("Find an agent…")
        self.search.setAccessibleName("Find an agent")
        self.search.textChanged.connect(self._filter)
        layout.addWidget(self.search)
        self.list = QListWidget()
        self.list.setAccessibleName("Agents")
        layout.addWidget(self.list, 1)
        self.error = ErrorLabel()
        layout.addWidget(self.error)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self._save)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(False)
        layout.addWidget(self.buttons)
        page.ctx.ops.read(
            lambda worker: list(worker.client.iter_agents()),
            parent=self,
            success=self._fill,
            label="Loading agents…",
        )

    def _fill(self, agents: list[Any]) -> None:
        chosen = set(self.group.agent_ids)
        for agent in agents:
            item = QListWidgetItem(f"{agent.id}  —  {agent.description or agent.site_id}")
            item.setData(Qt.ItemDataRole.UserRole, agent.id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if agent.id in chosen else Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(True)

    def _filter(self, text: str) -> None:
        for i in range(self.list.count()):
            item = self.list.item(i)
            item.setHidden(text.lower() not in item.text().lower())

    def chosen(self) -> list[str]:
        return [
            self.list.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.list.count())
            if self.list.item(i).checkState() == Qt.CheckState.Checked
        ]

    def _save(self) -> None:
        ids = self.chosen()
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(False)
        self.page.ctx.ops.write(
            set_key_group_agents(self.group.id, ids),
            parent=self,
            label="Saving agent access…",
            success=self._saved,
            failure=self._failed,
        )

    def _saved(self, _group: Any) -> None:
        self.accept()

    def _failed(self, exc: BaseException) -> bool:
        from app.errors import describe

        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(True)
        self.error.say(describe(exc).text)
        return True


SPEC = ListSpec(
    key="key_groups",
    title="Key groups",
    noun="key group",
    subtitle="Agents get access to key groups; each agent's new data units get keys from its "
    "default key group.",
    columns=[
        Column("id", "Key group ID", 160),
        Column("description", "Description", 240),
        Column("policy_id", "Key policy", 140),
        Column(
            "agent_ids",
            "Agents with access",
            300,
            sortable=False,
            format=lambda ids: ", ".join(ids) if ids else "(none)",
        ),
        Column("created_at", "Created", 140),
        Column("updated_at", "Updated", 140, hidden=True),
    ],
    fetch=lambda client: client.list_key_groups,
    sort_fields=frozenset({"id", "policy_id", "created_at"}),
    get=lambda client: client.get_key_group,
    actions=[
        ActionSpec(
            "New key group…", _new_group, "policies.write", needs="none", toolbar=True, shortcut="Ctrl+N"
        ),
        ActionSpec(
            "Agent access…", lambda p, g: AgentAccessDialog(p, g).open(), "policies.write", toolbar=True
        ),
        ActionSpec("Edit description…", _edit_group, "policies.write"),
    ],
    default_sort=("id", Qt.SortOrder.AscendingOrder),
)


def build(ctx: AppContext) -> QWidget:
    return ListPage(ctx, SPEC)


register(PageSpec("key_groups", "Key groups", build, "policies.read", order=50, icon="SP_DirClosedIcon"))
