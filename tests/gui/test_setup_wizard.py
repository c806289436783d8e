"""The set-up wizard (issue 13) against a real `kma serve` waiting in set-up mode.

Given a KMA started on an empty data directory, an installer walks the wizard from the sign-in
window: each mistake is caught on the page where it was typed, with its reason; the KMA is set
up only at the end and the manager signs the new Security Officer in. The same answers, run
headless by `kma init --answers`, make the same KMA. Cancel leaves the KMA waiting, nothing
written.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWizard

from tests.gui.helpers import WAIT_MS
from tests.support.agents import service_address
from tests.support.first_setup import MEMBERS, OFFICER, describe, written
from tests.support.kma_process import RunningKma, run_kma
from tests.support.ports import free_port
from tests.support.softhsm import SoftHsm, softhsm
from tests.support.totp import STEP, code_now, confirmed
from ui.setup_wizard.wizard import SetupWizard

pytestmark = pytest.mark.gui


@pytest.fixture
def waiting(tmp_path: Path) -> Iterator[RunningKma]:
    kma = RunningKma.awaiting_setup(tmp_path)
    yield kma
    kma.stop()


def open_wizard(qtbot: Any, controller: Any) -> tuple[Any, SetupWizard]:
    window = controller.show_sign_in()
    qtbot.addWidget(window)
    window.setup_button.click()
    wizard = window.setup_wizard
    qtbot.waitUntil(wizard.isVisible, timeout=WAIT_MS)
    return window, wizard


def next_page(qtbot: Any, wizard: SetupWizard, expect: str) -> None:
    """Next, then wait for page `expect` (or for the current page to say what is wrong)."""
    wizard.button(
        QWizard.NextButton if wizard.currentPage().isCommitPage() is False else QWizard.CommitButton
    ).click()
    qtbot.waitUntil(lambda: type(wizard.currentPage()).__name__ == expect, timeout=WAIT_MS * 3)


def refused_here(qtbot: Any, wizard: SetupWizard, words: str) -> None:
    """Next is refused: the page stays and says why."""
    page = wizard.currentPage()
    wizard.button(QWizard.NextButton).click()
    qtbot.waitUntil(lambda: words in page.error.text() and not page.busy, timeout=WAIT_MS * 3)
    assert wizard.currentPage() is page


def connect(qtbot: Any, wizard: SetupWizard, kma: RunningKma, code: str) -> None:
    page = wizard.currentPage()
    page.address.setText(kma.address)
    page.connect_button.click()
    qtbot.waitUntil(page.same.isEnabled, timeout=WAIT_MS)
    assert (
        page.fingerprint.text().replace("\n", ":").replace("SHA256::", "SHA256:")
        == kma.setup["ca_fingerprint"]
    )
    page.same.setChecked(True)
    page.code.setText(code)


def type_member(page: Any, name: str, passphrase: str, again: str | None = None) -> None:
    page.name.setText(name)
    page.passphrase.setText(passphrase)
    page.again.setText(passphrase if again is None else again)


def walk(
    qtbot: Any,
    wizard: SetupWizard,
    kma: RunningKma,
    service_port: int,
    mistakes: bool,
    hsm: SoftHsm | None = None,
) -> None:
    """Through every page to the summary, making (and correcting) each mistake when asked; with
    `hsm`, the master key goes in that token."""
    connect(qtbot, wizard, kma, "WRONG-CODE-0000" if mistakes else kma.setup["setup_code"])
    if mistakes:
        refused_here(qtbot, wizard, "not the set-up code")
        wizard.currentPage().code.setText(kma.setup["setup_code"])
    next_page(qtbot, wizard, "NetworkPage")
    network = wizard.currentPage()
    assert network.management.text() == kma.address
    # The KMA was started with --service-port 0: it picked its port before set-up, and offers it
    assert wizard.answers.service_port not in (None, 0, 5696)
    assert network.service.text() == f"127.0.0.1:{wizard.answers.service_port}"
    if mistakes:
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            network.service.setText(f"127.0.0.1:{busy.getsockname()[1]}")
            refused_here(qtbot, wizard, "already in use on the KMA")
    network.service.setText(f"127.0.0.1:{service_port}")
    next_page(qtbot, wizard, "ModePage")
    mode = wizard.currentPage()
    assert [b.property("mode") for b in mode.choice.buttons()] == ["new_cluster", "restore", "join"]
    assert mode.choice.checkedButton().text() == "Create a new cluster with this KMA as its first member"
    mode.cluster.setText("Acme Tape Vault")
    mode.site_id.setText("dallas")
    mode.site_name.setText("Dallas")
    mode.kma_id.setText("kma-dal-1")
    mode.kma_name.setText("KMA Dallas 1")
    next_page(qtbot, wizard, "KeySplitPage")
    split = wizard.currentPage()
    if mistakes:
        for n, m, words in [(3, 4, "cannot be more than"), (11, 2, "at most 10"), (3, 0, "at least 1")]:
            split.members.setValue(n)
            split.threshold.setValue(m)
            assert words in split.error.text()
            assert not wizard.button(QWizard.NextButton).isEnabled()
    split.members.setValue(3)
    split.threshold.setValue(2)
    next_page(qtbot, wizard, "MembersPage")
    members = wizard.currentPage()
    for i, (name, passphrase) in enumerate(MEMBERS):
        if mistakes and i == 0:
            type_member(members, name, "password1")
            refused_here(qtbot, wizard, "guessable")
            type_member(members, name, passphrase, passphrase + "x")
            refused_here(qtbot, wizard, "not the same")
        assert f"Member {i + 1} of 3" in members.whose.text()
        assert members.passphrase.text() == ""  # the previous member's typing is gone
        type_member(members, name, passphrase)
        if i < 2:
            wizard.button(QWizard.NextButton).click()
    next_page(qtbot, wizard, "ProofPage")
    proof = wizard.currentPage()
    assert len(proof.fields) == 2
    if mistakes:  # going back starts the members again, from member 1
        wizard.button(QWizard.BackButton).click()
        assert (
            type(wizard.currentPage()).__name__ == "MembersPage" and "Member 1 of 3" in members.whose.text()
        )
        for name, passphrase in MEMBERS:
            type_member(members, name, passphrase)
            wizard.button(QWizard.NextButton).click()
        qtbot.waitUntil(lambda: type(wizard.currentPage()).__name__ == "ProofPage", timeout=WAIT_MS * 3)
        for field in proof.fields.values():
            field.setText("not what they chose at all")
        proof.prove_button.click()
        qtbot.waitUntil(lambda: "The proof failed" in proof.error.text(), timeout=WAIT_MS * 3)
        assert not wizard.button(QWizard.NextButton).isEnabled()
    for name, field in proof.fields.items():
        field.setText(dict(MEMBERS)[name])
    proof.prove_button.click()
    qtbot.waitUntil(lambda: "reconstructed the secret" in proof.result.text(), timeout=WAIT_MS * 3)
    next_page(qtbot, wizard, "OfficerPage")
    officer = wizard.currentPage()
    officer.name.setText(OFFICER["name"])
    officer.passphrase.setText(OFFICER["passphrase"])
    officer.again.setText(OFFICER["passphrase"])
    assert officer.two_step.isChecked()  # Security Officers sign in in two steps unless unticked
    next_page(qtbot, wizard, "UnlockPage")
    assert wizard.currentPage().off.isChecked()  # the safer choice by default
    next_page(qtbot, wizard, "PoolPage")
    wizard.currentPage().pool_size.setValue(25)
    next_page(qtbot, wizard, "MasterKeyPage")
    master = wizard.currentPage().choice
    assert master.software.isChecked() and not master.token_form.isEnabled()  # software by default
    if hsm is not None:
        master.in_hsm.setChecked(True)
        master.module.setText(hsm.module)
        refused_here(qtbot, wizard, "Give the token label, the PIN file")
        # A typo in the token label is said here, naming the module's tokens, not after the ceremony
        choose_token(master, replace(hsm, label=hsm.label + "x"))
        refused_here(qtbot, wizard, f"its tokens: '{hsm.label}'")
        assert master.token.hasFocus() and "listed here once" in master.tokens.text()
        choose_token(master, hsm)
    next_page(qtbot, wizard, "SummaryPage")
    if hsm is not None:
        assert master.tokens.text() == f"Tokens in this module: {hsm.label}."


def enrol_in(qtbot: Any, dialog: Any, kma: RunningKma) -> str:
    """Two-step sign-in set up in `dialog` as its user would, with an authenticator; its secret."""
    qtbot.mouseClick(dialog.begin, Qt.LeftButton)
    qtbot.waitUntil(dialog.code.isEnabled, timeout=WAIT_MS)
    found = re.search(r"<b>([A-Z2-7]+)</b>", dialog.secret.text())
    assert found is not None
    qtbot.keyClicks(dialog.code, code_now(kma, found.group(1)))
    qtbot.mouseClick(dialog.turn_on, Qt.LeftButton)
    return found.group(1)


def choose_token(choice: Any, hsm: SoftHsm) -> None:
    """The token's answers on a TokenChoice (the Master key page's, the join page's)."""
    choice.in_hsm.setChecked(True)
    choice.module.setText(hsm.module)
    choice.token.setText(hsm.label)
    choice.pin_file.setText(str(hsm.pin_file))


def test_the_wizard_sets_up_a_new_kma_and_signs_in_its_security_officer(
    qtbot: Any, controller: Any, waiting: RunningKma, tmp_path: Path
) -> None:
    window, wizard = open_wizard(qtbot, controller)
    walk(qtbot, wizard, waiting, free_port(), mistakes=True)
    assert written(waiting) == []  # nothing written before the summary's "Set up the KMA"
    summary = wizard.currentPage()
    summary.save_answers(tmp_path / "answers.toml")
    saved = (tmp_path / "answers.toml").read_text()
    assert "passphrase" not in saved.replace("# No passphrases", "").replace("asks each", "")
    assert 'second_factor_roles = ["security_officer"]' in saved
    next_page(qtbot, wizard, "SignInPage")
    done = wizard.currentPage()
    done.print_cards(tmp_path / "cards.pdf")
    pdf = (tmp_path / "cards.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page\b", pdf)) == 3  # one per member
    wizard.button(QWizard.FinishButton).click()
    # Security Officers must sign in in two steps (the Officer page's default): before the main
    # window, the new officer sets it up, or signs out.
    qtbot.waitUntil(lambda: controller.enrolment is not None or bool(done.error.text()), timeout=WAIT_MS * 6)
    assert not done.error.text() and controller.window is None
    secret = enrol_in(qtbot, controller.enrolment, waiting)
    qtbot.waitUntil(lambda: controller.window is not None, timeout=WAIT_MS * 3)
    assert controller.session.user.id == "so"

    # The same answers, headless: `kma init --answers` asks for the passphrases the file leaves out;
    # with them added, it makes the same KMA.
    waiting.wait_ready(set_up=True)
    with_passphrases = saved.replace("[key_split]", "")
    members = "".join(f'[[key_split.members]]\nname = "{n}"\npassphrase = "{p}"\n' for n, p in MEMBERS)
    head, _, _ = with_passphrases.partition("[[key_split.members]]")
    head = head.replace(
        f'name = "{OFFICER["name"]}"\n',
        f'name = "{OFFICER["name"]}"\npassphrase = "{OFFICER["passphrase"]}"\n',
    )
    (tmp_path / "full.toml").write_text(head + "[key_split]\nthreshold = 2\n" + members)
    run_kma(
        "init", "--data-dir", str(tmp_path / "headless" / "kma"), "--answers", str(tmp_path / "full.toml")
    )
    other = RunningKma(tmp_path / "headless" / "kma", clock_file=tmp_path / "headless" / "clock")
    other.start()
    try:
        so = other.client("so", OFFICER["passphrase"])
        so.unlock_kma("kma-dal-1", credentials=MEMBERS[:2])  # a locked KMA asks no enrolment
        confirmed(other, so)
        waiting.advance_clock(STEP)  # the wizard's first code is spent: the next step's
        new = waiting.client()
        new.sign_in("so", OFFICER["passphrase"], code_now(waiting, secret))
        assert describe(so) == describe(new)
    finally:
        other.stop()


def test_the_wizard_puts_the_master_key_in_an_hsm(
    qtbot: Any, controller: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hsm = softhsm(tmp_path)
    monkeypatch.setenv("SOFTHSM2_CONF", str(hsm.conf))  # the KMA waiting in set-up mode inherits it
    kma = RunningKma.awaiting_setup(tmp_path)
    try:
        _, wizard = open_wizard(qtbot, controller)
        walk(qtbot, wizard, kma, free_port(), mistakes=False, hsm=hsm)
        assert f"in the HSM token &#x27;{hsm.label}&#x27;" in wizard.currentPage().text.text()
        wizard.currentPage().save_answers(tmp_path / "answers.toml")
        assert f'token_label = "{hsm.label}"' in (tmp_path / "answers.toml").read_text()
        # The PIN file loosened after its check: the set-up fails, and Back keeps the proven split
        hsm.pin_file.chmod(0o644)
        qtbot.keyClick(wizard, Qt.Key_Return)  # Enter on the Summary sets up the KMA
        progress = wizard.page_named("ProgressPage")
        qtbot.waitUntil(lambda: "PIN" in progress.error.text(), timeout=WAIT_MS * 3)
        assert "keeps the proven key split" in progress.error.text()
        for page in ("SummaryPage", "MasterKeyPage"):
            qtbot.waitUntil(wizard.button(QWizard.BackButton).isEnabled, timeout=WAIT_MS)
            wizard.button(QWizard.BackButton).click()
            assert type(wizard.currentPage()).__name__ == page
        hsm.pin_file.chmod(0o600)
        next_page(qtbot, wizard, "SummaryPage")
        next_page(qtbot, wizard, "SignInPage")
        done = wizard.currentPage()
        # The port typed on the Network page gave way to the one the KMA serves agents on
        serving = f"127.0.0.1:{wizard.answers.service_port}"
        assert f"agents (tape drives) at <b>{serving}</b>" in done.text.text()
        offered: list[str] = []
        monkeypatch.setattr("ui.setup_wizard.finish_pages.ask_save_path", lambda *a: offered.append(a[3]))
        done.ask_where_to_print()
        assert offered == [f"acme-tape-vault-key-split-cards-{date.today().isoformat()}.pdf"]
        kma.wait_ready(set_up=True)
        assert service_address(kma) == serving
        status = kma.client().get_status()
        assert status.master_key == f"pkcs11: token '{hsm.label}' in {hsm.module}"
        assert "[hsm]" in (kma.data_dir / "kma.toml").read_text()
    finally:
        kma.stop()


def test_cancel_leaves_the_kma_waiting_with_nothing_written(
    qtbot: Any, controller: Any, waiting: RunningKma
) -> None:
    _window, wizard = open_wizard(qtbot, controller)
    walk(qtbot, wizard, waiting, free_port(), mistakes=False)
    wizard.button(QWizard.CancelButton).click()
    qtbot.waitUntil(lambda: wizard.stop_box is not None and wizard.stop_box.isVisible(), timeout=WAIT_MS)
    next(b for b in wizard.stop_box.buttons() if b.text() == "Stop and throw away").click()
    qtbot.waitUntil(lambda: not wizard.isVisible(), timeout=WAIT_MS)
    assert written(waiting) == []
    assert waiting.setup and waiting.process is not None and waiting.process.poll() is None


def test_signing_in_to_a_kma_not_set_up_says_what_to_do_and_pins_nothing(
    qtbot: Any, controller: Any, waiting: RunningKma
) -> None:
    from PySide6.QtCore import Qt

    from app.session.profiles import ProfileStore

    window = controller.show_sign_in()
    qtbot.addWidget(window)
    window.profile.setCurrentIndex(window.profile.findData(None))
    qtbot.keyClicks(window.name, "new kma")
    qtbot.keyClicks(window.address, waiting.address)
    qtbot.keyClicks(window.user, "so")
    qtbot.keyClicks(window.passphrase, "anything at all")
    qtbot.mouseClick(window.sign_in_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: getattr(window, "trust_dialog", None) is not None, timeout=WAIT_MS)
    qtbot.mouseClick(window.trust_dialog.trust, Qt.LeftButton)
    qtbot.waitUntil(window.error.isVisible, timeout=WAIT_MS)
    assert "not been set up yet" in window.error.text() and "Set up a new KMA…" in window.error.text()
    profile = ProfileStore().get("new kma")
    assert profile is not None and profile.ca_fingerprint == ""  # the temporary certificate is not kept
