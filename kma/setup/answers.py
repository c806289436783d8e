"""The answers of a new cluster's set-up (QuickStart): read from an answers file (`kma init
--answers`), the terminal's questions or the wizard, and checked, each refusal with its reason,
before anything is made (kma/setup/new_cluster.py makes it)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kma.crypto.hsm_settings import HsmSettings
from kma.domain.roles import Role
from kma.domain.strength import check_user_passphrase
from kma.domain.validation import check_id, check_passphrase, check_text
from kma.errors import ValidationFailed
from kma.services.quorum.key_split import check_split_members
from kma.services.sign_in.second_factor_policy import check_roles as check_second_factor_roles

DEFAULT_POOL = 1000
MAX_POOL = 100_000


@dataclass(frozen=True)
class SplitMember:
    name: str
    passphrase: str


@dataclass(frozen=True)
class Answers:
    cluster_name: str
    site_id: str
    site_name: str
    kma_id: str
    kma_name: str
    management_address: str
    service_address: str
    officer_id: str
    officer_name: str
    officer_passphrase: str
    threshold: int
    members: tuple[SplitMember, ...]
    autonomous_unlock: bool = True
    key_pool_size: int = DEFAULT_POOL
    mode: str = "new_cluster"  # kma/setup/service.py MODES: what this set-up does
    hsm: HsmSettings | None = None  # the master key in a PKCS#11 token; None: in software
    # The roles that must sign in with a second factor (docs/directory.md); () for none.
    second_factor_roles: tuple[str, ...] = (str(Role.SECURITY_OFFICER),)


# The KMA keeps no clock of its own: the machine's, which its NTP client keeps right, is the time of
# every key state and audit event. An answer that only looked like it configured time is refused.
NO_TIME_SERVER = (
    "time_server is not a setting: the KMA uses its machine's clock. Keep that clock right with the "
    "machine's NTP client (systemd-timesyncd or chrony) and remove time_server from the answers."
)


def check_key_split(threshold: Any, members: tuple[SplitMember, ...]) -> None:
    """The rules of a key split configuration, each refusal with its reason."""
    check_split_members(threshold, [m.name for m in members])
    for member in members:
        if not member.passphrase:
            raise ValidationFailed(f"Key split member '{member.name}' has an empty passphrase.")
        check_passphrase(member.passphrase, f"The passphrase of key split member '{member.name}'")


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name)
    if not isinstance(value, dict):
        raise ValidationFailed(f"The answers file needs a [{name}] table.")
    return value


def _str(table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise ValidationFailed(f"'{key}' in {where} must be a string.")
    return value


def parse_answers(text: str) -> Answers:
    answers = read_answers(text)
    check_answers(answers)
    return answers


def read_answers(text: str) -> Answers:
    """The answers as written, passphrases possibly left out (`kma init` then asks for them)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValidationFailed(f"The answers file is not valid TOML: {exc}.") from None
    site, kma, officer, split = (_table(data, n) for n in ("site", "kma", "security_officer", "key_split"))
    raw_members = split.get("members")
    if not isinstance(raw_members, list) or not all(isinstance(m, dict) for m in raw_members):
        raise ValidationFailed(
            "[key_split] needs [[key_split.members]] entries with a name and a passphrase."
        )
    what = "a key split member"
    members = tuple(SplitMember(_str(m, "name", what), _str(m, "passphrase", what, "")) for m in raw_members)
    pool = data.get("key_pool_size", DEFAULT_POOL)
    unlock = data.get("autonomous_unlock", True)
    if not isinstance(unlock, bool):
        raise ValidationFailed("autonomous_unlock must be true or false.")
    if "time_server" in data:
        raise ValidationFailed(NO_TIME_SERVER)
    two_step = data.get("second_factor_roles", [str(Role.SECURITY_OFFICER)])
    if not isinstance(two_step, list) or not all(isinstance(r, str) for r in two_step):
        raise ValidationFailed(
            'second_factor_roles must be a list of role names, e.g. ["security_officer"], or [] for none.'
        )
    answers = Answers(
        cluster_name=_str(data, "cluster_name", "the answers file"),
        site_id=_str(site, "id", "[site]"),
        site_name=_str(site, "name", "[site]", _str(site, "id", "[site]")),
        kma_id=_str(kma, "id", "[kma]"),
        kma_name=_str(kma, "name", "[kma]", _str(kma, "id", "[kma]")),
        management_address=_str(kma, "management_address", "[kma]", "127.0.0.1:8443"),
        service_address=_str(kma, "service_address", "[kma]", "127.0.0.1:5696"),
        officer_id=_str(officer, "id", "[security_officer]"),
        officer_name=_str(officer, "name", "[security_officer]", _str(officer, "id", "[security_officer]")),
        officer_passphrase=_str(officer, "passphrase", "[security_officer]", ""),
        threshold=split.get("threshold"),  # type: ignore[arg-type]  # check_answers checks it
        members=members,
        autonomous_unlock=unlock,
        key_pool_size=pool,  # check_settings checks it
        mode=_str(data, "mode", "the answers file", "new_cluster"),
        hsm=read_hsm(data.get("hsm"), _str(kma, "id", "[kma]")),
        second_factor_roles=tuple(two_step),
    )
    return answers


def read_hsm(table: Any, kma_id: str) -> HsmSettings | None:
    """The answers' `[hsm]` table (module, token_label or token_serial, pin_file or pin_keyring,
    optional key_label), or None for the software backend."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ValidationFailed("[hsm] in the answers file must be a table.")
    try:
        return HsmSettings.from_table(table, f"kma-master-{kma_id}")
    except ValueError as exc:
        raise ValidationFailed(str(exc)) from None


def _check_address(address: str, what: str) -> None:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValidationFailed(f"{what} must be HOST:PORT, not '{address}'.")


def check_answers(a: Answers) -> None:
    check_settings(a)
    check_key_split(a.threshold, a.members)


def check_settings(a: Answers) -> None:
    """Everything but the key split members' passphrases (a proven draft holds those sealed)."""
    check_text(a.cluster_name, "The cluster name", required=True)
    check_id(a.site_id, "The site ID")
    check_text(a.site_name, "The site name", required=True)
    check_id(a.kma_id, "The KMA ID")
    check_text(a.kma_name, "The KMA name", required=True)
    _check_address(a.management_address, "The management address")
    _check_address(a.service_address, "The service address")
    check_id(a.officer_id, "The Security Officer's user ID")
    check_text(a.officer_name, "The Security Officer's name", required=True)
    check_user_passphrase(
        a.officer_passphrase, a.officer_id, a.officer_name, "The Security Officer's passphrase"
    )
    check_split_members(a.threshold, [m.name for m in a.members])
    check_second_factor_roles(a.second_factor_roles)
    pool = a.key_pool_size
    if not isinstance(pool, int) or isinstance(pool, bool) or not 0 <= pool <= MAX_POOL:
        raise ValidationFailed(f"key_pool_size must be a whole number from 0 to {MAX_POOL:,}, not {pool!r}.")


def answers_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationFailed(f"Cannot read the answers file {path}: {exc}.") from None


def load_answers(path: Path) -> Answers:
    """The answers file as written (`read_answers`): check them with `check_answers`."""
    return read_answers(answers_text(path))
