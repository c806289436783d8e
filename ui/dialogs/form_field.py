"""A form's field (`Field`): what a dialog asks, and what is wrong with what is typed, in words
(an ID's characters, a passphrase's length, a text's length). The dialog that asks them:
ui/dialogs/form_dialog.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
PASSWORDS = ("password", "new_passphrase")  # kept as typed, spaces included
LONGER = "Choose a longer one, e.g. a few unrelated words."  # as the set-up wizard says it


def _id_problem(spec: Field, value: str) -> str:
    if re.fullmatch(ID_PATTERN, value):
        return ""
    if len(value) > 64:
        return f"{spec.label} is longer than 64 characters."
    bad = sorted({c for c in value if not re.fullmatch(r"[A-Za-z0-9._-]", c)})
    if bad:
        shown = ", ".join("a space" if c == " " else f"'{c}'" for c in bad)
        return f"{spec.label} may use only letters, digits, '.', '_' and '-' (not {shown})."
    return f"{spec.label} must start with a letter or a digit."


def _passphrase_problem(spec: Field, value: str) -> str:
    if len(value) < 8:
        return f"{spec.label} is too short: at least 8 characters ({8 - len(value)} more)."
    if len(value) > 256:
        return f"{spec.label} is too long: at most 256 characters."
    return ""


def _length_problem(spec: Field, value: str) -> str:
    if len(value) > spec.max_length:
        return f"{spec.label} is longer than {spec.max_length} characters."
    return ""


@dataclass
class Field:
    """One input. ``kind``: text, id, multiline, password, bool, int, days, choice, roles, and
    new_passphrase: a password a person chooses, with the set-up's strength meter under it and
    its minimum (the KMA's one rule, kma/domain/strength.py); ``guessable(values)`` gives the
    words that make it guessable (the user's ID and name)."""

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
    guessable: Callable[[dict[str, Any]], list[str]] | None = None  # new_passphrase only
    at_least: str = ""  # the key of a number field this one may not be below (checked as you type)


VALUE_CHECKS: dict[str, Callable[[Field, Any], str]] = {
    "id": _id_problem,
    "password": _passphrase_problem,
    "new_passphrase": _passphrase_problem,
    "text": _length_problem,
    "multiline": _length_problem,
}


def hint_lines(spec: Field) -> int:
    """The room kept under a field for what may be wrong with it: two lines where the words can
    be long (which characters an ID may not have, a passphrase's strength), one for "required",
    none where nothing can be wrong (a plain text field cannot be typed longer than allowed)."""
    if spec.read_only:
        return 0
    if spec.kind in ("id", "password", "new_passphrase", "multiline") or spec.at_least:
        return 2
    return int(spec.required)
