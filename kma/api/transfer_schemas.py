"""Request and response bodies of transfer partners, exports and imports (docs/transfer.md)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from kma.api.quorum_schemas import PendingQuorumOp, WithCredentials
from kma.api.schemas import Request, Response, Time


class TransferIdentity(Response):
    identity: str = Field(description="the line partners register: kms-transfer-identity-v1:...")
    fingerprint: str = Field(description="SHA-256 of the public keys, read aloud to the partner")
    created_at: Time | None = None


class TransferPartner(Response):
    id: str
    name: str
    contact: str
    identity: str
    fingerprint: str
    may_send: bool = Field(description="its files are imported here")
    may_receive: bool = Field(description="keys are exported to it")
    enabled: bool
    registered_by_op: str = Field(description="the quorum operation that registered it")
    created_at: Time
    updated_at: Time


class TransferPartnerCreate(WithCredentials):
    id: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=200)
    contact: str = Field("", max_length=200)
    identity: str = Field(min_length=1, max_length=200, description="the partner's identity line")
    fingerprint: str = Field(
        "", max_length=100, description="the fingerprint the partner read out of band; checked when given"
    )
    may_send: bool = True
    may_receive: bool = True


class TransferExportCreate(Request):
    partner_id: str = Field(min_length=1, max_length=64)
    volsers: list[str] = Field(default_factory=list, max_length=1000)
    volser_from: str | None = Field(None, max_length=64)
    volser_to: str | None = Field(None, max_length=64)
    key_group_id: str | None = Field(None, max_length=64)
    written_from: int | None = Field(None, description="a key of the unit was first used at or after")
    written_to: int | None = Field(None, description="a key of the unit was first used at or before")
    valid_days: int = Field(30, ge=1, le=365)


class KeyLeftBehind(Response):
    data_unit_id: str
    key_id: str
    reason: str


class TransferExport(Response):
    file_id: str
    partner_id: str
    recipient_fingerprint: str
    sender_fingerprint: str
    data_units: int
    keys: int
    expires_at: Time
    not_exported: list[KeyLeftBehind]
    not_found: list[str] = Field(description="volsers asked for that have no key here")
    file: str | None = Field(
        None,
        description="the transfer file, to hand to the partner (null in a job's answer: GET "
        "/transfer-jobs/{id}/file streams it)",
    )


# What a request that still carries its file in its JSON is told (the way before issue 40's uploads;
# no release sent it).
FILE_IN_JSON = (
    "A transfer file is no longer sent inside a request's JSON: upload it first (POST "
    "/api/v1/transfer-uploads with the file as the request's body; kms_client's upload_transfer_file, "
    "kma transfer and the manager do so) and name the upload_id it answers"
)


class TransferUpload(Response):
    id: str = Field(description="the upload's ID: the `upload_id` of the preview, the import, the import job")
    size: int = Field(description="bytes")
    sha256: str = Field(description="of the file as it arrived, hex")
    expires_at: Time = Field(description="refused and removed after this, unless an import used it before")


class TransferUploadRef(Request):
    upload_id: str = Field(
        min_length=1, max_length=64, description="a transfer file sent by POST /transfer-uploads (yours)"
    )

    @model_validator(mode="before")
    @classmethod
    def _file_not_inside(cls, data: Any) -> Any:
        if isinstance(data, dict) and "file" in data:
            raise PydanticCustomError("file_in_json", FILE_IN_JSON)
        return data


class TransferImportCreate(TransferUploadRef, WithCredentials):
    """`credentials`: key split credentials, for a key group whose policy has `import_needs_quorum`
    (with M of them the import runs at once; with fewer it waits for approvals)."""

    key_group_id: str = Field(min_length=1, max_length=64)


class TransferConflict(Response):
    data_unit_id: str
    reason: str


class TransferImport(Response):
    file_id: str
    partner_id: str
    partner_name: str
    sender_name: str
    created_at: Time | None
    expires_at: Time
    data_units: int
    keys: int
    new: int = Field(description="data units with a key not here yet")
    already_here: int
    conflicts: list[TransferConflict]
    imported_before_at: Time | None = Field(description="when this very file was imported here before")
    imported: int = Field(description="data units written (0 for a preview)")
    key_group_id: str | None
    keys_awaiting_backup: int = Field(
        0,
        description="imported keys (of any file) whose material is sent to no agent until a database "
        "backup of this KMA holds them (a cluster of two or more KMAs holds them at once)",
    )


class TransferJobError(Response):
    status: int
    code: str
    message: str


class TransferJob(Response):
    """An export or import running in the background on a KMA of the cluster; its client polls it
    through any KMA of the cluster (the job is a row of the store)."""

    id: str
    kind: str = Field(description="export or import")
    state: str = Field(
        description="running, done, failed, or interrupted (the KMA that ran it stopped: `done` says "
        "what it wrote; an import is resumed with POST /transfer-jobs/{id}/resume)"
    )
    phase: str = Field(description="what it does now: checking the file, reading keys, writing, ...")
    done: int = Field(description="data units read (export) or written (import) so far")
    total: int = Field(description="data units in all; 0 while not known yet")
    kma_id: str = Field(description="the KMA that runs it (or ran it)")
    started_by: str = Field(description="who started it, or resumed it last")
    started_at: Time
    updated_at: Time = Field(description="the running KMA's last word on it")
    finished_at: Time | None = None
    error: TransferJobError | None = Field(
        None, description="why it failed (state failed) or what stopped it (state interrupted)"
    )
    exported: TransferExport | None = Field(
        None, description="an export's answer (its file: GET /transfer-jobs/{id}/file)"
    )
    imported: TransferImport | None = Field(None, description="an import's answer")
    pending_op: PendingQuorumOp | None = Field(
        None, description="an import the key group's policy puts under quorum: the operation to approve"
    )
