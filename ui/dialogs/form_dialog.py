"""One dialog for every create/edit/confirm form, declared as a list of fields.

Area modules say *what* to ask (``Field`` specs) and *what to send* (``submit(values)``: a write of
:mod:`app.writes`, which says what it changes); this module handles validation, the background
write, and showing a refusal inline so the user can correct the value without retyping the rest.
Choice lists (sites, key groups, policies) are read from the KMA when the dialog opens.

Validation runs as the user types: what is wrong with a field is said in words right under it
once the user has touched it (nothing is silently dropped); while the form cannot be sent, a line
above the buttons says why; a refusal from the KMA goes under the field it is about (a taken ID)
or above the buttons, and goes away as soon as the user changes something.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
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

import kms_client
from app.context import AppContext
from app.errors import ErrorKind, describe
from app.setup import Strength, strength
from app.writes import Change
from ui.dialogs.form_field import LONGER, PASSWORDS, VALUE_CHECKS, Field, hint_lines
from ui.format import words
from ui.setup_wizard.widgets import StrengthMeter
from ui.widgets import ErrorLabel, PasswordLineEdit, RoomLabel, grow_to_fit


class FormDialog(QDialog):
    """Asks for ``fields``, then runs the write ``submit(values)`` on the write lane."""

    def __init__(
        self,
        ctx: AppContext,
        title: str,
        fields: list[Field],
        submit: Callable[[dict[str, Any]], Change],
        on_done: Callable[[Any], object] | None = None,
        *,
        intro: str = "",
        noun: str = "",
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
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(480)
        self.editors: dict[str, QWidget] = {}
        self.hints: dict[str, ErrorLabel] = {}  # the message under each field
        self.meters: dict[str, StrengthMeter] = {}  # under each new_passphrase field
        self._touched: set[str] = set()
        self._refusal: tuple[str, str] | None = None  # (field key, the KMA's words) until an edit
        self._noun = noun or (title[4:] if title.startswith("New ") else "")

        self.intro_text = intro
        layout = QVBoxLayout(self)
        if intro:
            label = QLabel(intro)
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.RichText)
            layout.addWidget(label)
        layout.addLayout(self._build_rows(fields))
        layout.addWidget(self._message_room())
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText(ok_text)
        # Cancel never takes Enter from a form holding typed work (focus may land on it while a
        # write runs): Enter sends the form, or, when sending destroys something, does nothing.
        cancel = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)
        cancel.setAutoDefault(False)
        self.ok.setDefault(not danger)
        self._typing: QWidget | None = None  # where the user was when they sent the form
        if danger:
            # A destructive confirmation: Enter (or a stray double-click) must not confirm it.
            self.ok.setStyleSheet(
                "QPushButton { color: #c62828; font-weight: bold; }"
                "QPushButton:disabled { color: palette(mid); }"
            )
            self.ok.setAutoDefault(False)
            if not fields:  # nothing typed to lose: Enter is Cancel
                cancel.setDefault(True)
                cancel.setFocus(Qt.FocusReason.OtherFocusReason)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self._validate()
        self._load_choices()

    def main_layout(self) -> QVBoxLayout:
        """The dialog's column (intro, fields, message room, buttons), made in ``__init__``, where
        a subclass inserts its own group."""
        return cast(QVBoxLayout, self.layout())

    def _message_room(self) -> QWidget:
        """Above the buttons, two lines kept for the KMA's refusal (red) or, until the user has
        touched a field, why the form cannot be sent yet (muted: a to-do, not an error)."""
        self.message_room = QWidget()
        column = QVBoxLayout(self.message_room)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        self.error = ErrorLabel(reserve_lines=0)
        self.missing = RoomLabel("Why the form cannot be sent yet", "formMissing", reserve_lines=0)
        self.missing.setEnabled(False)
        column.addWidget(self.error)
        column.addWidget(self.missing)
        column.addStretch(1)
        self.message_room.setMinimumHeight(2 * self.fontMetrics().lineSpacing())
        return self.message_room

    def _build_rows(self, fields: list[Field]) -> QFormLayout:
        """Each field with its label, and under it the line that says what is wrong with it."""
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        for spec in fields:
            editor = self._make_editor(spec)
            editor.setAccessibleName(spec.label)
            if spec.help:
                editor.setToolTip(spec.help)
                editor.setAccessibleDescription(spec.help)
            self.editors[spec.key] = editor
            label = QLabel(spec.label + (" *" if spec.required else "") + ":")
            label.setBuddy(editor)
            cell = QWidget()
            column = QVBoxLayout(cell)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(2)
            column.addWidget(editor)
            if spec.kind == "new_passphrase":
                self.meters[spec.key] = StrengthMeter()
                column.addWidget(self.meters[spec.key])
            hint = ErrorLabel(f"{spec.label}: problem", f"hint:{spec.key}", hint_lines(spec))
            column.addWidget(hint)
            self.hints[spec.key] = hint
            form.addRow(label, cell)
        return form

    # -- editors ------------------------------------------------------------------------------
    def _make_editor(self, spec: Field) -> QWidget:
        makers = {
            "text": self._line_edit,
            "id": self._line_edit,
            "password": self._password,
            "new_passphrase": self._password,
            "multiline": self._multiline,
            "bool": self._check,
            "int": self._spin,
            "days": self._spin,
            "choice": self._combo,
            "roles": self._roles,
        }
        if spec.kind not in makers:
            raise ValueError(f"unknown field kind {spec.kind!r}")
        return makers[spec.kind](spec)

    def _line_edit(self, spec: Field) -> QWidget:
        edit = QLineEdit()
        edit.setMaxLength(64 if spec.kind == "id" else spec.max_length)
        if spec.kind == "id":  # checked in words as typed, never filtered: see field_problem()
            edit.setPlaceholderText("letters, digits, . _ - (up to 64)")
        if spec.default is not None:
            edit.setText(str(spec.default))
        edit.setReadOnly(spec.read_only)
        edit.textChanged.connect(lambda _t, k=spec.key: self._edited(k))
        return edit

    def _password(self, spec: Field) -> QWidget:
        pw = PasswordLineEdit()
        pw.setPlaceholderText("8 to 256 characters")
        pw.textChanged.connect(lambda _t, k=spec.key: self._edited(k))
        return pw

    def _multiline(self, spec: Field) -> QWidget:
        text = QPlainTextEdit()
        text.setTabChangesFocus(True)
        text.setFixedHeight(80)
        if spec.default:
            text.setPlainText(str(spec.default))
        text.textChanged.connect(lambda k=spec.key: self._edited(k))
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
        spin.valueChanged.connect(lambda _v, k=spec.key: self._edited(k))
        return spin

    def _combo(self, spec: Field) -> QWidget:
        combo = QComboBox()
        combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToContents
        )  # "Dallas (dallas)" whole, not "Dall…"
        for label, value in spec.choices:
            combo.addItem(label, value)
        if spec.default is not None:
            combo.setCurrentIndex(max(0, combo.findData(spec.default)))
        combo.currentIndexChanged.connect(lambda _i, k=spec.key: self._edited(k))
        return combo

    def _roles(self, spec: Field) -> QWidget:
        group = QGroupBox()
        inner = QVBoxLayout(group)
        inner.setContentsMargins(6, 6, 6, 6)
        chosen = set(spec.default or ())
        for role in kms_client.ROLES:
            check = QCheckBox(words(role))
            check.setObjectName(role)
            check.setChecked(role in chosen)
            check.toggled.connect(lambda _on, k=spec.key: self._edited(k))
            inner.addWidget(check)
        return group

    def _load_choices(self) -> None:
        for spec in self.fields:
            if spec.load_choices is not None:
                self._load_choices_of(spec, spec.load_choices)

    def _load_choices_of(self, spec: Field, loader: Callable[[Any], list[tuple[str, Any]]]) -> None:
        combo = self.editors[spec.key]
        assert isinstance(combo, QComboBox)
        combo.setEnabled(False)
        combo.addItem("Loading…", None)
        self.ctx.ops.read(
            lambda worker: loader(worker.client),
            parent=self,
            success=lambda items: self._fill(combo, spec, items),
            failure=lambda exc: self._fill_failed(combo, exc),
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
        wide = self.sizeHint().width()  # the choices just read may be longer than the dialog
        if wide > self.width():
            self.resize(wide, self.height())

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
                out[spec.key] = editor.text() if spec.kind in PASSWORDS else editor.text().strip()
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
                out[spec.key] = [c.objectName() for c in editor.findChildren(QCheckBox) if c.isChecked()]
        return out

    def field_problem(self, spec: Field, value: Any) -> str:
        """What is wrong with one field's value, in words ("" if nothing)."""
        if spec.required and value in (None, "", []):
            return f"{spec.label} is required." if spec.kind != "roles" else "Choose at least one role."
        check = VALUE_CHECKS.get(spec.kind)
        problem = check(spec, value) if check is not None and value else ""
        if not problem and value and spec.kind == "new_passphrase":
            found = self._strength(spec)
            if not found.enough:
                problem = f"{spec.label} is {found.words.lower()}. {LONGER}"  # how: the meter says
        if not problem and spec.at_least and value is not None:
            floor = self.values()[spec.at_least]
            other = next(f for f in self.fields if f.key == spec.at_least)
            if floor is not None and value < floor:
                shown = f"{floor // 86400:,} days" if other.kind == "days" else f"{floor:,}"
                problem = f"{spec.label} cannot be less than the {other.label.lower()} ({shown})."
        if not problem and self._refusal is not None and self._refusal[0] == spec.key:
            problem = self._refusal[1]
        return problem

    def _strength(self, spec: Field) -> Strength:
        values = self.values()
        words = spec.guessable(values) if spec.guessable is not None else []
        return strength(values[spec.key], [w for w in words if w])

    def problem(self) -> str:
        """Why the form cannot be sent yet ("" when it can)."""
        values = self.values()
        for spec in self.fields:
            problem = self.field_problem(spec, values[spec.key])
            if problem:
                return problem
        return ""

    def _edited(self, key: str) -> None:
        self._touched.add(key)
        self._refusal = None  # the KMA's refusal was about the old value
        self.error.say("")
        self._validate()

    def _validate(self) -> None:
        for key, meter in self.meters.items():
            meter.show_strength(self._strength(next(f for f in self.fields if f.key == key)))
        problem = self.problem()
        self.ok.setEnabled(not problem)
        self.ok.setToolTip(problem)
        values = self.values()
        shown_inline = False
        for spec in self.fields:
            hint = self.hints[spec.key]
            text = self.field_problem(spec, values[spec.key])
            if spec.key not in self._touched and (self._refusal or ("", ""))[0] != spec.key:
                text = ""
            if text != hint.text():
                hint.say(text)
                grow_to_fit(self)
            shown_inline = shown_inline or bool(text)
        missing = "" if shown_inline or not problem else problem
        if missing != self.missing.text():
            self.missing.say(missing)
            grow_to_fit(self)

    def _accept(self) -> None:
        problem = self.problem()
        if problem:
            self.error.say(problem)
            return
        values = self.values()
        self.error.say("")
        focused = QApplication.focusWidget()
        self._typing = focused if focused is not None and self.isAncestorOf(focused) else None
        self.ok.setEnabled(False)
        self.ctx.ops.write(
            self._submit(values),
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
        self._report(result)

    def _report(self, result: Any) -> None:
        """What to do with the KMA's answer beyond what the write itself does."""
        if self._on_done:
            self._on_done(result)

    def _failed(self, exc: BaseException) -> bool:
        self.ok.setEnabled(True)
        message = describe(exc)
        if message.kind in (ErrorKind.SESSION_EXPIRED, ErrorKind.UNREACHABLE):
            self.error.say(message.what)
            return False
        taken = self._taken_id(exc)
        if taken is not None:
            self._refusal = taken
            self._validate()
            self.editors[taken[0]].setFocus(Qt.FocusReason.OtherFocusReason)
            return True
        self.error.say(f"{message.what} {message.todo}")
        grow_to_fit(self)
        fault = self.field_at_fault(exc) or self._typing
        if fault is not None and fault.isEnabled():
            fault.setFocus(Qt.FocusReason.OtherFocusReason)
            if isinstance(fault, QLineEdit):
                fault.selectAll()  # typing replaces what was refused
        return True

    def field_at_fault(self, exc: BaseException) -> QWidget | None:
        """The field a refusal is about, to take the focus (None: where the user was)."""
        return None

    def _taken_id(self, exc: BaseException) -> tuple[str, str] | None:
        """A create refused because the ID is in use: (the ID field, what to say under it)."""
        words = exc.message if isinstance(exc, kms_client.ApiError) else ""
        said = words.startswith("There is already")  # the KMA's words (e.g. the same name, other case)
        if not isinstance(exc, kms_client.Conflict) or not (said or "already exists" in words):
            return None
        spec = next((f for f in self.fields if f.kind == "id" and not f.read_only), None)
        if spec is None:
            return None
        value = self.values()[spec.key]
        label = " ".join(w if w.isupper() else w.lower() for w in spec.label.split())  # "site ID"
        taken = words if said else f"There is already a {self._noun or 'item'} '{value}'."
        return spec.key, f"{taken} Choose another {label}."

    def reject(self) -> None:
        for editor in self.editors.values():
            if isinstance(editor, PasswordLineEdit):
                editor.clear()
        super().reject()
