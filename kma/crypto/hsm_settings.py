"""Where the HSM is and how the KMA logs in to it: the `[hsm]` table of kma.toml (`HsmSettings`),
the PIN read from a file only the KMA's user can read or from the OS keyring, and the error every
token failure raises (`HsmUnavailable`). The token itself and the keys in it: kma/crypto/hsm.py.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kma.crypto.errors import CryptoError

KEYRING_SERVICE = "kma-hsm"
CLUSTER_MASTER_KEY = "cluster-master-key"  # `holds`: the token key is the cluster's master key itself


class HsmUnavailable(CryptoError):
    """The token is missing, refuses the PIN, or failed: the KMA serves no key material then."""

    @property
    def message(self) -> str:
        return str(self)


@dataclass(frozen=True)
class HsmSettings:
    """The `[hsm]` table of kma.toml (and of `kma init` answers). Never the PIN itself."""

    module: str
    key_label: str
    token_label: str = ""
    token_serial: str = ""
    pin_file: str = ""
    pin_keyring: str = ""  # the user name under the keyring service "kma-hsm"
    # "": the token key is one of the master key's two keys (a KMA of its own); "cluster-master-key":
    # the token key is the cluster's master key, unwrapped into the token when this KMA joined.
    holds: str = ""
    # With `holds`: the label of the token's key object of the generation before `key_label`'s, kept
    # while a master key rotation still needs it, destroyed (and this emptied) once it has ended.
    previous_key_label: str = ""

    @classmethod
    def from_table(cls, table: dict[str, Any], default_key_label: str) -> HsmSettings:
        fields = {
            "module",
            "key_label",
            "token_label",
            "token_serial",
            "pin_file",
            "pin_keyring",
            "holds",
            "previous_key_label",
        }
        unknown = sorted(set(table) - fields - {"pin"})
        if "pin" in table:
            raise ValueError(
                "[hsm] must not hold the PIN: give pin_file (readable only by the KMA's "
                "user) or pin_keyring (a name in the OS keyring)."
            )
        if unknown:
            raise ValueError(f"[hsm] has unknown settings: {', '.join(unknown)}.")
        values = {k: table.get(k, "") for k in fields}
        values["key_label"] = values["key_label"] or default_key_label
        for key, value in values.items():
            if not isinstance(value, str):
                raise ValueError(f"'{key}' in [hsm] must be a string.")
        settings = cls(**values)
        if not settings.key_label:
            raise ValueError("[hsm] needs 'key_label': the label of the master key's token key.")
        if not settings.module:
            raise ValueError("[hsm] needs 'module': the path of the token's PKCS#11 library.")
        if bool(settings.token_label) == bool(settings.token_serial):
            raise ValueError("[hsm] needs exactly one of 'token_label' and 'token_serial'.")
        if bool(settings.pin_file) == bool(settings.pin_keyring):
            raise ValueError("[hsm] needs exactly one of 'pin_file' and 'pin_keyring'.")
        if settings.holds not in ("", CLUSTER_MASTER_KEY):
            raise ValueError(f"'holds' in [hsm] can only be '{CLUSTER_MASTER_KEY}' (set by a join).")
        if settings.previous_key_label and not settings.holds_cluster_key:
            raise ValueError(
                f"'previous_key_label' in [hsm] goes only with holds = '{CLUSTER_MASTER_KEY}' (set by a "
                "master key rotation)."
            )
        return settings

    @property
    def holds_cluster_key(self) -> bool:
        return self.holds == CLUSTER_MASTER_KEY

    def to_toml(self) -> str:
        return "\n[hsm]\n" + "".join(f"{k} = {_toml_string(v)}\n" for k, v in self.__dict__.items() if v)

    @property
    def token_name(self) -> str:
        return f"token '{self.token_label}'" if self.token_label else f"token with serial {self.token_serial}"

    def read_pin(self) -> str:
        if self.pin_file:
            return read_pin_file(Path(self.pin_file))
        try:
            import keyring  # the gui extra's: a headless KMA may not have it
        except ImportError:
            raise HsmUnavailable(
                "pin_keyring needs the keyring package (pip install keyring); or give pin_file."
            ) from None
        try:
            pin = keyring.get_password(KEYRING_SERVICE, self.pin_keyring)
        except Exception as exc:  # any backend's failure: the message says which
            raise HsmUnavailable(f"The OS keyring cannot be read for the HSM PIN: {exc}") from None
        if not pin:
            raise HsmUnavailable(
                f"The OS keyring has no HSM PIN under service '{KEYRING_SERVICE}', name '{self.pin_keyring}'."
            )
        return pin


def write_hsm_table(identity_file: Path, settings: HsmSettings) -> None:
    """Replace the `[hsm]` table of kma.toml (`identity_file`) with `settings`, atomically: a first
    node's after its conversion, a token KMA's after it took a new master key generation up."""
    lines = identity_file.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.strip() == "[hsm]")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    text = "".join(lines[:start]).rstrip("\n") + "\n" + settings.to_toml() + "".join(lines[end:])
    tmp = identity_file.with_suffix(".toml.new")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(identity_file)


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def read_pin_file(path: Path) -> str:
    """The PIN in `path`, refused if the file is not this user's own or others can read it."""
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HsmUnavailable(f"Cannot read the HSM PIN file {path}: {exc}.") from None
    if os.name == "posix" and (info.st_mode & 0o077 or info.st_uid != os.geteuid()):
        raise HsmUnavailable(
            f"The HSM PIN file {path} ({stat.S_IMODE(info.st_mode):04o}) must belong to this user and be "
            f"readable by nobody else: chmod 600 {path}"
        )
    pin = text.strip()
    if not pin:
        raise HsmUnavailable(f"The HSM PIN file {path} is empty.")
    return pin
