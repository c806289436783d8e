"""What the set-up wizard gathers, and its calls to a KMA in set-up mode (no Qt: worker side).

The answers are exactly those of `kma init --answers` (kma/setup/new_cluster.py): `finish_body` is what
the set-up API takes, `to_toml` the answers file for a later headless run, without any passphrase
(each person types their own then). Passphrases live here only as long as a step needs them.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import kms_client
from app.session.profiles import ConnectionProfile
from app.session.sign_in import SignedIn, sign_in
from kms_client.setup import BackupPair, SetupClient, SetUpKma
from kms_client.trust import same_fingerprint

MAX_MEMBERS = 10  # the key split's N, as the KMA enforces it
MIN_STRENGTH = 3  # zxcvbn's "safely unguessable", as the KMA enforces it for key split members
ID_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ID_REASON = "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
STRENGTH_WORDS = (
    "Too guessable",
    "Very guessable",
    "Somewhat guessable",
    "Safely unguessable",
    "Very unguessable",
)
BACK_ONLINE_SECONDS = 30  # how long the new KMA may take to serve after set-up mode hands over


@dataclass(frozen=True)
class Strength:
    score: int  # 0..4
    words: str
    hint: str

    @property
    def enough(self) -> bool:
        return self.score >= MIN_STRENGTH


def strength(passphrase: str, user_inputs: list[str]) -> Strength:
    from zxcvbn import zxcvbn

    if not passphrase:
        return Strength(0, STRENGTH_WORDS[0], "")
    result = zxcvbn(passphrase[:100], user_inputs=user_inputs)
    feedback = result["feedback"]
    hint = feedback.get("warning") or " ".join(feedback.get("suggestions", []))
    return Strength(result["score"], STRENGTH_WORDS[result["score"]], hint)


def id_problem(value: str, what: str) -> str:
    return "" if ID_RULE.fullmatch(value) else f"{what} {ID_REASON}."


def key_split_problem(members: int, threshold: int) -> str:
    """Why N members and threshold M cannot be a key split, or ''."""
    if members < 1:
        return "The key split needs at least one member."
    if members > MAX_MEMBERS:
        return f"A key split has at most {MAX_MEMBERS} members, not {members}."
    if threshold < 1:
        return "The threshold M must be at least 1: a quorum of nobody would protect nothing."
    if threshold > members:
        return f"The threshold M ({threshold}) cannot be more than the number of members N ({members})."
    return ""


def key_split_caution(members: int, threshold: int) -> str:
    """A caution for a key split that is allowed but weak, or ''."""
    if threshold == 1 and members > 0:
        return (
            "Caution: with M = 1 one member alone unlocks a KMA and approves every protected change, "
            "with nobody else to check it. Choose at least 2 unless that is what you mean."
        )
    return ""


@dataclass
class SetupAnswers:
    address: str = ""
    trust: kms_client.Trust | None = None
    code: str = ""
    modes: list[dict[str, str]] = field(default_factory=list)
    service_port: int | None = None  # the port the KMA will serve agents on, when it fixes it
    management_address: str = ""
    service_address: str = ""
    mode: str = "new_cluster"
    cluster_name: str = ""
    site_id: str = ""
    site_name: str = ""
    kma_id: str = ""
    kma_name: str = ""
    threshold: int = 2
    member_count: int = 3
    members: list[str] = field(default_factory=list)
    proof_members: list[str] = field(default_factory=list)
    proof_check: str = ""
    officer_id: str = "so"
    officer_name: str = ""
    officer_passphrase: str = ""  # until the wizard has signed the officer in
    autonomous_unlock: bool = False
    second_factor_for_officers: bool = True  # Security Officers sign in with a second factor
    key_pool_size: int = 1000
    hsm: dict[str, str] = field(default_factory=dict)  # module, token_label, pin_file: empty for software
    made: SetUpKma | None = None
    backup: BackupPair | None = None  # a restore's files, as the KMA read them

    def client(self) -> SetupClient:
        assert self.trust is not None
        return SetupClient(self.address, self.trust, self.code)

    def finish_body(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "cluster_name": self.cluster_name,
            "site": {"id": self.site_id, "name": self.site_name or self.site_id},
            "kma": {
                "id": self.kma_id,
                "name": self.kma_name or self.kma_id,
                "management_address": self.management_address,
                "service_address": self.service_address,
            },
            "security_officer": {
                "id": self.officer_id,
                "name": self.officer_name,
                "passphrase": self.officer_passphrase,
            },
            "threshold": self.threshold,
            "members": list(self.members),
            "autonomous_unlock": self.autonomous_unlock,
            "second_factor_roles": self.second_factor_roles(),
            "key_pool_size": self.key_pool_size,
            "hsm": dict(self.hsm) or None,
        }

    def to_toml(self) -> str:
        """The answers file for `kma init --answers`, without passphrases: run in a terminal, it
        asks each person for their own."""

        def q(value: str) -> str:
            return json.dumps(value)  # a JSON string is a valid TOML basic string

        members = "".join(f"[[key_split.members]]\nname = {q(m)}\n" for m in self.members)
        return (
            f"# Answers for `kma init --answers FILE`, saved by the set-up wizard on {date.today()}.\n"
            "# No passphrases: `kma init` asks each key split member and the Security Officer for theirs.\n"
            f"mode = {q(self.mode)}\ncluster_name = {q(self.cluster_name)}\n"
            f"autonomous_unlock = {str(self.autonomous_unlock).lower()}\n"
            f"second_factor_roles = {json.dumps(self.second_factor_roles())}\n"
            f"key_pool_size = {self.key_pool_size}\n\n[site]\nid = {q(self.site_id)}\n"
            f"name = {q(self.site_name or self.site_id)}\n\n[kma]\nid = {q(self.kma_id)}\n"
            f"name = {q(self.kma_name or self.kma_id)}\nmanagement_address = {q(self.management_address)}\n"
            f"service_address = {q(self.service_address)}\n\n[security_officer]\nid = {q(self.officer_id)}\n"
            f"name = {q(self.officer_name)}\n\n[key_split]\nthreshold = {self.threshold}\n{members}"
            + ("\n[hsm]\n" + "".join(f"{k} = {q(v)}\n" for k, v in self.hsm.items()) if self.hsm else "")
        )

    def second_factor_roles(self) -> list[str]:
        """The answers' `second_factor_roles`: the roles that sign in with a second factor."""
        return ["security_officer"] if self.second_factor_for_officers else []

    def forget_passphrases(self) -> None:
        self.officer_passphrase = ""


# -- worker side: each runs inside a background operation ---------------------------------------


def connect(address: str) -> tuple[kms_client.Trust, dict[str, Any]]:
    """First contact with a KMA in set-up mode: its temporary certificate, and what it offers.
    Raises `NotFound` (the set-up API is not there) for a KMA that is set up already."""
    trust = kms_client.Trust.fetch(address)
    with SetupClient(address, trust, "") as setup:
        return trust, setup.state()


def sign_in_when_serving(answers: SetupAnswers) -> tuple[SignedIn, ConnectionProfile]:
    """Sign the new Security Officer in once the KMA serves normally, trusting its new cluster CA
    only if it is the one set-up reported (no second trust-on-first-use question)."""
    assert answers.made is not None
    address = answers.made.management_address
    host = address.rpartition(":")[0]
    if host in ("0.0.0.0", "::", "[::]"):  # listens everywhere: reach it where the wizard did
        address = f"{answers.address.rpartition(':')[0]}:{address.rpartition(':')[2]}"
    deadline = time.monotonic() + BACK_ONLINE_SECONDS
    temporary = answers.trust.fingerprint if answers.trust else ""
    while True:  # until set-up mode has handed over: its temporary certificate, then nothing, then this
        try:
            trust = kms_client.Trust.fetch(address)
            if not kms_client.trust.same_fingerprint(trust.fingerprint, temporary):
                break
        except (kms_client.KmaUnreachable, kms_client.ApiError):
            pass
        if time.monotonic() > deadline:
            raise kms_client.KmaUnreachable(
                f"The new KMA did not start serving at {address} within "
                f"{BACK_ONLINE_SECONDS} s; its console says why."
            )
        time.sleep(0.3)
    if not kms_client.trust.same_fingerprint(trust.fingerprint, answers.made.ca_fingerprint):
        raise kms_client.TrustError(
            f"The KMA at {address} now shows CA {trust.fingerprint}, not "
            f"{answers.made.ca_fingerprint}, which its set-up made."
        )
    profile = ConnectionProfile(
        name=answers.cluster_name,
        address=address,
        user_id=answers.officer_id,
        ca_fingerprint=trust.fingerprint,
        ca_pem=trust.ca_pem,
    )
    return sign_in(profile, answers.officer_passphrase), profile


ORIGINAL_PROBE_SECONDS = 3.0  # a KMA that does not answer this quickly is taken for gone


def serving_originals(profiles: list[ConnectionProfile], ca_fingerprint: str) -> list[str]:
    """Worker: the KMAs of the backup's cluster (same CA) that the manager knows of and that answer
    now, each as "KMA ID at HOST:PORT". A restore is for a dead machine: one of these may be the
    original, still serving keys."""
    found: list[str] = []
    for profile in profiles:
        if not profile.ca_fingerprint or not same_fingerprint(profile.ca_fingerprint, ca_fingerprint):
            continue
        for address in dict.fromkeys([profile.address, *(k.address for k in profile.kmas)]):
            try:
                client = kms_client.KmsClient(
                    address,
                    ca_pem=profile.ca_pem or None,
                    ca_fingerprint=ca_fingerprint,
                    timeout=ORIGINAL_PROBE_SECONDS,
                )
                with client:
                    status = client.get_status()
            except (kms_client.KmsError, OSError):
                continue
            seen = f"{status.kma_id} at {address}"
            if seen not in found:
                found.append(seen)
    return found
