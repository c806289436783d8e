"""One dialog for every create/edit/confirm form, declared as a list of fields.

Area modules say *what* to ask (``Field`` specs) and *what to call* (``submit(client, values)``);
this module handles validation, the background write, and showing a refusal inline so the user can
correct the value without retyping the rest. Choice lists (sites, key groups, policies) are read
from the KMA when the dialog opens.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QRegularExpression, Qt
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.errors import ErrorKind, describe
from ui.format import words
from ui.widgets import ErrorLabel, PasswordLineEdit

ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
ROLE_NAMES = (
    "security_officer",
    "compliance_officer",
    "operator",
    "backup_operator",
    "auditor",
    "quorum_member",
)


@dataclass
class Field:
    """One input. ``kind``: text, id, multiline, password, bool, int, days, choice, roles."""

    key: str
    label: str
    kind: str = "text"
    required: bool = False
    default: Any = None
    help: str = ""
    choices: list[tuple[str, Any]] = field(default_factory=list)
    load_choices: Callable[[Any], list[tuple[str, Any]]] | None = None  # runs on a worker
    minimum: int = 1
    maximum: int = 100000
    max_length: int = 200
    read_only: bool = False


class FormDialog(QDialog):
    """Asks for ``fields``, then runs ``submit(client, values)`` on the write lane."""

    def __init__(
        self,
        ctx: AppContext,
        title: str,
        fields: list[Field],
        submit: Callable[[Any, dict[str, Any]], Any],
        on_done: Callable[[Any], None] | None = None,
        *,
        intro: str = "",
        ok_text: str = "Save",
        busy_text: str = "Saving…",
        danger: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.fields = fields
        self._submit = submit
        self._on_done = on_done
        self._busy_text = busy_text
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModal)
        self.setMinimumWidth(480)
        self.editors: dict[str, QWidget] = {}

        self.intro_text = intro
        layout = QVBoxLayout(self)
        if intro:
            label = QLabel(intro)
            label.setWordWrap(True)
            label.setTextFormat(Qt.RichText)
            layout.addWidget(label)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.ExpandingFieldsGrow)
        for spec in fields:
            editor = self._make_editor(spec)
            editor.setAccessibleName(spec.label)
            if spec.help:
                editor.setToolTip(spec.help)
                editor.setAccessibleDescription(spec.help)
            self.editors[spec.key] = editor
            label = QLabel(spec.label + (" *" if spec.required else "") + ":")
            label.setBuddy(editor)
            form.addRow(label, editor)
        layout.addLayout(form)
        self.error = ErrorLabel()
        layout.addWidget(self.error)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.ok = self.buttons.button(QDialogButtonBox.Ok)
        self.ok.setText(ok_text)
        if danger:
            # A destructive confirmation: Enter (or a stray double-click) must not confirm it.
            self.ok.setStyleSheet("QPushButton { color: #c62828; font-weight: bold; }")
            self.ok.setAutoDefault(False)
            cancel = self.buttons.button(QDialogButtonBox.Cancel)
            cancel.setDefault(True)
            if not fields:
                cancel.setFocus(Qt.OtherFocusReason)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self._validate()
        self._load_choices()

    # -- editors ------------------------------------------------------------------------------
    def _make_editor(self, spec: Field) -> QWidget:
        makers = {
            "text": self._line_edit, "id": self._line_edit, "password": self._password,
            "multiline": self._multiline, "bool": self._check, "int": self._spin,
            "days": self._spin, "choice": self._combo, "roles": self._roles,
        }
        if spec.kind not in makers:
            raise ValueError(f"unknown field kind {spec.kind!r}")
        return makers[spec.kind](spec)

    def _line_edit(self, spec: Field) -> QWidget:
        edit = QLineEdit()
        edit.setMaxLength(64 if spec.kind == "id" else spec.max_length)
        if spec.kind == "id":
            edit.setValidator(QRegularExpressionValidator(QRegularExpression(ID_PATTERN), edit))
            edit.setPlaceholderText("letters, digits, . _ - (up to 64)")
        if spec.default is not None:
            edit.setText(str(spec.default))
        edit.setReadOnly(spec.read_only)
        edit.textChanged.connect(self._validate)
        return edit

    def _password(self, spec: Field) -> QWidget:
        pw = PasswordLineEdit()
        pw.setPlaceholderText("8 to 256 characters")
        pw.textChanged.connect(self._validate)
        return pw

    def _multiline(self, spec: Field) -> QWidget:
        text = QPlainTextEdit()
        text.setTabChangesFocus(True)
        text.setFixedHeight(80)
        if spec.default:
            text.setPlainText(str(spec.default))
        text.textChanged.connect(self._validate)
        return text

    def _check(self, spec: Field) -> QWidget:
        box = QCheckBox()
        box.setChecked(bool(spec.default))
        return box

    def _spin(self, spec: Field) -> QWidget:
        spin = QSpinBox()
        spin.setRange(spec.minimum, spec.maximum)
        spin.setValue(int(spec.default or spec.minimum))
        if spec.kind == "days":
            spin.setSuffix(" days")
        spin.valueChanged.connect(self._validate)
        return spin

    def _combo(self, spec: Field) -> QWidget:
        combo = QComboBox()
        for label, value in spec.choices:
            combo.addItem(label, value)
        if spec.default is not None:
            combo.setCurrentIndex(max(0, combo.findData(spec.default)))
        combo.currentIndexChanged.connect(self._validate)
        return combo

    def _roles(self, spec: Field) -> QWidget:
        group = QGroupBox()
        inner = QVBoxLayout(group)
        inner.setContentsMargins(6, 6, 6, 6)
        chosen = set(spec.default or ())
        for role in ROLE_NAMES:
            check = QCheckBox(words(role))
            check.setObjectName(role)
            check.setChecked(role in chosen)
            check.toggled.connect(self._validate)
            inner.addWidget(check)
        return group

    def _load_choices(self) -> None:
        for spec in self.fields:
            if spec.load_choices is None:
                continue
            loader = spec.load_choices
            combo = self.editors[spec.key]
            assert isinstance(combo, QComboBox)
            combo.setEnabled(False)
            combo.addItem("Loading…", None)
            self.ctx.ops.read(
                lambda c, fn=loader: fn(c.client),
                parent=self,
                success=lambda items, cb=combo, s=spec: self._fill(cb, s, items),
                failure=lambda exc, cb=combo: self._fill_failed(cb, exc),
            )

    def _fill(self, combo: QComboBox, spec: Field, items: list[tuple[str, Any]]) -> None:
        combo.clear()
        for label, value in items:
            combo.addItem(label, value)
        if not items:
            combo.addItem(f"(none yet — create a {spec.label.lower()} first)", None)
        if spec.default is not None:
            combo.setCurrentIndex(max(0, combo.findData(spec.default)))
        combo.setEnabled(bool(items))
        self._validate()

    def _fill_failed(self, combo: QComboBox, exc: BaseException) -> bool:
        combo.clear()
        combo.addItem("(could not load)", None)
        self.error.say(describe(exc).text)
        return True

    # -- values -------------------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for spec in self.fields:
            editor = self.editors[spec.key]
            if isinstance(editor, QLineEdit):
                out[spec.key] = editor.text() if spec.kind == "password" else editor.text().strip()
            elif isinstance(editor, QPlainTextEdit):
                out[spec.key] = editor.toPlainText().strip()
            elif isinstance(editor, QCheckBox):
                out[spec.key] = editor.isChecked()
            elif isinstance(editor, QSpinBox):
                value = editor.value()
                out[spec.key] = value * 86400 if spec.kind == "days" else value
            elif isinstance(editor, QComboBox):
                out[spec.key] = editor.currentData()
            elif isinstance(editor, QGroupBox):
                out[spec.key] = [c.objectName() for c in editor.findChildren(QCheckBox)
                                 if c.isChecked()]
        return out

    def problem(self) -> str:
        """Why the form cannot be sent yet ("" when it can)."""
        values = self.values()
        for spec in self.fields:
            value = values[spec.key]
            if spec.required and (value in (None, "", []) ):
                return f"{spec.label} is required."
            if spec.kind == "id" and value and not re.fullmatch(ID_PATTERN, value):
                return f"{spec.label} may use letters, digits, '.', '_' and '-' (up to 64)."
            if spec.kind == "password" and value and not 8 <= len(value) <= 256:
                return f"{spec.label} must be 8 to 256 characters."
            if spec.kind in ("text", "multiline") and value and len(value) > spec.max_length:
                return f"{spec.label} is longer than {spec.max_length} characters."
        return ""

    def _validate(self) -> None:
        problem = self.problem()
        self.ok.setEnabled(not problem)
        self.ok.setToolTip(problem)

    def _accept(self) -> None:
        problem = self.problem()
        if problem:
            self.error.say(problem)
            return
        values = self.values()
        self.error.say("")
        self.ok.setEnabled(False)
        submit = self._submit
        self.ctx.ops.write(
            lambda c: submit(c.client, values),
            parent=self,
            label=self._busy_text,
            success=self._done,
            failure=self._failed,
        )

    def _done(self, result: Any) -> None:
        for editor in self.editors.values():
            if isinstance(editor, PasswordLineEdit):
                editor.clear()
        self.accept()
        if self._on_done:
            self._on_done(result)

    def _failed(self, exc: BaseException) -> bool:
        self.ok.setEnabled(True)
        message = describe(exc)
        if message.kind in (ErrorKind.SESSION_EXPIRED, ErrorKind.UNREACHABLE):
            self.error.say(message.what)
            return False
        self.error.say(f"{message.what} {message.todo}")
        return True

    def reject(self) -> None:
        for editor in self.editors.values():
            if isinstance(editor, PasswordLineEdit):
                editor.clear()
        super().reject()
