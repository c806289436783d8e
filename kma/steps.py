"""Procedures as named steps: a one-shot procedure (joining a cluster, restoring a backup, making a
new cluster, enrolling an agent, serving) reads top to bottom as calls to its steps, each a
function marked `@step("procedure")` that a test can call on its own.

When a step fails, the exception carries the step's name (`failed_step`, and a note in its
traceback: "join failed at step 'sign the certificates'"), and the log says it too, so an
operator's first question, "how far did it get?", has an answer. What the user is told is the
exception's own message, unchanged: the step is for whoever reads the log. A refusal already in
the audit trail (a wrong passphrase at a join: anyone can send those) is logged at debug level
only, so strangers cannot fill the log.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


def step_name(function: Callable[..., object]) -> str:
    """`_sign_certificates` -> "sign certificates": the words of the function's name."""
    return function.__name__.strip("_").replace("_", " ")


def failed_step(exc: BaseException) -> str | None:
    """The innermost named step `exc` came out of, if any."""
    return getattr(exc, "failed_step", None)


def step(procedure: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Mark a function as one step of `procedure`; a failure in it is named after it."""

    def mark(function: Callable[P, R]) -> Callable[P, R]:
        name = step_name(function)

        @functools.wraps(function)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return function(*args, **kwargs)
            except Exception as exc:
                if failed_step(exc) is None:  # the innermost step names it; outer ones let it pass
                    exc.failed_step = name  # type: ignore[attr-defined]
                    exc.add_note(f"{procedure} failed at step '{name}'")
                    level = logging.DEBUG if getattr(exc, "audited", False) else logging.WARNING
                    log.log(level, "%s failed at step '%s': %s", procedure, name, exc)
                raise

        return run

    return mark
