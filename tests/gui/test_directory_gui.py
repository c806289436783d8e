"""The Directory sign-in page against a real KMA and a real slapd: a Security Officer maps the
directory's groups to roles with the quorum's credentials, a directory account then signs in through
the sign-in window with the roles its group gives, and a directory that is down is said so there
while a local account still signs in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ui.reports.signed_report as signed_report
from kma.audit.exports import verify_export
from tests.gui.helpers import (
    WAIT_MS,
    action,
    active_dialog,
    fill_form,
    give_credentials,
    message_boxes,
    open_page,
    send_sign_in,
    sign_in,
    submit,
)
from tests.support.slapd import GROUPS, Slapd, slapd_or_skip
from ui.quorum.widgets import QuorumFormDialog

pytestmark = pytest.mark.gui
PASSWORD = "dana's directory password"


@pytest.fixture
def slapd() -> Iterator[Slapd]:
    server = slapd_or_skip()
    server.add_person("dana", "Dana Diaz", PASSWORD, ["KMS Auditors"])
    yield server
    server.close()


def test_a_security_officer_maps_groups_and_a_directory_account_signs_in(
    qtbot: Any, controller: Any, fresh_kma: Any, slapd: Slapd
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "directory")
    qtbot.waitUntil(lambda: "only local users" in page.state.text(), timeout=WAIT_MS)
    page.change.click()
    dialog = active_dialog(qtbot, QuorumFormDialog)
    fill_form(
        qtbot,
        dialog,
        {
            "url": slapd.ldaps_url,
            "bind_format": "cn={user},ou=Users,dc=corp,dc=example",
            "search_base": "dc=corp,dc=example",
        },
    )
    dialog.editors["ca_pem"].setPlainText(slapd.tls.ca_pem)  # pasted, as a PEM is
    dialog.editors["group_roles"].setPlainText(f"cn=KMS Auditors,{GROUPS} => Auditor")
    give_credentials(qtbot, dialog, fresh_kma, ("alice", "bob", "carol"))
    submit(qtbot, dialog)
    qtbot.waitUntil(lambda: page.table.topLevelItemCount() == 1, timeout=WAIT_MS)
    assert page.table.topLevelItem(0).text(1) == "Auditor"
    assert "on (LDAPS" in page.state.text()
    assert fresh_kma.client("auditor").get_directory().group_roles[0].roles == ("auditor",)


def set_directory(kma: Any, slapd: Slapd) -> None:
    kma.client("so").set_directory(
        url=slapd.ldaps_url,
        ca_pem=slapd.tls.ca_pem,
        bind_format="cn={user},ou=Users,dc=corp,dc=example",
        search_base="dc=corp,dc=example",
        group_roles=[{"group": f"cn=KMS Auditors,{GROUPS}", "roles": ["auditor"]}],
        credentials={m["name"]: m["passphrase"] for m in kma.demo["key_split"]["members"][:3]},
    )


def test_a_directory_account_signs_in_through_the_sign_in_window(
    qtbot: Any, controller: Any, fresh_kma: Any, slapd: Slapd
) -> None:
    # Dana signs in with her directory account: an Auditor, who sees the page but cannot change it.
    set_directory(fresh_kma, slapd)
    dana = sign_in(qtbot, controller, fresh_kma, "dana", passphrase=PASSWORD)
    assert dana.ctx.may("audit.read") and not dana.ctx.may("users.write")
    dana_page = open_page(qtbot, dana, "directory")
    qtbot.waitUntil(lambda: dana_page.table.topLevelItemCount() == 1, timeout=WAIT_MS)
    assert not dana_page.change.isVisible()


def test_a_directory_down_is_said_at_sign_in(
    qtbot: Any, controller: Any, fresh_kma: Any, slapd: Slapd
) -> None:
    set_directory(fresh_kma, slapd)
    slapd.stop()
    window = send_sign_in(qtbot, controller, fresh_kma, "dana", passphrase=PASSWORD)
    qtbot.waitUntil(window.error.isVisible, timeout=WAIT_MS)
    assert "cannot be reached" in window.error.text() and "local accounts still can" in window.error.text()
    assert controller.window is None


def test_an_auditor_saves_the_signed_report_of_users(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = tmp_path / "users.csv"
    monkeypatch.setattr(signed_report, "ask_save_path", lambda *_a: saved)  # the file dialog's answer
    window = sign_in(qtbot, controller, fresh_kma, "auditor")
    page = open_page(qtbot, window, "users")
    action(page, "Signed report…").trigger()
    qtbot.waitUntil(lambda: saved.with_name("users.csv.sig").exists(), timeout=WAIT_MS)
    check = verify_export(saved, None, fresh_kma.ca_pem.encode())
    assert check.ok and check.kind == "users.csv", check.problem
    assert "so,Sam Officer,security_officer" in saved.read_text()
    for box in message_boxes():  # "Saved to ..."
        box.accept()
