"""Transfer partners (register under quorum, enable, disable, remove) and transfer files (export
to a file, import from one): docs/transfer.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.operations import OpContext
from app.writes import Write
from kms_client import KmsClient, ValidationFailed
from kms_client.wire import PendingQuorumOp, TransferExport, TransferImport, TransferJob

register_transfer_partner = Write(KmsClient.register_transfer_partner, {"transfer", "quorum"})
enable_transfer_partner = Write(
    KmsClient.enable_transfer_partner, {"transfer"}, "Transfer partner {0} enabled."
)
disable_transfer_partner = Write(
    KmsClient.disable_transfer_partner, {"transfer"}, "Transfer partner {0} disabled."
)
remove_transfer_partner = Write(
    KmsClient.remove_transfer_partner, {"transfer"}, "Transfer partner {0} removed."
)


def local_file_refused(what: str, path: Path, exc: OSError | UnicodeError) -> ValidationFailed:
    """A file on this computer that cannot be read or written, said like a refused field."""
    return ValidationFailed(422, "validation_failed", f"Cannot {what} {path}: {exc}.")


def _export(worker: OpContext, dest: Path, partner_id: str, **selection: Any) -> TransferExport:
    """Ask for the file, then save it; an existing file is never overwritten."""
    if dest.exists():
        raise ValidationFailed(422, "validation_failed", f"{dest} already exists; choose a new file name.")
    worker.progress(f"Writing the transfer file for {partner_id}…")
    job = worker.client.start_transfer_export(partner_id, **selection)
    done = worker.client.follow_transfer_job(job, lambda j: _progress(worker, j)).exported
    assert done is not None  # a finished export job holds its answer
    worker.progress(f"Saving the transfer file to {dest.name}…")
    try:
        worker.client.get_transfer_job_file(job.id, dest)
    except OSError as exc:
        raise local_file_refused("save the transfer file to", dest, exc) from None
    return done


def upload_transfer_file(client: KmsClient, source: Path) -> str:
    """The file sent to the KMA as it is read (its own request, never held whole); its upload ID,
    which the preview and the import name."""
    try:
        return client.upload_transfer_file(source).id
    except OSError as exc:
        raise local_file_refused("read", source, exc) from None


def progress_text(job: TransferJob) -> str:
    """ "Writing: 12,000 of 100,000 data units", as the manager shows a transfer job's progress."""
    phase = job.phase[:1].upper() + job.phase[1:]
    return f"{phase}: {job.done:,} of {job.total:,} data units" if job.total else f"{phase}…"


def _progress(worker: OpContext, job: TransferJob) -> None:
    """A running job's progress. Not the ended job's: its progress would reach the window after
    the answer (both are queued to the GUI thread, the progress coalesced) and write "Done: 3,000
    of 3,000" over "Imported 3,000 data units" (the wizard's GUI test waited for it in vain)."""
    if job.state == "running":
        worker.progress(progress_text(job), job.done, job.total)


def _import(
    worker: OpContext, upload_id: str, key_group_id: str, credentials: list[tuple[str, str]] | None = None
) -> TransferImport | PendingQuorumOp:
    """The import of an uploaded file (the preview's upload), or the quorum operation it became
    (the key group's policy asks for a quorum): with M key split `credentials` it runs at once,
    with fewer it waits for approvals."""
    worker.progress("Importing…")
    job = worker.client.start_transfer_import(upload_id, key_group_id, credentials=credentials)
    done = worker.client.follow_transfer_job(job, lambda j: _progress(worker, j))
    answer = done.pending_op or done.imported
    assert answer is not None  # a finished import job holds one or the other
    return answer


def _resume(worker: OpContext, job_id: str) -> TransferImport | PendingQuorumOp:
    """An interrupted import job run again on the KMA (what was written is skipped), followed to
    its end: its answer, or the quorum operation it was submitted as."""
    worker.progress(f"Resuming transfer job {job_id}…")
    job = worker.client.resume_transfer_job(job_id)
    done = worker.client.follow_transfer_job(job, lambda j: _progress(worker, j))
    answer = done.pending_op or done.imported
    assert answer is not None  # a finished import job holds one or the other
    return answer


export_transfer_file = Write(_export, {"transfer", "data_units"})
import_transfer_file = Write(_import, {"transfer", "data_units", "keys"})
resume_transfer_job = Write(_resume, {"transfer", "data_units", "keys"})
