"""The audit page's "Verify chain": the KMA verifies in the background (issue 47), the page follows.

At ten million events a verification takes minutes, so the page never waits on it: the button
starts it on the KMA (or joins the one running, started by anyone), then a short read once a
second shows its progress in the chain banner ("1,200,000 of 10,000,000 events checked") until
the result is there: intact, or the first broken event. The window stays usable throughout; a
page opened later (or another auditor's) picks up the running verification the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QWidget

from app.context import AppContext

POLL_MS = 1000


def progress_text(state: Any) -> str:
    """'Verifying the audit chain: 1,200,000 of 10,000,000 events checked (12%)…'"""
    if not state.events_total:
        return "Verifying the audit chain: counting the events…"
    share = 100 * state.events_checked // state.events_total
    return (
        f"Verifying the audit chain: {state.events_checked:,} of {state.events_total:,} events "
        f"checked ({share}%)… The KMA goes on serving meanwhile; you can keep working here."
    )


class ChainCheck(QObject):
    """Starts and follows a verification for `page`, telling it through three callbacks: the
    progress text, the report once it is finished, and the reason when it could not run."""

    def __init__(
        self,
        ctx: AppContext,
        page: QWidget,
        progress: Callable[[str], None],
        finished: Callable[[Any], None],
        failed: Callable[[str], None],
    ) -> None:
        super().__init__(page)
        self.ctx, self.page = ctx, page
        self._progress, self._finished, self._failed = progress, finished, failed
        self.state: Any = None  # the last state seen (kms_client.ChainVerification)
        self._poll = QTimer(self)
        self._poll.setSingleShot(True)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self.poll)

    @property
    def running(self) -> bool:
        return self.state is not None and self.state.state == "running"

    def start(self) -> None:
        """Start a verification on the KMA, or join the one running there."""
        self._progress("Starting the verification of the audit chain…")
        self.ctx.ops.read(
            lambda worker: worker.client.start_audit_verification(), parent=self.page, success=self.seen
        )

    def poll(self) -> None:
        def lost(exc: BaseException) -> bool:
            self._progress(
                "Lost touch with the KMA while following the verification of the audit chain; it "
                "goes on there. Press Verify chain to follow it again."
            )
            return True

        self.ctx.ops.read(
            lambda worker: worker.client.get_audit_verification(),
            parent=self.page,
            success=self.seen,
            failure=lost,
            quiet=True,
        )

    def seen(self, state: Any) -> None:
        self.state = state
        if state.state == "running":
            self._progress(progress_text(state))
            self._poll.start()
        elif state.state == "finished":
            self._finished(state.report)
        elif state.state == "failed":
            self._failed(state.error or "the KMA could not read its audit trail")
        else:  # none: the KMA restarted since, and its verification ended with it
            self._progress("No verification is running on the KMA now (it restarted?). Press Verify chain.")

    def stop(self) -> None:
        """Stop following (the page closes); the KMA's verification goes on to its end."""
        self._poll.stop()
