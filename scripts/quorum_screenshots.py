"""Quorum screenshots for ``scripts/screenshots.py``: a few pending operations in the demo, then the
approval, pending, new-user, unlock windows and the locked banner.

``seed`` runs before the main window opens (so the badge shows the count from the first poll);
``render`` runs last because it locks the demo KMA to show the banner (and unlocks it again).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def _members(demo: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["passphrase"] for m in demo["key_split"]["members"]}


def seed(client: Any, demo: dict[str, Any]) -> None:
    """Three operations at different stages, as a real inbox would hold them."""
    m = _members(demo)
    client.set_autonomous_unlock(False, credentials=[("bob", m["bob"]), ("carol", m["carol"])])
    client.update_user("op", roles=["operator", "backup_operator"])
    client.create_user(
        "lee", "Lee Archivist", ["auditor"], "lee-first-passphrase", credentials=[("alice", m["alice"])]
    )


def render(
    window: Any,
    controller: Any,
    demo: dict[str, Any],
    out: Path,
    grab: Callable[[Any, Path], Path],
    settle: Callable[[Any], None],
) -> list[Path]:
    shots = Shots(window, controller, _members(demo), out, grab, settle)
    return shots.inbox() + shots.new_user() + shots.key_split() + shots.locked()


class Shots:
    def __init__(
        self,
        window: Any,
        controller: Any,
        members: dict[str, str],
        out: Path,
        grab: Callable[[Any, Path], Path],
        settle: Callable[[Any], None],
    ) -> None:
        self.window, self.ctx, self.m, self.out = window, controller.ctx, members, out
        self._grab, self._settle = grab, settle

    def settle(self) -> None:
        self._settle(self.ctx.ops)

    def grab(self, widget: Any, name: str) -> Path:
        self.settle()
        return self._grab(widget, self.out / name)

    def page(self, key: str) -> Any:
        self.window.show_page(key)
        self.settle()
        return self.window.page(key)

    def inbox(self) -> list[Path]:
        from ui.quorum.widgets import tell_pending

        inbox = self.page("quorum")
        ops = inbox.list.model.objects()
        op = next(o for o in ops if o.type == "create_user")
        inbox.select_operation(op.id)
        self.settle()
        paths = [self._grab(self.window, self.out / "quorum.png")]  # with the selection
        dialog = inbox.approve(op)
        self.settle()
        dialog.member.setEditText("dave")
        dialog.passphrase.setText(self.m["dave"])
        paths.append(self.grab(dialog, "quorum_approve.png"))
        dialog.reject()
        box = tell_pending(self.ctx, inbox, next(o for o in ops if o.type == "update_user"))
        paths.append(self.grab(box, "quorum_waiting.png"))
        box.close()
        return paths

    def new_user(self) -> list[Path]:
        from PySide6.QtWidgets import QCheckBox

        from ui.pages.users import new_user

        form = new_user(self.page("users"), None)
        self.settle()
        form.editors["id"].setText("sam2")
        form.editors["name"].setText("Sam Second")
        form.editors["roles"].findChild(QCheckBox, "security_officer").setChecked(True)
        form.editors["passphrase"].setText("a-long-first-passphrase")
        form.credentials.add_row()
        _row, member, passphrase = form.credentials.rows[0]
        member.setEditText("erin")
        passphrase.setText(self.m["erin"])
        path = self.grab(form, "user_with_credentials.png")
        form.reject()
        return [path]

    def key_split(self) -> list[Path]:
        """The key split change (2 of alice, bob and frank, with the current quorum's three), then
        the ceremony where each new member types their own passphrase (alice has, bob's turn)."""
        from ui.quorum.key_split import MemberEnrolmentDialog

        page = self.page("locking")
        dialog = page.change_split()
        self.settle()
        new = dialog.new_members
        for _ in range(2):
            new.remove_row(new.rows[-1][0])
        new.rows[2][1].setText("frank")
        dialog.editors["threshold"].setValue(2)
        for name in ("alice", "bob", "carol"):
            dialog.credentials.add_row()
            _row, member, passphrase = dialog.credentials.rows[-1]
            member.setEditText(name)
            passphrase.setText(self.m[name])
        paths = [self.grab(dialog, "key_split_change.png")]
        dialog.reject()
        client = self.ctx.session.client
        change = client.change_key_split(2, ["alice", "bob", "frank"], credentials=[("dave", self.m["dave"])])
        alice = client.enrol_key_split_member(
            change.op.id, "alice", change.enrolment_codes["alice"], "alice-own-passphrase"
        )
        ceremony = MemberEnrolmentDialog(
            self.ctx, alice, change.enrolment_codes, lambda _op: None, parent=page
        )
        ceremony.open()
        ceremony.passphrase.setText("bob-types-this")
        ceremony.again.setText("bob-types-this")
        paths.append(self.grab(ceremony, "key_split_enrolment.png"))
        ceremony.stop()
        client.delete_quorum_operation(change.op.id)
        return paths

    def locked(self) -> list[Path]:
        """Confirm, the banner across the page, the unlock window; unlocks again at the end."""
        from PySide6.QtWidgets import QMessageBox

        from ui.quorum.unlock import open_unlock

        page = self.page("locking")
        confirm = page.lock()
        paths = [self.grab(confirm, "lock_confirm.png")]
        confirm.ok.click()
        self.settle()
        paths.append(self.grab(self.window, "locking_locked.png"))
        unlock = open_unlock(self.ctx, page, page.data["status"].kma_id)
        self.settle()
        for (_r, member, passphrase), name in zip(
            unlock.credentials.rows, ("alice", "bob", "carol"), strict=False
        ):
            member.setEditText(name)
            passphrase.setText(self.m[name])
        paths.append(self.grab(unlock, "unlock.png"))
        unlock.ok.click()
        self.settle()
        for box in page.findChildren(QMessageBox):
            box.close()
        return paths
