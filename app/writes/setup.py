"""First set-up: the wizard's calls to a KMA in set-up mode (kma/setup/api.py).

There is no session yet, so these use the set-up client of the wizard's answers (the temporary
certificate pinned, the set-up code), not ``worker.client``; each closes its connection.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.operations import OpContext
from app.setup import SetupAnswers
from kms_client.setup import SetUpKma


def check_code(worker: OpContext, answers: SetupAnswers) -> None:
    with answers.client() as setup:
        setup.check_code()


def check_network(worker: OpContext, answers: SetupAnswers) -> None:
    with answers.client() as setup:
        setup.check_network(answers.management_address, answers.service_address)


def draft_key_split(worker: OpContext, answers: SetupAnswers, typed: Sequence[tuple[str, str]]) -> list[str]:
    with answers.client() as setup:
        return setup.draft_key_split(answers.threshold, typed)


def prove(worker: OpContext, answers: SetupAnswers, typed: Sequence[tuple[str, str]]) -> str:
    with answers.client() as setup:
        return setup.prove(typed)


def finish(worker: OpContext, answers: SetupAnswers) -> SetUpKma:
    with answers.client() as setup:
        return setup.finish(answers.finish_body())
