"""The two backup files (docs/backups.md): a database backup and the core security backup.

A **database backup** is ``MAGIC | u32 manifest length | manifest (JSON) | ciphertext | tag``: the
store's SQLite file encrypted with AES-256-GCM under a random data key, with the magic, length and
manifest as associated data, so a changed byte anywhere, or a truncated file, fails to open. The
manifest is readable without any key (cluster, KMA, time, schema version, counts, hashes) so a
restore can refuse another cluster's or a newer schema's backup before asking for passphrases. The
data key travels in the manifest wrapped under the *backup key* of the key split generation in
force: generation 1's is derived from the master key; each key split change makes a new random one
(table `backup_keys`, wrapped under the master key). So a core security backup taken before a key
split change, which knows only the backup keys up to its own generation, opens no database backup
taken after it.

The **core security backup** is JSON: the key split's sealed shares (each under its member's
passphrase), its threshold and generation, the master key wrapped under the root secret those
shares rebuild, and the backup keys of its generation and before, wrapped under the master key. A
seal over all of it, under a key derived from the master key, shows after the quorum has opened it
that nothing in it was changed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from kma.crypto import WrappingKey
from kma.crypto.errors import IntegrityError
from kma.errors import ValidationFailed
from kma.pacing import SYNC_STEP, Pace, settle

DATABASE_MAGIC = b"KMA-DATABASE-BACKUP\n"
CORE_FORMAT = "kma-core-security-backup"
FORMAT_VERSION = 2  # 2: database backups name their backup key's generation; cores carry backup keys
DATABASE_SUFFIX = ".kmabackup"
CORE_SUFFIX = ".kmacore"
_LENGTH = struct.Struct(">I")
_MAX_MANIFEST = 1 << 20
_NONCE_SIZE = 12
_TAG_SIZE = 16
_CHUNK = 1 << 20


class BadBackup(ValidationFailed):
    """A file that is not a backup, is damaged or changed, or does not fit: the restore refuses it."""


FIRST_GENERATION = 1
# The purposes of the keys derived from the master key's bytes (WrappingKey.derive): generation 1's
# backup key, and the key of the core security backup's seal.
DATABASE_BACKUP = "database-backup"
CORE_SEAL = "core-security-backup"


def backup_key_context(generation: int) -> str:
    return f"database-backup-key:{generation}"


def open_backup_key(master: WrappingKey, generation: int, wrapped: bytes | None) -> WrappingKey:
    """The key that wraps the data key of each database backup taken under key split `generation`:
    derived from the master key for the first split, made by the change for every later one
    (`wrapped` under the master key)."""
    if generation == FIRST_GENERATION and wrapped is None:
        return master.derive(DATABASE_BACKUP)  # kept under the master key from its first rotation on
    if wrapped is None:
        raise BadBackup(f"There is no backup key of key split generation {generation}.")
    return WrappingKey(master.unwrap(backup_key_context(generation), wrapped))


def _seal_key(master: WrappingKey) -> WrappingKey:
    return master.derive(CORE_SEAL)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(text), validate=True)
    except ValueError:
        raise BadBackup(f"{what} is not valid base64: the file is damaged.") from None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _canonical(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")


# --- database backup ----------------------------------------------------------------------
def write_database_backup(
    plain_db: Path, out: Path, manifest: dict[str, Any], key: WrappingKey, key_generation: int
) -> tuple[dict[str, Any], str]:
    """Encrypt the SQLite file `plain_db` into `out`; returns the manifest as written and the
    SHA-256 of the whole file (hashed as it is written, not read back).

    `manifest` says what the backup is (id, cluster, KMA, time, schema, counts); this adds the
    plaintext's size and SHA-256 and the encryption fields. `key`: the backup key of
    `key_generation` (`open_backup_key`).
    """
    data_key = os.urandom(32)
    nonce = os.urandom(_NONCE_SIZE)
    pace = Pace()
    digest = hashlib.sha256()
    with plain_db.open("rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
            pace.rest()
    full = {
        **manifest,
        "format": FORMAT_VERSION,
        "database": {"size": plain_db.stat().st_size, "sha256": digest.hexdigest()},
        "encryption": {
            "algorithm": "AES-256-GCM",
            "nonce": _b64(nonce),
            "backup_key_generation": key_generation,
            "data_key_wrapped": _b64(key.wrap(_data_key_context(manifest), data_key)),
        },
    }
    header = _header(full)
    encryptor = Cipher(algorithms.AES(data_key), modes.GCM(nonce)).encryptor()
    encryptor.authenticate_additional_data(header)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    written = hashlib.sha256()
    synced = 0

    def write(data: bytes) -> None:
        nonlocal synced
        written.update(data)
        _write_all(fd, data)
        position = os.lseek(fd, 0, os.SEEK_CUR)
        if position - synced >= SYNC_STEP:
            settle(fd, synced, position)
            synced = position

    try:
        with plain_db.open("rb") as source:
            write(header)
            for chunk in iter(lambda: source.read(_CHUNK), b""):
                write(encryptor.update(chunk))
                pace.rest()
            write(encryptor.finalize())
            write(encryptor.tag)
        settle(fd, synced, os.lseek(fd, 0, os.SEEK_CUR))
        os.fsync(fd)
    finally:
        os.close(fd)
    return full, written.hexdigest()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _data_key_context(manifest: Mapping[str, Any]) -> str:
    return f"database-backup:{manifest['cluster']['ca_fingerprint']}:{manifest['backup_id']}"


def _header(manifest: Mapping[str, Any]) -> bytes:
    body = _canonical(manifest)
    return DATABASE_MAGIC + _LENGTH.pack(len(body)) + body


@dataclass(frozen=True)
class DatabaseBackup:
    """A database backup file whose manifest has been read (nothing decrypted yet)."""

    path: Path
    manifest: dict[str, Any]
    header_size: int

    @property
    def cluster_fingerprint(self) -> str:
        return str(self.manifest["cluster"]["ca_fingerprint"])

    @property
    def schema_version(self) -> int:
        return int(self.manifest["schema_version"])

    @property
    def backup_key_generation(self) -> int:
        """Backups of format 1 name none: they are all of the first generation's key."""
        return int(self.manifest["encryption"].get("backup_key_generation", FIRST_GENERATION))


def read_database_backup(path: Path) -> DatabaseBackup:
    """The manifest of a database backup; refuses a file that is not one, or is cut short."""
    try:
        with path.open("rb") as f:
            magic = f.read(len(DATABASE_MAGIC))
            if magic != DATABASE_MAGIC:
                raise BadBackup(f"{path.name} is not a KMA database backup.")
            raw_length = f.read(_LENGTH.size)
            (length,) = _LENGTH.unpack(raw_length) if len(raw_length) == _LENGTH.size else (-1,)
            body = f.read(length) if 0 < length <= _MAX_MANIFEST else b""
            size = path.stat().st_size
    except OSError as exc:
        raise BadBackup(f"Cannot read the database backup {path}: {exc.strerror}.") from None
    if len(body) != length:
        raise BadBackup(f"The database backup {path.name} is truncated (its manifest is incomplete).")
    try:
        manifest = json.loads(body)
        expected = len(DATABASE_MAGIC) + _LENGTH.size + length + int(manifest["database"]["size"]) + _TAG_SIZE
        str(manifest["cluster"]["ca_fingerprint"]), int(manifest["schema_version"])
        int(manifest["encryption"].get("backup_key_generation", FIRST_GENERATION))
    except (ValueError, KeyError, TypeError):
        raise BadBackup(f"The manifest of the database backup {path.name} is damaged.") from None
    if size != expected:
        raise BadBackup(
            f"The database backup {path.name} is {size} bytes, not the {expected} its manifest "
            "says: it is truncated or damaged."
        )
    return DatabaseBackup(path, manifest, len(DATABASE_MAGIC) + _LENGTH.size + length)


def decrypt_database_backup(backup: DatabaseBackup, key: WrappingKey, out: Path) -> None:
    """Decrypt into `out` (a new file) with the backup key of its generation; raises BadBackup,
    removing `out`, on any mismatch."""
    manifest = backup.manifest
    try:
        data_key = key.unwrap(
            _data_key_context(manifest), _unb64(manifest["encryption"]["data_key_wrapped"], "The data key")
        )
    except IntegrityError:
        raise BadBackup(
            "This core security backup does not open this database backup (they are of different "
            "clusters, or the database backup was changed)."
        ) from None
    nonce = _unb64(manifest["encryption"]["nonce"], "The nonce")
    size = int(manifest["database"]["size"])
    digest = hashlib.sha256()
    decryptor = Cipher(algorithms.AES(data_key), modes.GCM(nonce)).decryptor()
    decryptor.authenticate_additional_data(_header(manifest))
    try:
        with backup.path.open("rb") as source, out.open("xb") as sink:
            source.seek(backup.header_size)
            for chunk in _chunks(source, size):
                plain = decryptor.update(chunk)
                digest.update(plain)
                sink.write(plain)
            tag = source.read(_TAG_SIZE)
            try:
                sink.write(decryptor.finalize_with_tag(tag))
            except (InvalidTag, ValueError):
                raise BadBackup(
                    f"The database backup {backup.path.name} fails authentication: it was changed or "
                    "damaged after it was made."
                ) from None
        if digest.hexdigest() != manifest["database"]["sha256"]:
            raise BadBackup(f"The database in {backup.path.name} does not match its manifest's SHA-256.")
    except BaseException:
        out.unlink(missing_ok=True)
        raise


def _chunks(source: BinaryIO, size: int) -> Iterator[bytes]:
    left = size
    while left > 0:
        chunk = source.read(min(_CHUNK, left))
        if not chunk:
            raise BadBackup("The database backup is truncated.")
        left -= len(chunk)
        yield chunk


# --- core security backup -----------------------------------------------------------------
def core_security_backup(
    *,
    cluster: Mapping[str, str],
    kma_id: str,
    created_at: int,
    threshold: int,
    generation: int,
    sealed_shares: Mapping[str, str],
    master_wrapped_by_root: bytes,
    backup_keys: Mapping[int, bytes],
    master: WrappingKey,
    hsm_key: Mapping[str, str] | None = None,
    master_generation: int = FIRST_GENERATION,
) -> bytes:
    """The core security backup file's bytes (JSON, sealed under a master-derived key).
    `backup_keys`: every key split change's backup key so far, wrapped under the master key.
    `hsm_key`: with the master key in an HSM, its token and key label (a restore needs that token)."""
    body = {
        "format": CORE_FORMAT,
        "version": FORMAT_VERSION,
        "cluster": dict(cluster),
        "kma_id": kma_id,
        "created_at": created_at,
        "key_split": {"threshold": threshold, "generation": generation, "members": dict(sealed_shares)},
        "master_wrapped_by_root": _b64(master_wrapped_by_root),
        **({"master_generation": master_generation} if master_generation != FIRST_GENERATION else {}),
        "backup_keys": {
            str(generation): _b64(wrapped) for generation, wrapped in sorted(backup_keys.items())
        },
        **({"hsm_key": dict(hsm_key)} if hsm_key else {}),
    }
    seal = _seal_key(master).wrap(CORE_FORMAT, hashlib.sha256(_canonical(body)).digest())
    return json.dumps({**body, "seal": _b64(seal)}, indent=2, sort_keys=True).encode("utf-8") + b"\n"


@dataclass(frozen=True)
class CoreSecurityBackup:
    body: dict[str, Any]
    seal: bytes

    @property
    def cluster_fingerprint(self) -> str:
        return str(self.body["cluster"]["ca_fingerprint"])

    @property
    def threshold(self) -> int:
        return int(self.body["key_split"]["threshold"])

    @property
    def sealed_shares(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.body["key_split"]["members"].items()}

    @property
    def generation(self) -> int:
        return int(self.body["key_split"]["generation"])

    @property
    def hsm_key(self) -> dict[str, str] | None:
        """The token and label of the master key's token key, when it is in an HSM."""
        found = self.body.get("hsm_key")
        return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else None

    @property
    def master_generation(self) -> int:
        """The master key generation it holds (1 for files from before master key rotations)."""
        return int(self.body.get("master_generation", FIRST_GENERATION))

    @property
    def master_wrapped_by_root(self) -> bytes:
        return _unb64(self.body["master_wrapped_by_root"], "The wrapped master key")

    def backup_key(self, master: WrappingKey, generation: int) -> WrappingKey:
        """The backup key of a database backup taken under key split `generation`, if this core
        security backup knows it: it does not know those made after it was taken."""
        wrapped = self.body.get("backup_keys", {}).get(str(generation))
        if generation != FIRST_GENERATION and wrapped is None:
            raise BadBackup(
                f"This database backup was taken after a key split change or a master key "
                f"rotation (key split "
                f"generation {generation}); this core security backup was taken before it (generation "
                f"{self.generation}) and does not open it. Use a core security backup taken since that "
                "change, with its key split's passphrases."
            )
        try:
            return open_backup_key(
                master, generation, None if wrapped is None else _unb64(wrapped, "A backup key")
            )
        except IntegrityError:
            raise BadBackup("A backup key in the core security backup is damaged.") from None

    def check_seal(self, master: WrappingKey) -> None:
        """After the quorum opened the master key: refuse a file changed since it was made."""
        try:
            sealed_digest = _seal_key(master).unwrap(CORE_FORMAT, self.seal)
        except IntegrityError:
            sealed_digest = b""
        if sealed_digest != hashlib.sha256(_canonical(self.body)).digest():
            raise BadBackup("The core security backup was changed after it was made.")


def read_core_security_backup(path: Path) -> CoreSecurityBackup:
    try:
        data = json.loads(path.read_bytes())
        if data.get("format") != CORE_FORMAT:
            raise ValueError
        seal = data.pop("seal")
        core = CoreSecurityBackup(data, _unb64(seal, "The seal"))
        core.cluster_fingerprint, core.threshold, core.sealed_shares  # noqa: B018  the fields it needs
    except OSError as exc:
        raise BadBackup(f"Cannot read the core security backup {path}: {exc.strerror}.") from None
    except (ValueError, KeyError, TypeError, AttributeError):
        raise BadBackup(f"{path.name} is not a KMA core security backup, or it is damaged.") from None
    if int(data.get("version", 0)) > FORMAT_VERSION:
        raise BadBackup(f"{path.name} was made by a newer KMA (format {data['version']}).")
    return core
