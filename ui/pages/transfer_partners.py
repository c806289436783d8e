"""Transfer partners: this cluster's identity and fingerprint, the partner clusters (registered
under quorum), the export of tapes' keys to one of them, and the import wizard with its preview
(docs/transfer.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.pages import PageSpec, register
from app.quorum_watch import QuorumWatch
from app.writes.transfer import (
    disable_transfer_partner,
    enable_transfer_partner,
    export_transfer_file,
    import_transfer_file,
    register_transfer_partner,
    remove_transfer_partner,
    upload_transfer_file,
)
from kms_client.wire import PendingQuorumOp, TransferPartner
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.format import when, yes_no
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, ListSpec
from ui.lists.paged_model import Column
from ui.pages.transfer_jobs import JOBS
from ui.quorum.widgets import CredentialsEditor, QuorumFormDialog, credentials_note, load_members
from ui.widgets import page_header


def _register(page: ListPage[TransferPartner], _obj: Any) -> QuorumFormDialog:
    dialog = QuorumFormDialog(
        page.ctx,
        "Register transfer partner",
        [
            Field("id", "Partner ID", "id", required=True),
            Field("name", "Name", required=True),
            Field("contact", "Contact"),
            Field(
                "identity", "Identity", required=True, help="The partner's line: kms-transfer-identity-v1:…"
            ),
            Field(
                "fingerprint",
                "Fingerprint",
                required=True,
                help="As the partner read it to you on the phone; it must match the identity.",
            ),
            Field("may_send", "Its files are imported here", "bool", default=True),
            Field("may_receive", "Keys are exported to it", "bool", default=True),
        ],
        lambda v: register_transfer_partner(
            v["id"],
            v["name"],
            v["identity"],
            fingerprint=v["fingerprint"],
            contact=v["contact"],
            may_send=v["may_send"],
            may_receive=v["may_receive"],
            credentials=v["credentials"],
        ),
        what="the partner is registered",
        ok_text="Register partner",
        busy_text="Registering partner…",
        parent=page,
    )
    dialog.open()
    return dialog


def _remove(page: ListPage[TransferPartner], partner: Any) -> None:
    FormDialog(
        page.ctx,
        f"Remove transfer partner {partner.id}",
        [],
        lambda _v: remove_transfer_partner(partner.id),
        intro=f"Remove <b>{partner.name}</b>? Nothing is exported to it or imported from it again "
        "unless a quorum registers it anew. The files exchanged with it stay in the audit trail.",
        ok_text="Remove partner",
        busy_text="Removing partner…",
        danger=True,
        parent=page,
    ).open()


def _volsers(text: str) -> list[str]:
    return [v for v in text.replace(",", " ").split() if v]


def _export(page: ListPage[TransferPartner], partner: Any) -> FormDialog:
    """The export wizard: which tapes, for how long, where to save the file."""
    view = page.parent()

    def done(answer: Any) -> None:
        if isinstance(view, TransferPartnersPage):
            view.show_export(answer)

    dialog = FormDialog(
        page.ctx,
        f"Export tapes to {partner.name}",
        [
            Field("volsers", "Volsers", "multiline", help="One or more, by spaces, commas or lines."),
            Field("volser_from", "From volser"),
            Field("volser_to", "To volser"),
            Field("key_group_id", "Key group", help="Every data unit of this key group."),
            Field("valid_days", "Valid for", "int", default=30, minimum=1, maximum=365, help="Days."),
            Field("out", "Save to", required=True, help="The file to hand to the partner."),
        ],
        lambda v: export_transfer_file(
            Path(v["out"]).expanduser(),
            partner.id,
            volsers=_volsers(v["volsers"] or ""),
            volser_from=v["volser_from"] or None,
            volser_to=v["volser_to"] or None,
            key_group_id=v["key_group_id"] or None,
            valid_days=v["valid_days"],
        ),
        done,
        intro=f"The keys go wrapped to <b>{partner.name}</b> (fingerprint {partner.fingerprint}) and signed "
        "by this cluster. Keys whose policy does not allow export stay here and are named.",
        ok_text="Export",
        busy_text="Exporting…",
        parent=page,
    )
    dialog.open()
    return dialog


class ImportWizard(QDialog):
    """Choose a file and a key group, see what the import would do, then import. Into a key group
    whose policy asks for the quorum (`import_needs_quorum`), the approvers type their key split
    passphrases here, as in the other quorum dialogs: with M of them the import runs at once, with
    fewer it is submitted for approval (the KMA checks them; they are sent once, kept nowhere)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setWindowTitle("Import a transfer file")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(560)
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.path = QLineEdit()
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        form.addRow("Transfer file", row)
        self.group = QComboBox()
        form.addRow("Into key group", self.group)
        layout.addLayout(form)
        self._guarded: set[str] = set()  # key groups whose policy puts imports under quorum
        self._upload_id = ""  # the previewed file, sent to the KMA: what the import names
        self._watch = QuorumWatch.of(ctx)
        self.credentials_group = QGroupBox("Key split credentials (the policy asks for the quorum)")
        self.credentials_group.setObjectName("credentialsGroup")
        inner = QVBoxLayout(self.credentials_group)
        note = QLabel(credentials_note(self._watch, "the import runs"))
        note.setWordWrap(True)
        inner.addWidget(note)
        self.credentials = CredentialsEditor(self._watch.members())
        self.credentials.changed.connect(self._import_label)
        inner.addWidget(self.credentials)
        self.credentials_group.setVisible(False)
        layout.addWidget(self.credentials_group)
        self.summary = QLabel("Choose the file, then Preview.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.summary)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.preview_button = self.buttons.addButton("Preview", QDialogButtonBox.ButtonRole.ActionRole)
        self.import_button = self.buttons.addButton("Import", QDialogButtonBox.ButtonRole.AcceptRole)
        self.import_button.setEnabled(False)
        self.preview_button.clicked.connect(self.preview)
        self.import_button.clicked.connect(self.run_import)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.path.textChanged.connect(lambda _t: self.import_button.setEnabled(False))
        self.group.currentIndexChanged.connect(lambda _i: self._import_label())
        ctx.ops.read(
            lambda w: (list(w.client.iter_key_groups()), list(w.client.iter_key_policies())),
            parent=self,
            success=self._groups,
        )
        load_members(ctx, self, self.credentials.set_members)

    def _groups(self, found: tuple[list[Any], list[Any]]) -> None:
        groups, policies = found
        asks = {p.id for p in policies if p.import_needs_quorum}
        self._guarded = {g.id for g in groups if g.policy_id in asks}
        for g in groups:
            self.group.addItem(f"{g.id} ({g.policy_id})", g.id)
        self._import_label()

    def _import_label(self) -> None:
        """The credentials where the key group's policy asks for the quorum; "Submit for approval"
        while they are fewer than the quorum."""
        guarded = self.group.currentData() in self._guarded
        self.credentials_group.setVisible(guarded)
        threshold = self._watch.threshold()
        short = threshold is None or len(self.credentials.credentials()) < threshold
        self.import_button.setText("Submit for approval" if guarded and short else "Import")

    def _browse(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Transfer file")
        if name:
            self.path.setText(name)

    def preview(self) -> None:
        """Sends the file (as it is read: its own request), then asks what importing it would do;
        the import that follows names the same upload."""
        source = Path(self.path.text().strip()).expanduser()
        self.summary.setText("Checking the file…")
        self._upload_id = ""

        def sent_and_checked(w: Any) -> tuple[str, Any]:
            upload_id = upload_transfer_file(w.client, source)
            return upload_id, w.client.preview_transfer_import(upload_id)

        self.ctx.ops.read(
            sent_and_checked,
            parent=self,
            label="Checking the transfer file…",
            success=self._previewed,
            failure=self._refused,
        )

    def _previewed(self, sent: tuple[str, Any]) -> None:
        self._upload_id, p = sent
        lines = [
            f"From partner <b>{p.partner_id}</b> ({p.partner_name}), sent by {p.sender_name}, "
            f"valid until {when(p.expires_at)}.",
            f"{p.data_units:,} data units, {p.keys:,} keys: {p.new:,} new, {p.already_here:,} here already.",
        ]
        if p.imported_before_at:
            lines.append(
                f"This file was imported on {when(p.imported_before_at)}: importing it changes nothing."
            )
        lines += [f"Conflict: {c.reason}" for c in p.conflicts[:20]]
        if p.conflicts:
            lines.append(f"{len(p.conflicts):,} data units conflict: the import would be refused.")
        self.summary.setText("<br>".join(lines))
        self.import_button.setEnabled(not p.conflicts and p.new > 0)

    def _refused(self, exc: BaseException) -> bool:
        from app.errors import describe

        message = describe(exc)
        self.summary.setText(f"<b>Refused:</b> {message.what} {message.todo}")
        self.import_button.setEnabled(False)
        return True

    def run_import(self) -> None:
        guarded = self.group.currentData() in self._guarded
        problem = self.credentials.problem() if guarded else ""
        if problem:
            self.summary.setText(f"<b>Key split credentials:</b> {problem}")
            return
        given = (self.credentials.credentials() or None) if guarded else None
        self.credentials.clear()  # sent once, with this request, and kept nowhere
        self.import_button.setEnabled(False)
        self.ctx.ops.write(
            import_transfer_file(self._upload_id, self.group.currentData(), given),
            parent=self,
            label="Importing…",
            success=self._imported,
            failure=self._refused,
            progress=lambda text, _value, _maximum: self.summary.setText(text),
        )

    def _imported(self, done: Any) -> None:
        if isinstance(done, PendingQuorumOp):
            self.summary.setText(
                f"Submitted for approval: quorum operation <b>{done.id}</b> needs {done.approvals_needed} "
                "approvals (Pending approvals page). The keys are imported when the quorum approves."
            )
            return
        n = done.keys_awaiting_backup
        waiting = (
            f"<br><br>{n:,} imported {'key is' if n == 1 else 'keys are'} sent to drives once a database "
            "backup of this KMA holds them: ask a Backup Operator for one (Backups page)."
            if n
            else ""
        )
        self.summary.setText(
            f"Imported {done.imported:,} data units into key group <b>{done.key_group_id}</b> from "
            f"partner {done.partner_id}.{waiting}"
        )

    def done(self, result: int) -> None:
        self.credentials.clear()
        super().done(result)


def _import(page: ListPage[TransferPartner], _obj: Any) -> ImportWizard:
    wizard = ImportWizard(page.ctx, page)
    wizard.open()
    return wizard


PARTNERS = ListSpec(
    key="transfer_partners",
    title="Transfer partners",
    noun="transfer partner",
    columns=[
        Column("id", "Partner ID", 130),
        Column("name", "Name", 180),
        Column("enabled", "Enabled", 70, format=yes_no, tone=lambda p: None if p.enabled else "warn"),
        Column("may_send", "Sends here", 80, format=yes_no),
        Column("may_receive", "Receives", 75, format=yes_no),
        Column("fingerprint", "Fingerprint", 420),
        Column("contact", "Contact", 160),
        Column("created_at", "Registered", 140),
    ],
    fetch=lambda client: client.list_transfer_partners,
    sort_fields=frozenset({"id", "name", "created_at"}),
    shows={"transfer"},
    actions=[
        ActionSpec("Register partner…", _register, "transfer.partners", needs="none", toolbar=True),
        ActionSpec("Export tapes…", _export, "transfer.export", toolbar=True, enabled=lambda p: p.enabled),
        ActionSpec("Import file…", _import, "transfer.import", needs="none", toolbar=True),
        ActionSpec(
            "Enable",
            lambda page, p: page.ctx.ops.write(enable_transfer_partner(p.id), parent=page),
            "transfer.partners",
            enabled=lambda p: not p.enabled,
        ),
        ActionSpec(
            "Disable",
            lambda page, p: page.ctx.ops.write(disable_transfer_partner(p.id), parent=page),
            "transfer.partners",
            enabled=lambda p: p.enabled,
        ),
        ActionSpec("Remove partner…", _remove, "transfer.partners", danger=True),
    ],
    default_sort=("id", Qt.SortOrder.AscendingOrder),
)


class TransferPartnersPage(QWidget):
    """This cluster's identity above (what partners register), the partners below."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        layout = QVBoxLayout(self)
        layout.addWidget(
            page_header(
                "Transfer partners",
                "Clusters that tapes go to or come from: their keys travel in a transfer file "
                "wrapped to the partner and signed by the sender (docs/transfer.md).",
            )
        )
        self.fingerprint = QLabel("")
        self.fingerprint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.identity = QLineEdit()
        self.identity.setReadOnly(True)
        form = QFormLayout()
        form.addRow("This cluster's fingerprint", self.fingerprint)
        form.addRow("Identity to give partners", self.identity)
        layout.addLayout(form)
        self.list = ListPage(ctx, PARTNERS, self, embedded=True)
        layout.addWidget(self.list, 1)
        # the exports and imports the cluster keeps: an interrupted import is resumed there
        self.jobs = ListPage(ctx, JOBS, self, embedded=True)
        layout.addWidget(self.jobs, 1)
        self.result = QLabel("")
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.result)
        self.refresh()

    def refresh(self) -> None:
        self.ctx.ops.read(lambda w: w.client.get_transfer_identity(), parent=self, success=self._identity)
        self.list.refresh()
        self.jobs.refresh()

    def _identity(self, identity: Any) -> None:
        self.fingerprint.setText(identity.fingerprint)
        self.identity.setText(identity.identity)

    def show_export(self, done: Any) -> None:
        text = (
            f"Transfer file {done.file_id}: {done.data_units:,} data units, {done.keys:,} keys for "
            f"partner {done.partner_id}, valid until {when(done.expires_at)}."
        )
        if done.not_exported:
            named = "; ".join(f"{x.data_unit_id} ({x.reason})" for x in done.not_exported[:10])
            text += f" {len(done.not_exported):,} keys did not leave: {named}."
        if done.not_found:
            text += f" No key here for: {', '.join(done.not_found[:10])}."
        self.result.setText(text)

    def save_state(self) -> None:
        self.list.save_state()
        self.jobs.save_state()


register(
    PageSpec(
        "transfer_partners",
        "Transfer partners",
        TransferPartnersPage,
        permission="transfer.read",
        order=75,
        icon="SP_ArrowRight",
    )
)
