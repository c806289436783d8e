"""The one way a KMA runs a background job: a thread that does a round of work, then waits until it
is woken or its pause is over, and again, until it is stopped.

A worker says what one round does (`work`, which returns how long to pause before the next) and,
if it wants more than the default (the error in its module's log, then the normal pause), what a
failed round means (`failed`). `wake` starts the next round now (a setting changed); `stop` ends
the thread and waits for it, so a stopped KMA (and a test) leaves no thread behind. Workers belong
to their KMA (`Appliance.part`), which stops them when it closes.
"""

from __future__ import annotations

import logging
import threading


class Worker:
    name = "kma-worker"  # the thread's name, as `ps -L` and a stack dump show it
    pause_s = 5.0  # the pause after a failed round
    stop_wait_s = 30.0  # how long `stop` waits for a round under way (a backup being copied) to end

    def __init__(self, wake: threading.Event | None = None) -> None:
        self._wake = wake or threading.Event()  # `wake`: one that others set too (a changed setting)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.woken = False  # the last pause ended because of `wake`, not because its time was up
        self.log = logging.getLogger(type(self).__module__)

    def work(self) -> float:
        """One round; returns the seconds until the next round unless woken."""
        raise NotImplementedError

    def failed(self, exc: Exception) -> float:
        """A round raised `exc`: report it; returns the pause before the next round."""
        self.log.error("%s: round failed; retrying", self.name, exc_info=exc)
        return self.pause_s

    def interrupt(self) -> None:
        """Cut short a round that waits on something outside (a socket), so `stop` need not wait."""

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Start the next round now rather than after the pause."""
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self.interrupt()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.stop_wait_s)
            if thread.is_alive():
                self.log.warning("%s did not stop within %.0f s", self.name, self.stop_wait_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                pause = self.work()
            except Exception as exc:
                pause = self.failed(exc)
            if self._stop.is_set():
                break
            self.woken = self._wake.wait(pause)
            self._wake.clear()
