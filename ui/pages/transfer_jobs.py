"""The transfer jobs the cluster keeps (docs/transfer.md, "Progress: transfer jobs"), below the
partners on the Transfer partners page: each export and import with its progress and outcome. An
import whose KMA stopped halfway is shown interrupted, with what it wrote, and a Security Officer
resumes it here (the KMA refuses anyone else: POST /transfer-jobs/{id}/resume)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.writes.transfer import progress_text, resume_transfer_job
from kms_client.wire import PendingQuorumOp, TransferJob
from ui.format import when
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, ListSpec
from ui.lists.paged_model import Column


def resumable(job: TransferJob) -> bool:
    return job.kind == "import" and job.state == "interrupted"


def outcome(job: TransferJob) -> str:
    """What came of the job, in a line: its error, or its answer."""
    if job.error is not None:
        return job.error.message
    if job.imported is not None:
        return f"Imported {job.imported.imported:,} data units into key group {job.imported.key_group_id}."
    if job.exported is not None:
        return f"Exported {job.exported.data_units:,} data units to {job.exported.partner_id}."
    if job.pending_op is not None:
        return f"Submitted for approval: quorum operation {job.pending_op.id}."
    return progress_text(job) if job.state == "running" else ""


class _Outcome(Column):
    """The job's error or answer, in words (from several of its fields)."""

    def value(self, obj: Any) -> Any:
        return outcome(obj)


def _resume(page: ListPage[TransferJob], job: Any, said: QLabel | None = None) -> None:
    """Runs the interrupted import again and follows it; `said`: where its progress and end show."""
    shown = said if said is not None else getattr(page.parent(), "result", None)

    def tell(text: str) -> None:
        if isinstance(shown, QLabel):
            shown.setText(text)

    def done(answer: Any) -> None:
        if isinstance(answer, PendingQuorumOp):
            tell(f"Transfer job {job.id} resumed: submitted for approval, quorum operation {answer.id}.")
        else:
            tell(
                f"Transfer job {job.id} resumed and finished: {answer.imported:,} more data units imported "
                f"into key group {answer.key_group_id}."
            )

    page.ctx.ops.write(
        resume_transfer_job(job.id),
        parent=page,
        label=f"Resuming transfer job {job.id}…",
        success=done,
        progress=lambda text, _value, _maximum: tell(text),
    )


JOBS = ListSpec(
    key="transfer_jobs",
    title="Transfer jobs",
    noun="transfer job",
    columns=[
        Column("started_at", "Started", 130, format=when),
        Column("kind", "Kind", 60, sortable=False),
        Column(
            "state",
            "State",
            85,
            sortable=False,
            tone=lambda j: "bad" if j.state == "failed" else "warn" if j.state == "interrupted" else None,
        ),
        Column("phase", "Phase", 150, sortable=False),
        Column("done", "Done", 80, sortable=False, align_right=True, format=lambda n: f"{n:,}"),
        Column("total", "Of", 80, sortable=False, align_right=True, format=lambda n: f"{n:,}"),
        Column("started_by", "By", 90, sortable=False),
        Column("kma_id", "KMA", 120, sortable=False),
        Column("id", "Job", 140, sortable=False),
        _Outcome("outcome", "Outcome", 420, sortable=False),
    ],
    fetch=lambda client: client.list_transfer_jobs,
    sort_fields=frozenset({"started_at"}),
    shows={"transfer"},
    actions=[
        ActionSpec("Resume import", _resume, "transfer.import", toolbar=True, enabled=resumable),
    ],
    default_sort=("started_at", Qt.SortOrder.DescendingOrder),
)
