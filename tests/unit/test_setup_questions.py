"""`kma init --interactive` (issue 13): the set-up questions in a terminal, each answer checked
where it is typed, with its reason, and asked again; the key split is proven before any write."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kma.cli.setup_questions import ask_answers
from kma.errors import ValidationFailed


def scripted(answers: list[str]) -> tuple[Iterator[str], list[str]]:
    return iter(answers), []


def test_every_mistake_is_explained_and_asked_again() -> None:
    typed = iter(
        [
            "",
            "127.0.0.1:0",
            "127.0.0.1:0",  # mode (default), management, service
            "Acme Vault",
            "dallas",
            "",
            "kma-1",
            "",  # cluster, site ID, site name, KMA ID, KMA name
            "11",
            "3",  # N: 11 refused (at most 10), then 3
            "4",
            "2",  # M: 4 refused (more than N), then 2
            "alice",
            "bob",
            "bob",
            "carol",  # names: "bob" twice refused
            "so",
            "Sam Officer",
            "no",
            "no",
            "50",
            "",  # officer, autonomous unlock, two-step sign-in, pool size, master key in software
        ]
    )
    secrets = iter(
        [
            "password1",  # alice: guessable, refused
            "alice walks the long pier",
            "alice walks the long pie",  # the second typing differs
            "alice walks the long pier",
            "alice walks the long pier",
            "bob paints seven green doors",
            "bob paints seven green doors",
            "carol counts quiet harbour lights",
            "carol counts quiet harbour lights",
        ]
    )
    said: list[str] = []
    proof: list[str] = []

    def secret(prompt: str) -> str:
        if "again:" in prompt and "same" not in prompt:  # the proof asks each chosen member again
            name = prompt.split(":", maxsplit=1)[0]
            proof.append(name)
            wrong_first = len(proof) == 1
            known = {
                "alice": "alice walks the long pier",
                "bob": "bob paints seven green doors",
                "carol": "carol counts quiet harbour lights",
            }
            return "not it at all" if wrong_first else known[name]
        if prompt.startswith("so:"):
            return "officer keeps the vault"
        return next(secrets)

    answers, draft = ask_answers(lambda prompt: next(typed), secret, said.append)
    text = "\n".join(said)
    assert "at most 10" in text or "from 1 to 10" in text
    assert "from 1 to 3" in text  # M > N
    assert "already a member" in text
    assert "guessable" in text
    assert "not the same" in text
    assert "The proof failed" in text and "They reconstruct the secret" in text
    assert (answers.threshold, [m.name for m in answers.members]) == (2, ["alice", "bob", "carol"])
    assert draft.proven and answers.autonomous_unlock is False and answers.key_pool_size == 50
    assert answers.second_factor_roles == ()  # "no": no role needs two-step sign-in


def test_answers_saved_without_passphrases_ask_each_person_for_theirs() -> None:
    from kma.cli.setup_questions import ask_missing_passphrases, missing_passphrases
    from kma.setup.answers import check_answers, read_answers

    saved = read_answers(
        'cluster_name = "Acme"\n[site]\nid = "dallas"\n[kma]\nid = "kma-1"\n[security_officer]\nid = "so"\n'
        'name = "Sam"\n[key_split]\nthreshold = 1\n[[key_split.members]]\nname = "alice"\n'
    )
    assert missing_passphrases(saved)
    typed = iter(["alice walks the long pier"] * 2 + ["officer keeps the vault"] * 2)
    said: list[str] = []
    answers = ask_missing_passphrases(saved, lambda prompt: next(typed), said.append)
    check_answers(answers)
    assert answers.members[0].passphrase == "alice walks the long pier"
    assert answers.officer_passphrase == "officer keeps the vault"


def test_a_time_server_answer_is_refused_rather_than_silently_ignored() -> None:
    from kma.setup.answers import read_answers

    with pytest.raises(ValidationFailed, match="uses its machine's clock.*NTP client"):
        read_answers(
            'cluster_name = "Acme"\ntime_server = "ntp.example.com"\n[site]\nid = "dallas"\n[kma]\n'
            'id = "kma-1"\n[security_officer]\nid = "so"\nname = "Sam"\n[key_split]\nthreshold = 1\n'
            '[[key_split.members]]\nname = "alice"\n'
        )
