"""The set-up service: what `kma init` and the set-up API (the manager's wizard) both run.

`MODES` is the dispatch table of what a set-up can do: a new cluster, a restore from a backup
(kma/setup/restore.py), a new KMA joining an existing cluster (kma/setup/join.py). Each mode
takes its own answers: `Answers`, `RestoreAnswers`, `JoinAnswers`.
`SetupSession` is one uninitialised KMA waiting in set-up mode: it holds the one-time set-up
code, checks the network settings on this machine, drafts and proves the key split in memory,
and finally runs the chosen mode. Nothing is written before that last step.

Wrong set-up codes are counted per source address: after `MAX_WRONG_CODES` an address is locked
out of set-up for `LOCKOUT_SECONDS`, and the code stays what the console shows, so a stranger
cannot keep the installer's code from working. The log says each address's wrong codes until it
is locked out, and once that it is; the audit trail gets one event per address at the end.
"""

from __future__ import annotations

import errno
import hmac
import logging
import secrets
import shutil
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kma.crypto import WrappingKey, fingerprint
from kma.datadir import DataDir
from kma.errors import Conflict, LockedOut, Unauthenticated, ValidationFailed
from kma.services.quorum.key_split import check_split_members
from kma.setup.answers import Answers, check_settings
from kma.setup.join import JoinAnswers
from kma.setup.new_cluster import initialise
from kma.setup.proof import KeySplitDraft, draft_key_split, prove
from kma.setup.restore import RestoreAnswers

log = logging.getLogger(__name__)

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read off a console and typed
CODE_LENGTH = 12  # 60 bits
MAX_WRONG_CODES = 5  # from one address; then that address is locked out of set-up for a while
LOCKOUT_SECONDS = 15 * 60
MOST_ADDRESSES = 1024  # counted one by one; wrong codes from further addresses share one count
OTHER_ADDRESSES = "other addresses"


@dataclass
class WrongCodes:
    """Wrong set-up codes from one source address."""

    tries: int = 0  # all of them, for the audit trail
    failures: int = 0  # towards the lockout; counted afresh after one
    locked_until: float = 0.0


@dataclass(frozen=True)
class Made:
    """What a mode made: where the KMA serves, and its master key if it may serve unlocked at once
    (None: it starts as after a restart, locked until a quorum unlocks it or autonomous unlock does)."""

    management_address: str
    master: WrappingKey | None
    outcome: Any = None  # the engine's own report (a restore's Restored, a join's grant) for `kma init`


@dataclass(frozen=True)
class SetupMode:
    title: str  # as the wizard and `kma init --interactive` offer it
    run: Callable[[DataDir, Any, KeySplitDraft | None, Sequence[tuple[str, str]]], Made]


def _new_cluster(
    data_dir: DataDir, answers: Answers, split: KeySplitDraft | None, refusals: Sequence[tuple[str, str]]
) -> Made:
    return Made(answers.management_address, initialise(data_dir, answers, split=split, refusals=refusals))


def _restore(
    data_dir: DataDir,
    answers: RestoreAnswers,
    split: KeySplitDraft | None,
    refusals: Sequence[tuple[str, str]],
) -> Made:
    from kma.setup.restore import restore_with

    restored = restore_with(data_dir, answers)
    return Made(answers.management_address, restored.master, restored)  # the quorum opened it: unlocked


def _join(
    data_dir: DataDir, answers: JoinAnswers, split: KeySplitDraft | None, refusals: Sequence[tuple[str, str]]
) -> Made:
    from kma.setup.join import join

    grant = join(data_dir, answers)
    return Made(str(grant.kma["management_address"]), None, grant)  # it waits for a quorum to unlock it


MODES: dict[str, SetupMode] = {
    "new_cluster": SetupMode("Create a new cluster", _new_cluster),
    "restore": SetupMode("Restore a KMA from a backup", _restore),
    "join": SetupMode("Join an existing cluster", _join),
}


def answers_mode(text: str) -> str:
    """`mode` in an answers file, read before its tables: each mode's answers have their own
    (`Answers`, `RestoreAnswers`, `JoinAnswers`)."""
    try:
        mode = tomllib.loads(text).get("mode", "new_cluster")
    except tomllib.TOMLDecodeError as exc:
        raise ValidationFailed(f"The answers file is not valid TOML: {exc}.") from None
    return str(mode)


def check_mode(mode: str) -> SetupMode:
    if mode not in MODES:
        raise ValidationFailed(f"This KMA cannot set itself up as '{mode}'; it offers: {', '.join(MODES)}.")
    return MODES[mode]


def run_answers(data_dir: DataDir, answers: Answers, split: KeySplitDraft | None = None) -> None:
    """`kma init`: the whole set-up, from answers that hold every passphrase or with the key split
    already drafted and proven (`--interactive`)."""
    run_mode(data_dir, answers.mode, answers, split)


def run_mode(data_dir: DataDir, mode: str, answers: Any, split: KeySplitDraft | None = None) -> Made:
    """`kma init` for any mode, with that mode's answers."""
    return check_mode(mode).run(data_dir, answers, split, ())


def new_code() -> str:
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return "-".join(raw[i : i + 4] for i in range(0, CODE_LENGTH, 4))


def _normalised(code: str) -> str:
    return "".join(c for c in code.upper() if c.isalnum())


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValidationFailed(f"'{address}' is not HOST:PORT.")
    return host.strip("[]") or "127.0.0.1", int(port)


def check_can_listen(address: str, what: str, own_port: int | None = None) -> None:
    """Refuse an address this machine cannot listen on: a port in use, an address it lacks.

    `own_port`: the port set-up mode itself listens on; the KMA may keep it (it lets it go first).
    """
    from kma.api.listener import listen

    host, port = split_address(address)
    if port == own_port:
        return
    try:
        listen(host, port).close()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ValidationFailed(
                f"{what}: port {port} is already in use on the KMA by another program. Choose another port."
            ) from None
        raise ValidationFailed(
            f"{what}: the KMA cannot listen on {address} ({exc.strerror}). Give one of "
            "the KMA's own addresses."
        ) from None


class SetupSession:
    """An uninitialised KMA's set-up, driven by one installer holding the one-time set-up code."""

    def __init__(
        self,
        data_dir: DataDir,
        certificate_pem: str,
        own_port: int,
        continue_port: int | None,
        announce: Callable[[str], None],
        service_port: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.certificate_pem = certificate_pem  # the temporary one set-up mode serves TLS with
        self.fingerprint = fingerprint(certificate_pem.encode())
        self.own_port = own_port  # set-up mode's management port
        self.continue_port = continue_port  # `kma serve --management-port`: normal mode's port too
        # `kma serve --service-port` (0: picked before set-up): the service listener's port, so the
        # answered service address gets it, and kma.toml, the KMA's entry and the wizard say it.
        self.service_port = service_port
        self.announce = announce
        self.code = new_code()
        self.wrong_codes: dict[str, WrongCodes] = {}  # by source address
        self.draft: KeySplitDraft | None = None
        self.finished = threading.Event()
        self.made: Made | None = None  # once set up: handed to normal mode
        self._uploads: Path | None = None  # the restore's backup files, sent over the set-up connection
        self._lock = threading.Lock()

    def check_code(self, code: str, address: str) -> None:
        """Let the holder of the set-up code in; wrong codes lock out the address they come from."""
        with self._lock:
            if self.finished.is_set():
                raise Conflict("This KMA has been set up; its set-up code no longer works.")
            now = time.monotonic()
            counted = self._counted(address)
            if counted.locked_until > now:
                counted.tries += 1
                raise LockedOut(
                    f"Too many wrong set-up codes: {address} is locked out of set-up; try "
                    f"again in {LOCKOUT_SECONDS // 60} minutes."
                )
            if hmac.compare_digest(_normalised(code), _normalised(self.code)):
                return
            counted.tries += 1
            counted.failures += 1
            left = MAX_WRONG_CODES - counted.failures
            if left > 0:
                log.warning(
                    "a wrong set-up code from %s (%d of %d)", address, counted.failures, MAX_WRONG_CODES
                )
                raise Unauthenticated(
                    f"That is not the set-up code shown on the KMA's console ({left} more "
                    f"{'try' if left == 1 else 'tries'} from this address)."
                )
            counted.failures, counted.locked_until = 0, now + LOCKOUT_SECONDS
            log.warning(
                "%d wrong set-up codes from %s: locked out of set-up for %d minutes",
                MAX_WRONG_CODES,
                address,
                LOCKOUT_SECONDS // 60,
            )
            raise LockedOut(
                f"That is not the set-up code either. After {MAX_WRONG_CODES} wrong codes, "
                f"{address} is locked out of set-up for {LOCKOUT_SECONDS // 60} minutes; the "
                "code on the KMA's console still works from elsewhere."
            )

    def _counted(self, address: str) -> WrongCodes:
        if address not in self.wrong_codes and len(self.wrong_codes) >= MOST_ADDRESSES:
            address = OTHER_ADDRESSES  # memory stays bounded, however many addresses try
        return self.wrong_codes.setdefault(address, WrongCodes())

    def _refusals(self) -> list[tuple[str, str]]:
        """(address, what) for the new KMA's audit trail: one per address that sent wrong codes."""
        return [
            (address, f"{n.tries} wrong set-up code{'s' if n.tries != 1 else ''} from {address}")
            for address, n in self.wrong_codes.items()
            if n.tries
        ]

    def check_network(self, management_address: str, service_address: str) -> None:
        for address, what in (
            (management_address, "The management address"),
            (service_address, "The service address"),
        ):
            if split_address(address)[1] == 0:
                raise ValidationFailed(
                    f"{what} needs a port number (1 to 65535): agents and managers must "
                    "find the KMA where it was set up."
                )
        if split_address(management_address)[1] == split_address(service_address)[1]:
            raise ValidationFailed("The management and service addresses need different ports.")
        check_can_listen(management_address, "The management address", self.own_port)
        check_can_listen(service_address, "The service address", self.own_port)

    def draft_key_split(self, threshold: int, members: Sequence[tuple[str, str]]) -> tuple[str, ...]:
        """Draft the split (replacing any earlier draft); returns the members the proof asks for."""
        check_split_members(threshold, [name for name, _ in members])
        draft = draft_key_split(threshold, members)
        with self._lock:
            self.draft = draft
        return draft.proof_members

    def prove(self, typed: dict[str, str]) -> str:
        if self.draft is None:
            raise Conflict("Set the key split first; the proof checks the key split just set.")
        return prove(self.draft, typed)

    def finish(self, answers: Answers) -> None:
        """A new cluster with the proven key split; after this the set-up code is spent."""
        check_mode(answers.mode)
        if answers.mode != "new_cluster":
            raise ValidationFailed(
                f"A finish sets up a new cluster; mode '{answers.mode}' has its own step "
                f"(POST /api/v1/setup/{answers.mode})."
            )
        check_settings(answers)
        answers = replace(answers, service_address=self._serving_at(answers.service_address))
        self.check_network(answers.management_address, answers.service_address)
        self._run(answers.mode, answers)

    def restore(self, answers: RestoreAnswers) -> None:
        """A restore from the two backup files (uploaded, see `uploads`); the restored split is used."""
        answers = replace(answers, service_address=self._serving_at(answers.service_address))
        self.check_network(answers.management_address, answers.service_address)
        self._run("restore", answers)
        self.discard_uploads()

    def upload_path(self, kind: str, file_name: str) -> Path:
        """Where an uploaded backup file is kept until the restore (a private temporary folder: the
        data directory must stay empty until the restore has checked everything), under the name
        the installer chose it by, so the restore's reasons name the file they know."""
        name = Path(file_name.replace("\\", "/")).name[:120] or kind
        with self._lock:
            if self._uploads is None:
                self._uploads = Path(tempfile.mkdtemp(prefix="kma-setup-uploads-"))
            folder = self._uploads / kind
            shutil.rmtree(folder, ignore_errors=True)  # a file sent again replaces the earlier one
            folder.mkdir()
            return folder / name

    def uploaded(self, kind: str, what: str) -> Path:
        with self._lock:
            sent = (
                list((self._uploads / kind).iterdir())
                if self._uploads and (self._uploads / kind).is_dir()
                else []
            )
        if not sent:
            raise ValidationFailed(f"Send the {what} first.")
        return sent[0]

    def discard_uploads(self) -> None:
        with self._lock:
            if self._uploads is not None:
                shutil.rmtree(self._uploads, ignore_errors=True)
                self._uploads = None

    def join(self, answers: JoinAnswers) -> None:
        """Join an existing cluster; the entry made there for this KMA holds its addresses."""
        self._run("join", answers)

    def _run(self, name: str, answers: Any) -> None:
        mode = check_mode(name)
        with self._lock:
            if self.finished.is_set():
                raise Conflict("This KMA has been set up already.")
            self.made = mode.run(self.data_dir, answers, self.draft, self._refusals())
            self.finished.set()
        log.info("set-up finished: %s", mode.title)

    @property
    def continue_address(self) -> str:
        """Where the management API is once set up: the answered address (or its port override)."""
        assert self.made is not None
        host, port = split_address(self.made.management_address)
        return f"{host}:{port if self.continue_port is None else self.continue_port}"

    def _serving_at(self, service_address: str) -> str:
        """The answered service address, with the port `kma serve --service-port` gave, if any."""
        if self.service_port is None:
            return service_address
        host = service_address.rpartition(":")[0] or "127.0.0.1"
        return f"{host}:{self.service_port}"

    @property
    def continue_service_address(self) -> str:
        """Where agents reach the KMA once set up: as kma.toml has it (a join: as the entry made in
        the cluster had it), with the port `kma serve --service-port` gave, if any."""
        return self._serving_at(self.data_dir.identity().service_address)

    def cluster_fingerprint(self) -> str:
        return fingerprint(self.data_dir.ca_cert.read_bytes())

    def offered(self) -> list[dict[str, Any]]:
        return [{"mode": name, "title": mode.title} for name, mode in MODES.items()]
