"""Transfer files uploaded as a request of their own (docs/transfer.md, "Uploads").

An import's file used to come inside the JSON of its request, which the KMA held whole while it
received it (a 100,000-unit file of 44 MiB: +153 MiB of memory for the import, +194 MiB for its
preview). Now it goes up first as the streamed body of `POST /transfer-uploads`: each part of
`PART` bytes is written to the store as it arrives (each its own transaction) and hashed as it
goes, and the answer is the upload's ID and SHA-256. The preview, the import, the import job and
an import submitted for its quorum name the upload; the key split credentials travel in that
small JSON request, never with the file.

The bytes are in the store (`transfer_upload_parts`, migration 0110), replicated on a cluster as
any row, because the job that reads them may run on another KMA of the cluster. An upload belongs
to the user who sent it (nobody else's request may use it), is at most `MAX_UPLOAD` (a larger one
is refused while it arrives, and what came of it is removed), is kept `KEEP_S` if nothing uses it,
and is removed once an import (or a quorum submission, or an import job, which keep their own copy)
took it. A preview leaves it, so that the import follows with the same upload.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

from kma.appliance import Appliance
from kma.crypto.transfer_stream import Source
from kma.domain.actor import Actor
from kma.errors import Conflict, NotFound, PayloadTooLarge, ValidationFailed
from kma.services.transfer import held_parts
from kma.store import Batch, Stmt

PART = 256 * 1024  # bytes per row (a job's file has the same parts: transfer_jobs.PART)
KEEP_S = 3600  # an upload nothing used is kept this long
MAX_UPLOAD = 256 * 2**20  # a transfer file of 100,000 data units is about 44 MiB
# Tests make the limit small, to see a streamed upload refused without sending 256 MiB.
MAX_UPLOAD_FOR_TESTS = "KMA_TEST_TRANSFER_UPLOAD_MAX"


def most() -> int:
    """The largest upload this KMA takes, in bytes."""
    return int(os.environ.get(MAX_UPLOAD_FOR_TESTS) or MAX_UPLOAD)


def too_large_message(limit: int) -> str:
    return (
        f"A transfer file is at most {limit / 2**20:g} MiB and this upload is larger: nothing of it was "
        "kept. Ask the partner for smaller files (by volser range)."
    )


@dataclass(frozen=True)
class TransferUploadRow:
    """An upload that arrived whole; the API's `TransferUpload` reads it."""

    id: str
    size: int  # bytes
    sha256: str  # of the whole file, hex
    expires_at: int  # refused and removed after this, unless used before


class Receiving:
    """An upload as it arrives: `add` the body's pieces (it answers the parts ready to write),
    `write` each part (a store write: call it off the event loop), then `close`; `discard` after
    any failure removes what was written."""

    def __init__(self, kma: Appliance, actor: Actor) -> None:
        self.kma, self.limit = kma, most()
        self.id = secrets.token_hex(16)
        self.size, self.parts, self.hashed = 0, 0, hashlib.sha256()
        self._buffer = bytearray()
        now = kma.clock.now()
        kma.store.write(
            Batch(
                [
                    # uploads nobody used: removed with their parts (a trigger)
                    Stmt("DELETE FROM transfer_uploads WHERE expires_at < ?", (now,)),
                    Stmt(
                        "INSERT INTO transfer_uploads (id, owner, kma_id, created_at, expires_at) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (self.id, actor.entity_id, kma.kma_id, now, now + KEEP_S),
                    ),
                ]
            )
        )

    def add(self, data: bytes) -> Iterator[bytes]:
        """The parts now complete; refused (413) once the upload passes the limit."""
        self.size += len(data)
        if self.size > self.limit:
            raise PayloadTooLarge(too_large_message(self.limit))
        self.hashed.update(data)
        self._buffer += data
        while len(self._buffer) >= PART:
            part = bytes(self._buffer[:PART])
            del self._buffer[:PART]
            yield part

    def write(self, part: bytes) -> None:
        sql = "INSERT INTO transfer_upload_parts (upload_id, part, content) VALUES (?, ?, ?)"
        self.kma.store.write(Batch([Stmt(sql, (self.id, self.parts, part))]))
        self.parts += 1

    def close(self) -> TransferUploadRow:
        """The rest written and the upload marked whole: from now on it may be used."""
        if self._buffer:
            self.write(bytes(self._buffer))
            self._buffer.clear()
        if not self.size:
            raise ValidationFailed("The upload is empty: send the transfer file as the request's body.")
        sha = self.hashed.hexdigest()
        self.kma.store.write(
            Batch(
                [
                    Stmt(
                        "UPDATE transfer_uploads SET size = ?, sha256 = ? WHERE id = ?",
                        (self.size, sha, self.id),
                    )
                ]
            )
        )
        return TransferUploadRow(self.id, self.size, sha, self._expires())

    def _expires(self) -> int:
        return int(self.kma.store.scalar("SELECT expires_at FROM transfer_uploads WHERE id = ?", (self.id,)))

    def discard(self) -> None:
        remove(self.kma, self.id)


def usable(kma: Appliance, actor: Actor, upload_id: str) -> TransferUploadRow:
    """The actor's own upload, arrived whole and not expired; else a refusal saying what to do (an
    expired one is removed)."""
    row = kma.store.query_one(
        "SELECT id, owner, size, sha256, expires_at FROM transfer_uploads WHERE id = ?", (upload_id,)
    )
    if row is None or row["owner"] != actor.entity_id:
        raise NotFound(
            f"There is no transfer upload '{upload_id[:64]}' of yours: upload the file first (POST "
            f"/transfer-uploads, the file as the request's body) and name the upload_id it answers; an "
            f"upload is kept {KEEP_S // 60} minutes and is used once."
        )
    if row["expires_at"] <= kma.clock.now():
        remove(kma, upload_id)
        raise Conflict(
            f"Transfer upload {upload_id} expired ({KEEP_S // 60} minutes after it was sent, unused): "
            "upload the file again."
        )
    if row["sha256"] is None:
        raise Conflict(f"Transfer upload {upload_id} has not arrived whole: upload the file again.")
    return TransferUploadRow(row["id"], row["size"], row["sha256"], row["expires_at"])


def source(kma: Appliance, upload_id: str) -> Source:
    """The upload's bytes, read from the store a part at a time, from the start at each call."""
    return held_parts.held(kma, "transfer_upload_parts", "upload_id", upload_id)


def parts_of(kma: Appliance, upload_id: str) -> int:
    return int(
        kma.store.scalar("SELECT count(*) FROM transfer_upload_parts WHERE upload_id = ?", (upload_id,)) or 0
    )


def copied(upload_id: str, part: int, table: str, owner: str, key: str) -> Stmt:
    """One part of the upload copied, inside the store, to where a job or a quorum operation holds
    its file (`table`'s `owner` column `key`): the bytes never pass through the KMA's memory."""
    return Stmt(
        f"INSERT INTO {table} ({owner}, part, content) SELECT ?, part, content FROM transfer_upload_parts "
        "WHERE upload_id = ? AND part = ?",
        (key, upload_id, part),
        expect=1,
        refusal=f"transfer upload {upload_id} was removed meanwhile",
    )


def removed(upload_id: str) -> Stmt:
    return Stmt("DELETE FROM transfer_uploads WHERE id = ?", (upload_id,))


def remove(kma: Appliance, upload_id: str) -> None:
    """The upload and its parts (a trigger), once used or refused."""
    kma.store.write(Batch([removed(upload_id)]))
