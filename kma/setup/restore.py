"""Restore a KMA from a database backup and a core security backup, with the key split's quorum.

`restore` is the one engine behind `kma init` with `mode = "restore"` and QuickStart's restore page.
Everything is checked before anything reaches the target data directory: both files are read, their
cluster and schema compared, the quorum's passphrases open the core security backup's shares, and
the database is decrypted and checked in a staging folder beside the target. Only a restore that
passed every check is moved into place; a refused one leaves the target as it was.

The restored KMA is the KMA that made the backup (its ID and site), with a new TLS certificate from
the cluster CA (so agents enrolled before the backup trust it) and this machine's addresses: network
settings are not restored. Sessions are not restored either: everyone signs in again.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kma.backup.fileformat import (
    BadBackup,
    CoreSecurityBackup,
    DatabaseBackup,
    decrypt_database_backup,
    read_core_security_backup,
    read_database_backup,
)
from kma.clock import Clock
from kma.crypto import (
    BadPassphrase,
    CryptoError,
    WrappingKey,
    combine_shares,
    open_share,
)
from kma.crypto.generations import MasterKeys
from kma.crypto.hsm import HsmMasterKey, Token
from kma.crypto.hsm_settings import CLUSTER_MASTER_KEY, HsmSettings, HsmUnavailable
from kma.datadir import DataDir
from kma.errors import Conflict, KmaError, ValidationFailed
from kma.services.master_key.master_keys import generations_of
from kma.services.quorum.key_split import Credential
from kma.setup.restored_kma import Restored, set_up
from kma.steps import step
from kma.store.schema import latest_schema_version
from kma.vault import put_in_token, unwrap_master_with_root


@dataclass(frozen=True)
class RestoreAnswers:
    """What a restore is given: by `kma init --answers` or the set-up API (files uploaded there)."""

    database_backup: Path
    core_security_backup: Path
    credentials: tuple[Credential, ...]  # a quorum of the key split in force when the backup was taken
    management_address: str  # this machine's: network settings are not restored
    service_address: str
    autonomous_unlock: bool = True
    hsm: dict[str, Any] | None = None  # the [hsm] table: the token that holds the master key's token key


def restore(
    data_dir: DataDir,
    database_backup: Path,
    core_security_backup: Path,
    credentials: Sequence[Credential],
    *,
    management_address: str = "127.0.0.1:8443",
    service_address: str = "127.0.0.1:5696",
    autonomous_unlock: bool = True,
    clock: Clock | None = None,
    hsm: dict[str, Any] | None = None,
) -> Restored:
    """Make `data_dir` (new or empty) a KMA restored from the two backup files; refuses with a
    reason (`BadBackup`, `Conflict`) and leaves `data_dir` untouched otherwise."""
    root = data_dir.root
    if not data_dir.is_empty():
        raise Conflict(f"{root} is not empty; a restore needs a new or empty data directory.")
    backup, core = _check_the_backup_pair(database_backup, core_security_backup)
    plain = _open_the_master_key(core, credentials)
    master: WrappingKey = MasterKeys(plain, core.master_generation)
    core.check_seal(master)
    settings = token_for(core, hsm, autonomous_unlock)
    # A token that is to hold the cluster's master key receives it once everything else is checked;
    # a token that holds one of the two keys of a KMA of its own opens the backup's blobs.
    receiver = settings if settings is not None and settings.holds_cluster_key else None
    token = None if receiver else _open_token(settings)
    try:
        if token is not None:
            master = MasterKeys(HsmMasterKey(master.raw(), token, _token_key(token)), core.master_generation)
        key = core.backup_key(master, backup.backup_key_generation)
        staging = data_dir.staging("restore")
        try:
            stage = DataDir(staging)
            _decrypt_the_database(backup, key, stage)
            master = _master_generations(stage.db, plain, core.master_generation, master)
            restored = replace(
                set_up(
                    stage,
                    backup,
                    master,
                    (management_address, service_address),
                    autonomous_unlock,
                    (settings, core.hsm_key),
                    clock,
                ),
                master=master,
            )
            if receiver is not None:
                _put_in_token(receiver, master)
            data_dir.take_from(staging)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        if token is not None:
            token.close()
    return restored


@step("restore")
def _check_the_backup_pair(
    database_backup: Path, core_security_backup: Path
) -> tuple[DatabaseBackup, CoreSecurityBackup]:
    return check_pair(database_backup, core_security_backup)


@step("restore")
def _open_the_master_key(core: CoreSecurityBackup, credentials: Sequence[Credential]) -> WrappingKey:
    return open_master(core, credentials)


@step("restore")
def _decrypt_the_database(backup: DatabaseBackup, key: WrappingKey, stage: DataDir) -> None:
    decrypt_database_backup(backup, key, stage.db)
    _check_database(stage.db, backup)


def check_pair(
    database_backup: Path, core_security_backup: Path
) -> tuple[DatabaseBackup, CoreSecurityBackup]:
    """The two files read and found to belong together (one cluster, a schema this KMA knows): all a
    restore can check before the quorum types, so it is checked before they are asked to."""
    core = read_core_security_backup(core_security_backup)
    backup = read_database_backup(database_backup)
    if backup.cluster_fingerprint != core.cluster_fingerprint:
        raise BadBackup(
            f"The database backup is of cluster '{backup.manifest['cluster'].get('name', '?')}' (CA "
            f"{backup.cluster_fingerprint}), the core security backup of cluster "
            f"'{core.body['cluster'].get('name', '?')}' (CA {core.cluster_fingerprint}): they do not belong "
            "together."
        )
    if backup.schema_version > latest_schema_version():
        raise BadBackup(
            f"The database backup was made by a newer KMA (schema {backup.schema_version}; this one knows "
            f"up to {latest_schema_version()}). Restore it with that version or later."
        )
    return backup, core


def _open_token(settings: HsmSettings | None) -> Token | None:
    try:
        return Token(settings) if settings else None
    except HsmUnavailable as exc:
        raise BadBackup(f"{exc} The restore needs the token that holds the master key.") from None


def _put_in_token(settings: HsmSettings, master: WrappingKey) -> None:
    try:
        put_in_token(settings, master)
    except HsmUnavailable as exc:
        raise BadBackup(f"{exc} The restore needs a token to hold the cluster's master key.") from None


def _token_key(token: Token) -> object:
    try:
        return token.master_key()
    except HsmUnavailable as exc:
        raise BadBackup(f"{exc} The restore needs the token that holds the master key.") from None


def check_token(settings: HsmSettings | None) -> None:
    """Before the quorum types: the chosen token opens with its PIN, and holds the token key of a KMA
    of its own's backup (one that is to receive the cluster's master key gets it at the restore)."""
    token = _open_token(settings)
    if token is None:
        return
    try:
        if settings is not None and not settings.holds_cluster_key:
            _token_key(token)
    finally:
        token.close()


def token_for(
    core: CoreSecurityBackup, table: dict[str, Any] | None, autonomous_unlock: bool
) -> HsmSettings | None:
    """The restore's [hsm] table, checked against what the core security backup records of the token
    that held the master key (docs/backups.md#restore-with-an-hsm)."""
    recorded = core.hsm_key
    if recorded is None:
        if table is not None:
            raise BadBackup(
                "This backup's master key is in software, not in an HSM: restore it without an HSM."
            )
        return None
    holds = recorded.get("holds", "")
    where = f"{recorded.get('token', '?')}, key labelled '{recorded.get('key_label', '?')}'"
    if table is None:
        if holds == CLUSTER_MASTER_KEY:
            return None  # the key split escrows the cluster's master key: the quorum restores it to software
        raise BadBackup(
            f"This backup's master key is in an HSM ({where}) and cannot be restored onto software: its "
            "token key never leaves the token, and no backup or key split holds it. Choose the HSM that "
            "holds that key: its PKCS#11 module, token label and PIN file."
        )
    try:
        settings = HsmSettings.from_table(table, recorded.get("key_label", ""))
    except ValueError as exc:
        raise ValidationFailed(str(exc)) from None
    if holds == CLUSTER_MASTER_KEY and autonomous_unlock:
        raise ValidationFailed(
            "With the cluster's master key in the token, autonomous unlock would keep it on this "
            "machine's disk under the local unlock key: set autonomous_unlock = false (a quorum unlocks "
            "the restored KMA after each start)."
        )
    return replace(settings, holds=holds)  # what the backup's token held, whatever the table says


def open_master(core: CoreSecurityBackup, credentials: Sequence[Credential]) -> WrappingKey:
    """The master key, from M members' passphrases over the core security backup's sealed shares."""
    names = [c.member for c in credentials]
    if len(set(names)) != len(names):
        raise BadBackup("Each key split member counts once; a member was given more than once.")
    shares = core.sealed_shares
    if len(credentials) < core.threshold:
        raise BadBackup(
            f"This core security backup needs {core.threshold} key split members' passphrases "
            f"(of {', '.join(sorted(shares))}); {len(credentials)} given."
        )
    opened = []
    for credential in credentials:
        sealed = shares.get(credential.member)
        if sealed is None:
            raise BadBackup(
                f"'{credential.member[:64]}' is not a member of the key split in this core security backup "
                f"(its members: {', '.join(sorted(shares))})."
            )
        try:
            opened.append(open_share(sealed, credential.member, credential.passphrase))
        except BadPassphrase:
            raise BadBackup(
                f"The passphrase of key split member '{credential.member}' is wrong for this core "
                "security backup (it needs the passphrases in force when it was taken)."
            ) from None
        except CryptoError:
            raise BadBackup(
                f"The share of member '{credential.member}' in the core security backup is damaged."
            ) from None
    try:
        return unwrap_master_with_root(combine_shares(opened[: core.threshold]), core.master_wrapped_by_root)
    except (CryptoError, ValueError):
        raise BadBackup(
            "These passphrases do not rebuild the root secret of this core security backup (it was "
            "changed, or the threshold in it was altered)."
        ) from None


def _check_database(db: Path, backup: DatabaseBackup) -> None:
    """The decrypted file is byte for byte what was backed up (AES-GCM and the manifest's SHA-256
    say so); this checks that it is a KMA store of the schema its manifest names."""
    conn = sqlite3.connect(db)
    try:
        version = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
    except sqlite3.DatabaseError:
        version = None
    finally:
        conn.close()
    if version != backup.schema_version:
        raise BadBackup("The database inside the backup is not a sound KMA store.")


def _master_generations(db: Path, plain: WrappingKey, generation: int, opened: WrappingKey) -> WrappingKey:
    """The master key generations that open the database (`opened`, what the core security backup
    opened, unless a rotation was under way in it); refused if the core security backup holds another
    generation than the database's (a rotation came between the two backups)."""
    conn = sqlite3.connect(db)
    try:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(cluster)")}
        newest = (
            conn.execute("SELECT master_generation FROM cluster").fetchone()[0]
            if "master_generation" in columns
            else 1
        )
        old = (
            conn.execute(
                "SELECT key_wrapped, next_wrapped FROM master_key_generations WHERE generation = ?",
                (newest - 1,),
            ).fetchone()
            if "master_generation" in columns
            else None
        )
    finally:
        conn.close()
    if newest != generation:
        raise BadBackup(
            f"This database backup holds keys under master key generation {newest}; this core "
            f"security backup "
            f"holds generation {generation} (a master key rotation came between them) and "
            f"does not open them. "
            f"Use a core security backup taken under generation {newest}: "
            + ("one taken before the rotation." if newest < generation else "one taken after the rotation.")
        )
    if old is None:
        return opened
    if isinstance(opened, MasterKeys) and isinstance(opened.current, HsmMasterKey):
        raise BadBackup(
            "This database backup was taken during a master key rotation of a KMA with an HSM: restore one "
            "taken after the rotation ended."
        )
    try:
        return generations_of(plain, generation, newest, (bytes(old[0]), bytes(old[1])))
    except KmaError as exc:
        raise BadBackup(exc.message) from None


def read_restore_answers(data: dict[str, Any], base: Path) -> RestoreAnswers:
    """`kma init --answers F` with `mode = "restore"` (README): the two files (relative to the
    answers file's folder), this machine's addresses, and the key split members' passphrases."""
    kma = data.get("kma", {})
    split = data.get("key_split", {})
    members = split.get("members") if isinstance(split, dict) else None
    if (
        not isinstance(kma, dict)
        or not isinstance(members, list)
        or not all(isinstance(m, dict) for m in members)
    ):
        raise ValidationFailed(
            "A restore's answers need [[key_split.members]] entries (name, passphrase) of a quorum."
        )
    files = {}
    for name in ("database_backup", "core_security_backup"):
        value = data.get(name)
        if not isinstance(value, str) or not value:
            raise ValidationFailed(f'A restore\'s answers need {name} = "PATH".')
        files[name] = (base / value).expanduser()
    unlock = data.get("autonomous_unlock", True)
    if not isinstance(unlock, bool):
        raise ValidationFailed("autonomous_unlock must be true or false.")
    hsm = data.get("hsm")
    if hsm is not None and not isinstance(hsm, dict):
        raise ValidationFailed("[hsm] in the answers file must be a table.")
    return RestoreAnswers(
        files["database_backup"],
        files["core_security_backup"],
        tuple(Credential(str(m.get("name", "")), str(m.get("passphrase", ""))) for m in members),
        management_address=str(kma.get("management_address", "127.0.0.1:8443")),
        service_address=str(kma.get("service_address", "127.0.0.1:5696")),
        autonomous_unlock=unlock,
        hsm=hsm,
    )


def restore_with(data_dir: DataDir, answers: RestoreAnswers) -> Restored:
    return restore(
        data_dir,
        answers.database_backup,
        answers.core_security_backup,
        answers.credentials,
        management_address=answers.management_address,
        service_address=answers.service_address,
        autonomous_unlock=answers.autonomous_unlock,
        hsm=answers.hsm,
    )
