"""Transfer partners, and the keys of data units exported to them and imported from them
(docs/transfer.md). Registering a partner is quorum-protected."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from kma.api import schemas
from kma.api.deps import Kma, Paging, TransferExport, TransferImport, TransferPartners, TransferRead
from kma.api.quorum_schemas import PENDING, PendingQuorumOp, ran_or_pending
from kma.api.transfer_schemas import TransferExport as TransferExportAnswer
from kma.api.transfer_schemas import (
    TransferExportCreate,
    TransferIdentity,
    TransferImportCreate,
    TransferJob,
    TransferPartner,
    TransferPartnerCreate,
    TransferUpload,
    TransferUploadRef,
)
from kma.api.transfer_schemas import (
    TransferImport as TransferImportAnswer,
)
from kma.appliance import Appliance
from kma.crypto.transfer_stream import Source
from kma.domain.actor import Actor
from kma.quorum import engine
from kma.services.paging import Page
from kma.services.quorum.key_split import Credential
from kma.services.transfer import (
    transfer_export,
    transfer_import,
    transfer_jobs,
    transfer_partners,
    transfer_uploads,
)
from kma.services.transfer.transfer_jobs import TransferJobs

router = APIRouter(tags=["transfer"])
FILE_TYPE = "application/octet-stream"


@router.get("/transfer-identity", response_model=TransferIdentity)
def get_transfer_identity(kma: Kma, actor: TransferRead) -> transfer_partners.TransferIdentityRow:
    """This cluster's identity: the line partners register and the fingerprint to read to them."""
    return transfer_partners.get_transfer_identity(kma)


@router.get("/transfer-partners", response_model=schemas.Page[TransferPartner])
def list_transfer_partners(kma: Kma, actor: TransferRead, paging: Paging) -> Page:
    return transfer_partners.list_transfer_partners(kma, paging)


@router.get("/transfer-partners/{partner_id}", response_model=TransferPartner)
def get_transfer_partner(
    partner_id: str, kma: Kma, actor: TransferRead
) -> transfer_partners.TransferPartnerRow:
    return transfer_partners.get_transfer_partner(kma, partner_id)


@router.post(
    "/transfer-partners", response_model=TransferPartner | PendingQuorumOp, status_code=201, responses=PENDING
)
def register_transfer_partner(
    body: TransferPartnerCreate, kma: Kma, actor: TransferPartners, response: Response
) -> TransferPartner | PendingQuorumOp:
    """Quorum-protected: with M key split credentials the partner is registered at once."""
    request = body.model_dump(exclude={"credentials"})
    done = engine.submit(kma, actor, "register_transfer_partner", request, body.key_split_credentials())
    return ran_or_pending(
        done,
        response,
        lambda: TransferPartner.model_validate(transfer_partners.get_transfer_partner(kma, body.id)),
    )


@router.post("/transfer-partners/{partner_id}/enable", response_model=TransferPartner)
def enable_transfer_partner(
    partner_id: str, kma: Kma, actor: TransferPartners
) -> transfer_partners.TransferPartnerRow:
    return transfer_partners.enable_transfer_partner(kma, actor, partner_id)


@router.post("/transfer-partners/{partner_id}/disable", response_model=TransferPartner)
def disable_transfer_partner(
    partner_id: str, kma: Kma, actor: TransferPartners
) -> transfer_partners.TransferPartnerRow:
    return transfer_partners.disable_transfer_partner(kma, actor, partner_id)


@router.delete("/transfer-partners/{partner_id}", status_code=204)
def remove_transfer_partner(partner_id: str, kma: Kma, actor: TransferPartners) -> Response:
    transfer_partners.remove_transfer_partner(kma, actor, partner_id)
    return Response(status_code=204)


def _selection(body: TransferExportCreate) -> transfer_export.Selection:
    return transfer_export.Selection(
        tuple(body.volsers),
        body.volser_from,
        body.volser_to,
        body.key_group_id,
        body.written_from,
        body.written_to,
    )


@router.post("/transfer-exports", response_model=TransferExportAnswer, status_code=201)
def export_transfer_file(
    body: TransferExportCreate, kma: Kma, actor: TransferExport
) -> transfer_export.TransferExportRow:
    """The transfer file for a partner with the chosen data units' keys (only those whose policy
    allows export: the others are named), signed by this cluster and wrapped to the partner."""
    return transfer_export.export_transfer_file(
        kma, actor, body.partner_id, _selection(body), body.valid_days
    )


@router.post("/transfer-exports/jobs", response_model=TransferJob, status_code=202)
def start_transfer_export(body: TransferExportCreate, kma: Kma, actor: TransferExport) -> TransferJob:
    """The export as a background job: poll `GET /transfer-jobs/{id}` for its progress; the
    finished job holds the answer with the file (`exported`)."""
    selection = _selection(body)

    def work() -> dict[str, Any]:
        return {
            "exported": asdict(
                transfer_export.export_transfer_file(kma, actor, body.partner_id, selection, body.valid_days)
            )
        }

    return _job(kma, kma.part(TransferJobs).start(actor, "export", lambda _file: work()))


UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "the transfer file, as the partner sent it",
        "content": {FILE_TYPE: {"schema": {"type": "string", "format": "binary"}}},
    }
}


@router.post("/transfer-uploads", response_model=TransferUpload, status_code=201, openapi_extra=UPLOAD_BODY)
async def upload_transfer_file(
    request: Request, kma: Kma, actor: TransferImport
) -> transfer_uploads.TransferUploadRow:
    """A transfer file, sent as the request's body and written to the store as it arrives: its `id`
    is what the preview, the import and the import job name (`upload_id`). Yours only; refused
    (413) past its size limit; kept an hour unless an import uses it."""
    receiving = await run_in_threadpool(transfer_uploads.Receiving, kma, actor)
    try:
        async for piece in request.stream():
            for part in receiving.add(piece):
                await run_in_threadpool(receiving.write, part)
        return await run_in_threadpool(receiving.close)
    except Exception:  # too large, cut short, empty: nothing of it is kept
        await run_in_threadpool(receiving.discard)
        raise


@router.post("/transfer-imports/preview", response_model=TransferImportAnswer)
def preview_transfer_import(
    body: TransferUploadRef, kma: Kma, actor: TransferImport
) -> transfer_import.ImportAnswer:
    """What importing the uploaded file would do (it is checked as for an import); writes nothing
    and leaves the upload for the import."""
    upload = transfer_uploads.usable(kma, actor, body.upload_id)
    return transfer_import.preview_transfer_import(kma, actor, transfer_uploads.source(kma, upload.id))


def _import(
    kma: Appliance,
    actor: Actor,
    source: Source,
    key_group_id: str,
    credentials: list[Credential],
    held: dict[str, str],
) -> dict[str, Any]:
    """{"imported": the answer} or, under quorum and still waiting, {"pending_op": the operation};
    `held`: where the file is in the store ({"upload_id": ...} or {"job_id": ...}), from where a
    quorum submission copies it to the pending operation."""
    try:
        return {"imported": asdict(transfer_import.import_transfer_file(kma, actor, source, key_group_id))}
    except transfer_import.NeedsQuorum:
        request = {**held, "key_group_id": key_group_id}
        done = engine.submit(kma, actor, "import_transfer_file", request, credentials)
    if not done.executed:
        return {"pending_op": done.op}
    return {"imported": {**done.handed_out, "keys_awaiting_backup": transfer_import.awaiting_backup(kma)}}


@router.post("/transfer-imports", response_model=TransferImportAnswer | PendingQuorumOp, responses=PENDING)
def import_transfer_file(
    body: TransferImportCreate, kma: Kma, actor: TransferImport, response: Response
) -> TransferImportAnswer | PendingQuorumOp:
    """Imports the uploaded file (the upload is removed then); when the key group's policy has
    `import_needs_quorum`, a quorum operation (202 with it when the credentials that came are
    fewer than M)."""
    upload = transfer_uploads.usable(kma, actor, body.upload_id)
    answer = _import(
        kma,
        actor,
        transfer_uploads.source(kma, upload.id),
        body.key_group_id,
        body.key_split_credentials(),
        {"upload_id": upload.id},
    )
    transfer_uploads.remove(kma, upload.id)
    if "pending_op" in answer:
        response.status_code = 202
        return PendingQuorumOp.model_validate(answer["pending_op"])
    return TransferImportAnswer.model_validate(answer["imported"])


@router.post("/transfer-imports/jobs", response_model=TransferJob, status_code=202)
def start_transfer_import(body: TransferImportCreate, kma: Kma, actor: TransferImport) -> TransferJob:
    """The import of the uploaded file as a background job: poll `GET /transfer-jobs/{id}` for its
    progress; the finished job holds the answer (`imported`) or, under quorum, the operation
    (`pending_op`). The file is held with the job (the upload is removed; the credentials are not
    held): an interrupted import is resumed from it."""
    upload = transfer_uploads.usable(kma, actor, body.upload_id)
    group, credentials = body.key_group_id, body.key_split_credentials()

    def work(job_id: str) -> dict[str, Any]:
        source = transfer_jobs.held_file(kma, job_id)
        return _import(kma, actor, source, group, credentials, {"job_id": job_id})

    return _job(kma, kma.part(TransferJobs).start(actor, "import", work, upload, group))


@router.get("/transfer-jobs", response_model=schemas.Page[TransferJob])
def list_transfer_jobs(kma: Kma, actor: TransferRead, paging: Paging) -> Page:
    """The transfer jobs the cluster keeps, newest first (a finished one an hour, an interrupted
    one a week): their progress, their answers, and the interrupted imports to resume."""
    jobs, page = kma.part(TransferJobs).list(paging)
    return page.with_items([_job(kma, j).model_dump() for j in jobs])


@router.get("/transfer-jobs/{job_id}", response_model=TransferJob)
def get_transfer_job(job_id: str, kma: Kma, actor: TransferRead) -> TransferJob:
    """A transfer job of the cluster: its progress, then its answer, why it failed, or what
    interrupted it."""
    return _job(kma, kma.part(TransferJobs).get(job_id))


@router.post("/transfer-jobs/{job_id}/resume", response_model=TransferJob, status_code=202)
def resume_transfer_job(job_id: str, kma: Kma, actor: TransferImport) -> TransferJob:
    """An interrupted import job, run again on this KMA from the file it holds: what was written is
    skipped, the rest written (an import the quorum approved needs no new approval)."""
    jobs = kma.part(TransferJobs)
    group = str(jobs.get(job_id).key_group_id or "")

    def work(job_id: str) -> dict[str, Any]:
        return _import(kma, actor, transfer_jobs.held_file(kma, job_id), group, [], {"job_id": job_id})

    return _job(kma, jobs.resume(actor, job_id, work))


@router.get(
    "/transfer-jobs/{job_id}/file",
    response_class=StreamingResponse,
    responses={200: {"content": {FILE_TYPE: {}}, "description": "the transfer file, as it is read"}},
)
def get_transfer_job_file(job_id: str, kma: Kma, actor: TransferRead) -> StreamingResponse:
    """A finished export job's transfer file, streamed from the store a part at a time."""
    parts = kma.part(TransferJobs).exported_file(job_id)
    disposition = f'attachment; filename="transfer-{job_id[:16]}.kmstransfer"'
    return StreamingResponse(parts, media_type=FILE_TYPE, headers={"Content-Disposition": disposition})


def _job(kma: Appliance, job: transfer_jobs.TransferJob) -> TransferJob:
    error = (
        None
        if job.error_code is None
        else {"status": job.error_status, "code": job.error_code, "message": job.error_message}
    )
    fields = ("id", "kind", "state", "phase", "done", "total", "kma_id", "started_by")
    result = job.result or {}
    return TransferJob.model_validate(
        {
            **{f: getattr(job, f) for f in fields},
            "started_at": job.started_at,
            "updated_at": job.updated_at,
            "finished_at": job.finished_at,
            "error": error,
            **result,
        }
    )
