"""Secrets go to the OS keyring or nowhere.

Only a session token (for "remember me") and, in local mode, the demo admin passphrase are ever
kept, and only in a keyring backend that really protects them. ``keyring`` falls back to backends
that refuse (``fail``), drop (``null``) or write plain files (``keyrings.alt`` plaintext); with
those we store nothing and say why, rather than leaving a secret in a file (Vorta's plaintext
fallback is the counter-example).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import keyring
import keyring.errors

log = logging.getLogger(__name__)

SERVICE = "kms-manager"

_INSECURE_MODULES = {
    "keyring.backends.fail": "no OS keyring is available (keyring found no backend)",
    "keyring.backends.null": "the keyring is disabled (null backend)",
    "keyrings.alt.file": "the only keyring writes secrets to a plain file",
}


@dataclass(frozen=True)
class KeyringStatus:
    secure: bool
    backend: str
    reason: str  # why a secret cannot be kept, or where it goes


def _backend_problem(backend: object) -> str | None:
    module = type(backend).__module__
    name = type(backend).__name__
    if module in _INSECURE_MODULES:
        return _INSECURE_MODULES[module]
    if "plaintext" in name.lower() or module.startswith("keyrings.alt"):
        return "the only keyring writes secrets to a file without OS protection"
    children = getattr(backend, "backends", None)
    if module == "keyring.backends.chainer":
        if not children:
            return "no OS keyring is available"
        for child in children:
            problem = _backend_problem(child)
            if problem:
                return problem
    return None


def keyring_status() -> KeyringStatus:
    """Whether the active keyring backend may hold a secret, and a sentence saying why not."""
    try:
        backend = keyring.get_keyring()
    except Exception as exc:  # noqa: BLE001 - a broken keyring must not stop sign-in
        return KeyringStatus(False, "unavailable", f"the OS keyring cannot be opened ({exc})")
    label = f"{type(backend).__module__}.{type(backend).__name__}"
    problem = _backend_problem(backend)
    if problem:
        return KeyringStatus(False, label, problem)
    return KeyringStatus(True, label, f"stored in the OS keyring ({type(backend).__name__})")


def store(account: str, secret: str) -> bool:
    """Keep ``secret`` in the keyring; False (and nothing written) if the backend is not secure."""
    if not keyring_status().secure:
        return False
    try:
        keyring.set_password(SERVICE, account, secret)
    except keyring.errors.KeyringError as exc:
        log.warning("could not store a secret in the keyring: %s", exc)
        return False
    return True


def load(account: str) -> str | None:
    if not keyring_status().secure:
        return None
    try:
        return keyring.get_password(SERVICE, account)
    except keyring.errors.KeyringError as exc:
        log.warning("could not read the keyring: %s", exc)
        return None


def forget(account: str) -> None:
    if not keyring_status().secure:
        return
    try:
        keyring.delete_password(SERVICE, account)
    except keyring.errors.PasswordDeleteError:
        pass
    except keyring.errors.KeyringError as exc:
        log.warning("could not delete a secret from the keyring: %s", exc)


def token_account(profile_key: str, user_id: str) -> str:
    return f"session:{profile_key}:{user_id}"


LOCAL_ADMIN_ACCOUNT = "local-kma:admin-passphrase"
