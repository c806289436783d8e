"""Input rules shared by the API, the CLI and the answers file."""

from __future__ import annotations

import re
import unicodedata

from kma.errors import ValidationFailed

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_ID = re.compile(ID_PATTERN)
MAX_TEXT = 200
MIN_PASSPHRASE, MAX_PASSPHRASE = 8, 256


def check_id(value: str, what: str) -> str:
    if not _ID.fullmatch(value):  # `match` would let "$" accept a trailing newline
        raise ValidationFailed(
            f"{what} must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit."
        )
    return value


def check_text(value: str, what: str, max_len: int = MAX_TEXT, required: bool = False) -> str:
    # "Required" means something a person can see: whitespace or zero-width characters alone are not.
    if required and not any(unicodedata.category(c)[0] in "LNPS" for c in value):
        raise ValidationFailed(f"{what} is required.")
    if len(value) > max_len:
        raise ValidationFailed(f"{what} must be at most {max_len} characters.")
    if any(unicodedata.category(c) in ("Cc", "Cs", "Co", "Cn") and c not in "\t" for c in value):
        raise ValidationFailed(f"{what} contains control or unassigned characters.")
    return value


def check_passphrase(value: str, what: str = "The passphrase") -> str:
    if not MIN_PASSPHRASE <= len(value) <= MAX_PASSPHRASE:
        raise ValidationFailed(f"{what} must be {MIN_PASSPHRASE} to {MAX_PASSPHRASE} characters.")
    if "\x00" in value:
        raise ValidationFailed(f"{what} contains a NUL character.")
    return value


def check_address(address: str, what: str) -> str:
    """HOST:PORT, the form every KMA address takes (management, service, Raft)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) <= 65535 or any(c.isspace() for c in address):
        raise ValidationFailed(f"{what} must be HOST:PORT, not '{address[:100]}'.")
    return address
