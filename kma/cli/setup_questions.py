"""`kma init --interactive`: the set-up questions in a terminal, each checked as it is answered.

The same questions, rules and set-up service as the manager's wizard and `kma init --answers`:
each key split member types their own passphrase twice (not echoed) and it must not be
guessable; then the members the proof picks type theirs again, and the set-up goes ahead only
if those reconstruct the secret. `ask` and `secret` are `input` and `getpass` in a terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kma.crypto.hsm import Token
from kma.crypto.hsm_settings import KEYRING_SERVICE, HsmSettings, HsmUnavailable
from kma.domain.roles import Role
from kma.domain.strength import check_strength
from kma.domain.validation import check_id, check_passphrase, check_text
from kma.errors import ValidationFailed
from kma.services.quorum.key_split import MAX_SPLIT_MEMBERS
from kma.setup.answers import DEFAULT_POOL, Answers, SplitMember, check_settings
from kma.setup.proof import KeySplitDraft, draft_key_split, prove
from kma.setup.service import MODES, check_can_listen

Ask = Callable[[str], str]
T = TypeVar("T")


class Questions:
    def __init__(self, ask: Ask, secret: Ask, say: Callable[[str], None]) -> None:
        self.ask, self.secret, self.say = ask, secret, say

    def until_valid(self, question: Callable[[], T]) -> T:
        """Ask again, with the reason, until the answer passes its checks."""
        while True:
            try:
                return question()
            except ValidationFailed as exc:
                self.say(f"  {exc.message}")

    def text(self, prompt: str, check: Callable[[str], object], default: str = "") -> str:
        def question() -> str:
            shown = f"{prompt} [{default}]: " if default else f"{prompt}: "
            value = self.ask(shown).strip() or default
            check(value)
            return value

        return self.until_valid(question)

    def number(self, prompt: str, low: int, high: int, default: int | None = None) -> int:
        def check(value: str) -> None:
            if not value.isdigit() or not low <= int(value) <= high:
                raise ValidationFailed(f"Give a whole number from {low:,} to {high:,}.")

        return int(self.text(prompt, check, "" if default is None else str(default)))

    def yes(self, prompt: str, default: bool) -> bool:
        def check(value: str) -> None:
            if value.lower() not in ("y", "yes", "n", "no"):
                raise ValidationFailed("Answer yes or no.")

        return self.text(prompt, check, "yes" if default else "no").lower().startswith("y")

    def new_passphrase(self, whose: str, strong: bool, user_inputs: list[str]) -> str:
        def question() -> str:
            first = self.secret(f"{whose}: passphrase (not shown): ")
            check_passphrase(first, f"{whose}'s passphrase")
            if strong:
                check_strength(first, f"{whose}'s passphrase", user_inputs)
            if self.secret(f"{whose}: the same passphrase again: ") != first:
                raise ValidationFailed("The two passphrases typed are not the same. Start again.")
            return first

        return self.until_valid(question)


def ask_answers(ask: Ask, secret: Ask, say: Callable[[str], None]) -> tuple[Answers, KeySplitDraft]:
    """Every set-up answer, and the key split drafted and proven from the members' typing."""
    q = Questions(ask, secret, say)
    say("Set up a new KMA. Each answer is checked as you give it; Ctrl-C leaves nothing written.")
    modes = list(MODES)
    mode = q.text(
        f"What to do ({', '.join(modes)})",
        lambda v: v in MODES or _no(f"Choose one of: {', '.join(modes)}."),
        modes[0],
    )
    say("Network")
    management = q.text(
        "Management address (HOST:PORT)",
        lambda v: check_can_listen(v, "The management address"),
        "127.0.0.1:8443",
    )
    service = q.text(
        "Service address for agents (HOST:PORT)",
        lambda v: check_can_listen(v, "The service address"),
        "127.0.0.1:5696",
    )
    say("This KMA and its cluster")
    cluster = q.text("Cluster name", lambda v: check_text(v, "The cluster name", required=True))
    site_id = q.text("Site ID", lambda v: check_id(v, "The site ID"))
    site_name = q.text("Site name", lambda v: check_text(v, "The site name", required=True), site_id)
    kma_id = q.text("KMA ID", lambda v: check_id(v, "The KMA ID"))
    kma_name = q.text("KMA name", lambda v: check_text(v, "The KMA name", required=True), kma_id)
    say(
        f"Key split: N members (at most {MAX_SPLIT_MEMBERS}) each hold a passphrase; any M of them "
        "together form the quorum that unlocks the KMA and approves sensitive changes."
    )
    count = q.number("How many members (N)", 1, MAX_SPLIT_MEMBERS, 3)
    threshold = q.number(f"How many of them form the quorum (M, 1 to {count})", 1, count, min(2, count))
    members: list[tuple[str, str]] = []
    for n in range(1, count + 1):
        say(f"Member {n} of {count}: only this member at the keyboard now.")
        name = q.text(f"Member {n}'s name", _new_member_name([name for name, _ in members]))
        members.append((name, q.new_passphrase(name, strong=True, user_inputs=[name])))
    draft = draft_key_split(threshold, members)
    say(
        "Proof: before anything is written, " + ", ".join(draft.proof_members) + " type their "
        "passphrases again; together they must reconstruct the secret."
    )

    def proof() -> str:
        return prove(draft, {name: secret(f"{name}: passphrase again: ") for name in draft.proof_members})

    say(f"  They reconstruct the secret (check {q.until_valid(proof)}).")
    say("The initial Security Officer")
    officer_id = q.text("User ID", lambda v: check_id(v, "The Security Officer's user ID"), "so")
    officer_name = q.text("Name", lambda v: check_text(v, "The Security Officer's name", required=True))
    officer_passphrase = q.new_passphrase(officer_id, strong=False, user_inputs=[])
    autonomous, two_step = _ask_unlock_and_sign_in(q, say)
    pool = q.number("Key pool size (keys made ahead so issuing never waits)", 0, 100_000, DEFAULT_POOL)
    say("Master key: in software, or in a hardware security module (PKCS#11 token; docs/hsm.md).")
    hsm = ask_hsm(q, kma_id) if q.yes("Master key in an HSM", False) else None
    answers = Answers(
        cluster_name=cluster,
        site_id=site_id,
        site_name=site_name,
        kma_id=kma_id,
        kma_name=kma_name,
        management_address=management,
        service_address=service,
        officer_id=officer_id,
        officer_name=officer_name,
        officer_passphrase=officer_passphrase,
        threshold=threshold,
        members=tuple(SplitMember(name, "") for name, _ in members),
        autonomous_unlock=autonomous,
        key_pool_size=pool,
        mode=mode,
        hsm=hsm,
        second_factor_roles=(str(Role.SECURITY_OFFICER),) if two_step else (),
    )
    check_settings(answers)
    return answers, draft


def _ask_unlock_and_sign_in(q: Questions, say: Callable[[str], None]) -> tuple[bool, bool]:
    """Autonomous unlock (off by default) and two-step sign-in of Security Officers (on)."""
    say(
        "Autonomous unlock: off is safer (a restarted KMA waits locked until a quorum unlocks it); on "
        "means a restarted KMA serves at once, without a quorum."
    )
    autonomous = q.yes("Autonomous unlock", False)
    say(
        "Two-step sign-in: a Security Officer then signs in with a code from an authenticator app as "
        "well as the passphrase, and sets it up at the first sign-in."
    )
    return autonomous, q.yes("Require two-step sign-in of Security Officers", True)


def ask_hsm(q: Questions, kma_id: str) -> HsmSettings:
    """The token's module, its label or serial, and where the PIN is; the token is opened with them
    at once, so a wrong path, token or PIN is told here (the PIN itself is never asked or kept)."""

    def question() -> HsmSettings:
        module = q.text("PKCS#11 module (path of the token's library)", _existing_file)
        token = q.text("Token label (or serial:NUMBER)", lambda v: check_text(v, "The token", required=True))
        pin = q.text(
            f"User PIN: a file only this user can read, or keyring:NAME (OS keyring, service "
            f"'{KEYRING_SERVICE}')",
            lambda v: check_text(v, "Where the PIN is", required=True),
        )
        serial = token.removeprefix("serial:") if token.startswith("serial:") else ""
        keyring = pin.removeprefix("keyring:") if pin.startswith("keyring:") else ""
        settings = HsmSettings(
            module=module,
            key_label=f"kma-master-{kma_id}",
            token_label="" if serial else token,
            token_serial=serial,
            pin_file="" if keyring else pin,
            pin_keyring=keyring,
        )
        try:
            Token(settings).close()
        except HsmUnavailable as exc:
            raise ValidationFailed(f"{exc} Give the HSM's settings again.") from None
        return settings

    return q.until_valid(question)


def _existing_file(path: str) -> None:
    if not Path(path).is_file():
        raise ValidationFailed(f"There is no file {path}.")


def ask_missing_passphrases(answers: Answers, secret: Ask, say: Callable[[str], None]) -> Answers:
    """Answers saved without passphrases (the wizard can save them so): each person types theirs."""
    q = Questions(secret, secret, say)
    members = tuple(
        m
        if m.passphrase
        else SplitMember(m.name, q.new_passphrase(m.name, strong=True, user_inputs=[m.name]))
        for m in answers.members
    )
    officer = answers.officer_passphrase or q.new_passphrase(answers.officer_id, strong=False, user_inputs=[])
    return Answers(**{**answers.__dict__, "members": members, "officer_passphrase": officer})


def missing_passphrases(answers: Answers) -> bool:
    return not answers.officer_passphrase or any(not m.passphrase for m in answers.members)


def _new_member_name(taken: list[str]) -> Callable[[str], None]:
    def check(name: str) -> None:
        check_id(name, "A key split member's name")
        if name in taken:
            raise ValidationFailed(f"'{name}' is already a member; each member has their own name.")

    return check


def _no(message: str) -> bool:
    raise ValidationFailed(message)
