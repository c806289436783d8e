"""Transfer partners for tests: a partner cluster's identity held by the test itself (to write a
file as a partner, or a stranger, would) and the quorum registration both sides go through."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kma.crypto.transfer import Identity, identity_text, parse_identity
from kms_client import KmsClient
from kms_client.wire import TransferPartner
from tests.support.kma_process import RunningKma


def quorum(kma: RunningKma) -> list[tuple[str, str]]:
    """The demo's first M key split members' credentials."""
    split = kma.demo["key_split"]
    return [(m["name"], m["passphrase"]) for m in split["members"][: split["threshold"]]]


def register(so: KmsClient, kma: RunningKma, partner_id: str, identity: str) -> TransferPartner:
    """A partner registered at once, with a quorum's credentials."""
    registered = so.register_transfer_partner(
        partner_id, f"Partner {partner_id}", identity, credentials=quorum(kma)
    )
    assert isinstance(registered, TransferPartner), registered
    return registered


def file_from(
    sender: Identity, recipient_identity: str, units: list[dict[str, Any]], valid_s: int = 86400
) -> str:
    """A transfer file as a partner's KMA writes it, from `sender` to the cluster of that identity."""
    now = int(time.time())
    header = {
        "file_id": uuid.uuid4().hex,
        "sender_name": "test partner",
        "created_at": now,
        "expires_at": now + valid_s,
        "data_units": len(units),
        "keys": sum(len(u["keys"]) for u in units),
    }
    return sender.seal(parse_identity(recipient_identity), header, {"data_units": units}).decode()


def upload(client: KmsClient, text: str) -> str:
    """The file sent as the manager and `kma transfer` send it (its own streamed request, from a
    file on disk); its upload ID, which the preview, the import and the import job name."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "file.kmstransfer"
        path.write_text(text, encoding="utf-8")
        return client.upload_transfer_file(path).id


def one_tape(volser: str, material: bytes, key_id: str | None = None) -> dict[str, Any]:
    now = int(time.time())
    key = {
        "id": key_id or f"TK-{uuid.uuid4().hex[:20]}",
        "material": material.hex(),
        "created_at": now - 60,
        "activated_at": now - 60,
        "protect_until": now + 86400,
        "deactivate_at": now + 365 * 86400,
        "compromised_at": None,
    }
    return {"id": volser, "description": f"Cartridge {volser}", "created_at": now - 60, "keys": [key]}


def text_of(identity: Identity) -> str:
    return identity_text(identity.public)


def interrupted_import(kma: RunningKma, text: str, group: str, job_id: str) -> str:
    """An import job of `text` into `group` whose KMA stopped before it wrote anything: a KMA of the
    cluster that is gone, its row untouched for ten minutes (so any KMA shows it interrupted and
    resumes it), its file held whole. Written into the store as that KMA would have left it."""
    raw, then = text.encode(), int(time.time()) - 600
    with sqlite3.connect(kma.data_dir / "kma.db", timeout=30) as db:
        db.execute(
            "INSERT INTO transfer_jobs (id, kind, started_by, kma_id, state, phase, key_group_id, "
            "started_at, updated_at, file_sha256) VALUES (?, 'import', 'so', 'kma-gone', 'running', "
            "'checking the file', ?, ?, ?, ?)",
            (job_id, group, then, then, hashlib.sha256(raw).hexdigest()),
        )
        db.execute("INSERT INTO transfer_job_files (job_id, part, content) VALUES (?, 0, ?)", (job_id, raw))
    return job_id


class MatrixPartner:
    """What the role matrix (tests/integration/test_role_matrix.py) needs to call each transfer
    route so that it succeeds: a registered partner whose private identity the test holds, an
    exportable tape and a key group that allows import; made at first use."""

    def __init__(self, admin: KmsClient, kma: RunningKma) -> None:
        self.admin, self.kma, self.n = admin, kma, 0
        self._job: str | None = None
        self._export_job: str | None = None
        self.identity = Identity.generate()
        register(admin, kma, "mx-partner", text_of(self.identity))
        admin.create_key_policy(
            "mx-transfer", encryption_period=3600, cryptoperiod=7200, allow_export=True, allow_import=True
        )
        admin.create_key_group("mx-transfer", "mx-transfer")
        admin.create_data_unit("MXT0001")
        admin.issue_key("mx-transfer", "MXT0001")

    def fresh(self) -> str:
        self.n += 1
        return f"mx-partner-{self.n}"

    def pending_body(self) -> dict[str, Any]:
        return {"id": self.fresh(), "name": "Matrix partner", "identity": text_of(Identity.generate())}

    def removable(self) -> str:
        partner_id = self.fresh()
        register(self.admin, self.kma, partner_id, text_of(Identity.generate()))
        return partner_id

    def job(self) -> str:
        """A transfer job of the KMA (an import of a new tape), made at first use."""
        if self._job is None:
            self._job = self.admin.start_transfer_import(upload(self.admin, self.file()), "mx-transfer").id
        return self._job

    def settle(self) -> None:
        """Waits for the jobs the last call started (an import, a resume) to end: they write in the
        background, and the next call's snapshot of the store must not see them do it."""
        sql = "SELECT count(*) FROM transfer_jobs WHERE state = 'running' AND kma_id <> 'kma-gone'"
        for _ in range(600):
            with sqlite3.connect(f"file:{self.kma.data_dir / 'kma.db'}?mode=ro", uri=True, timeout=30) as db:
                if db.execute(sql).fetchone()[0] == 0:
                    return
            time.sleep(0.05)
        raise AssertionError("a transfer job did not end within 30 s")

    def export_job(self) -> str:
        """A finished export job of the KMA (its file held with it), made at first use."""
        if self._export_job is None:
            job = self.admin.start_transfer_export("mx-partner", volsers=["MXT0001"])
            self._export_job = self.admin.follow_transfer_job(job, poll_s=0.05).id
        return self._export_job

    def interrupted_job(self) -> str:
        """An import job whose KMA stopped before it wrote anything (a KMA of the cluster that is gone:
        its row untouched for ten minutes), holding a new tape's file: what a resume takes."""
        return interrupted_import(self.kma, self.file(), "mx-transfer", f"mx-job-{self.n}")

    def file(self) -> str:
        """A new tape's file from the partner to this KMA."""
        self.n += 1
        here = self.admin.get_transfer_identity().identity
        return file_from(self.identity, here, [one_tape(f"MXI{self.n:04d}", os.urandom(32))])
