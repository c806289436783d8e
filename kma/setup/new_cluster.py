"""First set-up of a new KMA that creates a new cluster (QuickStart, from an answers file).

It makes the cluster CA and this KMA's certificate, a random root secret split M-of-N among
the key split members (each share sealed under that member's passphrase), the master key
(wrapped under the root secret, and under a local unlock key when autonomous unlock is on), the
first site, this KMA and the initial Security Officer, all recorded in the audit trail.

The KMA is made in a staging folder beside the data directory and moved in only once whole, so
a set-up that fails (a setting the store refuses, a full disk) leaves the data directory as it
was and can simply be tried again.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kma.clock import Clock
from kma.crypto import (
    CertifiedKey,
    WrappingKey,
    create_cluster_ca,
    hash_passphrase,
    issue_server_certificate,
)
from kma.crypto.hsm import HsmMasterKey, Token, token_labels
from kma.crypto.hsm_settings import HsmSettings, HsmUnavailable
from kma.datadir import DataDir, Identity, write_private
from kma.domain.actor import Actor
from kma.domain.roles import Role
from kma.errors import Conflict, ValidationFailed
from kma.services.sign_in.second_factor_policy import check_roles as check_second_factor_roles
from kma.services.sign_in.second_factor_policy import describe as describe_second_factor_roles
from kma.services.sign_in.second_factor_policy import policy_row
from kma.setup.answers import Answers, check_key_split, check_settings, read_hsm
from kma.steps import step
from kma.store import Stmt
from kma.vault import row_mac_key, wrap_master_for_root

if TYPE_CHECKING:
    from kma.setup.proof import KeySplitDraft


def initialise(
    data_dir: DataDir,
    answers: Answers,
    clock: Clock | None = None,
    split: KeySplitDraft | None = None,
    refusals: Sequence[tuple[str, str]] = (),
) -> WrappingKey:
    """Create a new cluster in `data_dir`; refuses a directory that already holds a KMA.

    `split`: the key split drafted and proven by the set-up session (the wizard's members typed
    their passphrases there); without it the answers' passphrases draft and prove one here.
    `refusals`: (address, what) of wrong set-up codes before the KMA existed, for its audit trail.
    Returns the new master key, for a set-up that goes on serving at once.
    """
    _check_the_answers(data_dir, answers)
    split = _prove_the_key_split(answers, split)
    staging = DataDir(data_dir.staging("setting-up"))
    try:
        master = _create(staging, answers, clock, split, refusals)
        _move_into_place(data_dir, staging)
    finally:
        shutil.rmtree(staging.root, ignore_errors=True)
    return master


@step("new cluster")
def _check_the_answers(data_dir: DataDir, answers: Answers) -> None:
    check_settings(answers)
    if data_dir.is_initialised() or data_dir.db.exists():
        raise Conflict(f"{data_dir.root} already holds a KMA; choose an empty directory.")


@step("new cluster")
def _prove_the_key_split(answers: Answers, split: KeySplitDraft | None) -> KeySplitDraft:
    from kma.setup.proof import draft_key_split, prove

    if split is None:
        check_key_split(answers.threshold, answers.members)
        split = draft_key_split(answers.threshold, [(m.name, m.passphrase) for m in answers.members])
        prove(split, {m.name: m.passphrase for m in answers.members})
    if split.names != tuple(m.name for m in answers.members) or split.threshold != answers.threshold:
        raise ValidationFailed(
            "The answers name other key split members or another threshold than the "
            "key split that was proven."
        )
    return split


@step("new cluster")
def _move_into_place(data_dir: DataDir, staging: DataDir) -> None:
    data_dir.take_from(staging.root)


def _create(
    data_dir: DataDir,
    answers: Answers,
    clock: Clock | None,
    split: KeySplitDraft,
    refusals: Sequence[tuple[str, str]],
) -> WrappingKey:

    root_secret = split.root_secret  # refuses an unproven draft
    token = _open_the_token(answers.hsm)  # a missing token or wrong PIN stops here
    data_dir.create()
    ca = _issue_the_certificates(data_dir, answers)
    try:
        master = _make_the_master_key(token)
        try:
            return _initialise(data_dir, answers, clock, (root_secret, split.sealed), ca, master, refusals)
        except BaseException:
            if isinstance(master, HsmMasterKey):
                master.destroy()  # the label is free again for the next attempt
            raise
    except HsmUnavailable as exc:
        raise ValidationFailed(str(exc)) from None
    finally:
        if token is not None:
            token.close()  # the vault logs in on its own when `kma serve` unlocks it


@step("new cluster")
def _issue_the_certificates(data_dir: DataDir, answers: Answers) -> CertifiedKey:
    """The cluster CA and this KMA's server certificate, written into the data directory."""
    ca = create_cluster_ca(answers.cluster_name)
    hosts = {
        addr.rpartition(":")[0].strip("[]") for addr in (answers.management_address, answers.service_address)
    }
    server = issue_server_certificate(
        ca, answers.kma_id, sorted(h for h in hosts if h not in ("0.0.0.0", "::"))
    )
    data_dir.ca_cert.parent.mkdir(parents=True, exist_ok=True)
    data_dir.ca_cert.write_bytes(ca.cert_pem)
    data_dir.server_cert.write_bytes(server.cert_pem + ca.cert_pem)
    write_private(data_dir.server_key, server.key_pem)
    return ca


def check_new_token(table: dict[str, Any], kma_id: str) -> list[str]:
    """Before the set-up's last step: the token of `table` ([hsm] of the answers) opens with its
    PIN and has no key under the master key's label yet. Returns the labels of the module's
    tokens; with only `module` given, just those (what the installer may choose from)."""
    if set(table) <= {"module"}:
        try:
            return token_labels(str(table.get("module", "")))
        except HsmUnavailable as exc:
            raise ValidationFailed(str(exc)) from None
    token = _open_token(read_hsm(table, kma_id))
    assert token is not None
    try:
        token.check_key_label_free()
        return token_labels(token.settings.module)
    except HsmUnavailable as exc:
        raise ValidationFailed(str(exc)) from None
    finally:
        token.close()


def _open_token(hsm: HsmSettings | None) -> Token | None:
    try:
        return Token(hsm) if hsm else None
    except HsmUnavailable as exc:
        raise ValidationFailed(str(exc)) from None


@step("new cluster")
def _open_the_token(hsm: HsmSettings | None) -> Token | None:
    return _open_token(hsm)


@step("new cluster")
def _make_the_master_key(token: Token | None) -> WrappingKey:
    if token is None:
        return WrappingKey.generate()
    return HsmMasterKey(token.random(32), token, token.generate_master())


def _initialise(
    data_dir: DataDir,
    answers: Answers,
    clock: Clock | None,
    split: tuple[bytes, dict[str, str]],
    ca: CertifiedKey,
    master: WrappingKey,
    refusals: Sequence[tuple[str, str]],
) -> WrappingKey:
    _write_the_identity(data_dir, answers)
    autounlock = _keep_the_autonomous_unlock_key(data_dir, answers, master)
    _record_the_new_cluster(data_dir, answers, clock, (split, ca, master, autounlock), refusals)
    return master


@step("new cluster")
def _write_the_identity(data_dir: DataDir, answers: Answers) -> None:
    identity = Identity(answers.kma_id, answers.site_id, answers.management_address, answers.service_address)
    data_dir.identity_file.write_text(
        identity.to_toml() + (answers.hsm.to_toml() if answers.hsm else ""), encoding="utf-8"
    )


@step("new cluster")
def _keep_the_autonomous_unlock_key(data_dir: DataDir, answers: Answers, master: WrappingKey) -> bytes | None:
    """With autonomous unlock: this KMA's unlock key file, and the master key wrapped under it."""
    if not answers.autonomous_unlock:
        return None
    local = WrappingKey.generate()
    write_private(data_dir.unlock_key, local.raw())
    return local.wrap(f"autounlock:{answers.kma_id}", master.raw())


@step("new cluster")
def _record_the_new_cluster(
    data_dir: DataDir,
    answers: Answers,
    clock: Clock | None,
    secrets: tuple[tuple[bytes, dict[str, str]], CertifiedKey, WrappingKey, bytes | None],
    refusals: Sequence[tuple[str, str]],
) -> None:
    """The cluster's first rows in one audited commit, then the set-up codes refused before it."""
    from kma.appliance import Appliance
    from kma.audit.record import Condition
    from kma.cluster.store import open_store

    kma = Appliance(data_dir, open_store, clock)
    try:
        kma.commit(
            Actor("installer", "local console", kind="kma"),
            "cluster.create",
            _first_rows(answers, *secrets, kma.clock.now()),
            f"created cluster '{answers.cluster_name}' with KMA '{answers.kma_id}' at site "
            f"'{answers.site_id}'; key split {answers.threshold} of {len(answers.members)}; "
            f"autonomous unlock {'on' if answers.autonomous_unlock else 'off'}; master key "
            + (f"in the HSM {answers.hsm.token_name}" if answers.hsm else "in software")
            + f"; key pool {answers.key_pool_size}; "
            + describe_second_factor_roles(check_second_factor_roles(answers.second_factor_roles)).lower(),
            ("kma", answers.kma_id),
        )
        for address, what in refusals:
            kma.audit(
                Actor("setup", address, kind="kma"),
                "setup.code_refused",
                what,
                condition=Condition.ERROR,
                event_class="security",
            )
    finally:
        kma.close()


def _first_rows(
    answers: Answers,
    split: tuple[bytes, dict[str, str]],
    ca: CertifiedKey,
    master: WrappingKey,
    autounlock: bytes | None,
    now: int,
) -> list[Stmt]:
    """The cluster, its site, this KMA, the first Security Officer and the key split members."""
    from kma.services.integrity.row_macs import SPLIT_MEMBERS, seal
    from kma.services.users import seal_user

    mac_key = row_mac_key(master)
    officer_hash = hash_passphrase(answers.officer_passphrase)
    two_step = policy_row(check_second_factor_roles(answers.second_factor_roles), now, mac_key)
    return [
        *two_step,
        Stmt(
            "INSERT INTO cluster (id, name, created_at, master_wrapped_by_root, ca_cert_pem, "
            "ca_key_wrapped, split_threshold) VALUES (1, ?, ?, ?, ?, ?, ?)",
            (
                answers.cluster_name,
                now,
                wrap_master_for_root(split[0], master),
                ca.cert_pem.decode(),
                master.wrap("cluster-ca-key", ca.key_pem),
                answers.threshold,
            ),
        ),
        Stmt(
            "INSERT INTO sites (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (answers.site_id, answers.site_name, now, now),
        ),
        Stmt(
            "INSERT INTO kmas (id, name, site_id, management_address, service_address, version, "
            "key_pool_size, autounlock_master, master_key, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                answers.kma_id,
                answers.kma_name,
                answers.site_id,
                answers.management_address,
                answers.service_address,
                _version(),
                answers.key_pool_size,
                autounlock,
                "pkcs11" if answers.hsm else "software",
                now,
                now,
            ),
        ),
        Stmt(
            "INSERT INTO users (id, name, roles, passphrase_hash, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                answers.officer_id,
                answers.officer_name,
                str(Role.SECURITY_OFFICER),
                officer_hash,
                now,
                now,
            ),
        ),
        seal_user(mac_key, answers.officer_id, str(Role.SECURITY_OFFICER), 1, officer_hash),
    ] + [
        stmt
        for name, sealed in split[1].items()
        for stmt in (
            Stmt(
                "INSERT INTO key_split_members (name, share_sealed, generation) VALUES (?, ?, 1)",
                (name, sealed),
            ),
            seal(mac_key, SPLIT_MEMBERS, {"name": name, "share_sealed": sealed, "generation": 1}),
        )
    ]


def _version() -> str:
    from kma import __version__

    return __version__
