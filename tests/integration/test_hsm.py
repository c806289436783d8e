"""The master key in a PKCS#11 token (docs/hsm.md), against SoftHSM2 and a real `kma serve`.

Each test makes its own SoftHSM2 (a token folder in its temp dir, SOFTHSM2_CONF pointing at it)
and a KMA whose [hsm] table names that token and a PIN file only this user can read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pkcs11
import pytest
from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass
from pkcs11 import exceptions as p11

from kma.crypto import WrappingKey
from kma.kmip.client import KmipFailure
from kms_client import KmsError
from tests.integration.test_backups import answers as restore_answers
from tests.integration.test_backups import quorum, take_backups
from tests.integration.test_no_key_material_at_rest import files_under, found_in
from tests.integration.test_quorum import creds
from tests.support.agents import demo_passphrase, enroll, events, kmip, service_address
from tests.support.cluster import children
from tests.support.first_setup import ONE_KMA_ANSWERS
from tests.support.kma_process import RunningKma, read_only_db, run_kma
from tests.support.softhsm import PIN, SoftHsm, softhsm

DRIVE = "t10k-dal-01"


@pytest.fixture
def hsm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SoftHsm:
    made = softhsm(tmp_path)
    monkeypatch.setenv("SOFTHSM2_CONF", str(made.conf))  # every `kma` process this test starts
    return made


@pytest.fixture
def hsm_kma(tmp_path: Path, hsm: SoftHsm) -> Iterator[RunningKma]:
    """A demo KMA whose master key is in the token (`kma demo --hsm`)."""
    table = tmp_path / "hsm.toml"
    table.write_text(hsm.table())
    kma = RunningKma.demo_in(tmp_path, hsm=table)
    yield kma
    kma.stop()


def token_session(hsm: SoftHsm, label: str | None = None) -> pkcs11.Session:
    token = pkcs11.lib(hsm.module).get_token(token_label=label or hsm.label)
    return token.open(user_pin=PIN, rw=True)


def drive(kma: RunningKma, tmp: Path) -> Path:
    folder = tmp / "drive"
    enroll(kma, DRIVE, folder, demo_passphrase(kma, DRIVE))
    return folder


def warnings_of(kma: RunningKma) -> list[str]:
    return kma.client().get_status().warnings


def test_set_up_with_an_hsm_puts_a_master_key_in_the_token_that_cannot_be_read_out(
    tmp_path: Path, hsm: SoftHsm
) -> None:
    answers = tmp_path / "answers.toml"
    answers.write_text(ONE_KMA_ANSWERS.format(key_pool_size=5) + hsm.table())
    data_dir = tmp_path / "kma"
    run_kma("init", "--data-dir", str(data_dir), "--answers", str(answers))
    config = (data_dir / "kma.toml").read_text()
    assert "[hsm]" in config and f'token_label = "{hsm.label}"' in config and PIN not in config
    said = run_kma("status", "--data-dir", str(data_dir)).stdout
    assert f"Master key: pkcs11: token '{hsm.label}'" in said and "WARNING: The HSM" not in said
    again = run_kma("init", "--data-dir", str(tmp_path / "second"), "--answers", str(answers), check=False)
    assert again.returncode == 2 and "already has a key labelled 'kma-master-kma-1'" in again.stderr
    hsm.pin_file.write_text("0000\n")
    wrong = run_kma("init", "--data-dir", str(tmp_path / "third"), "--answers", str(answers), check=False)
    assert wrong.returncode == 2 and "refused the PIN (wrong PIN)" in wrong.stderr
    assert not (tmp_path / "third").exists()  # refused before anything was written
    hsm.pin_file.write_text(PIN)

    kma = RunningKma(data_dir, {"users": [{"id": "so", "passphrase": "correct horse battery"}]})
    kma.start()
    try:
        assert not kma.client().get_status().locked
        assert kma.client().get_status().master_key.startswith(f"pkcs11: token '{hsm.label}'")
    finally:
        kma.stop()

    with token_session(hsm) as session:
        master = session.get_key(ObjectClass.SECRET_KEY, KeyType.AES, label="kma-master-kma-1")
        assert master[Attribute.EXTRACTABLE] is False and master[Attribute.NEVER_EXTRACTABLE] is True
        assert master[Attribute.SENSITIVE] is True and master[Attribute.ALWAYS_SENSITIVE] is True
        assert master[Attribute.TOKEN] is True and master[Attribute.WRAP] is False
        with pytest.raises(p11.AttributeSensitive):
            master[Attribute.VALUE]  # the token refuses to give its value
        carrier = session.generate_key(KeyType.AES, 256, template={Attribute.WRAP: True})
        with pytest.raises(p11.KeyUnextractable):
            carrier.wrap_key(master, mechanism=Mechanism.AES_KEY_WRAP_PAD)  # nor to wrap it out
        with pytest.raises(p11.PKCS11Error):  # GCM only: no ECB block oracle for a PIN holder
            master.encrypt(bytes(16), mechanism=Mechanism.AES_ECB)


def test_a_drive_gets_keys_the_token_unwrapped_and_their_material_is_nowhere_else(
    hsm_kma: RunningKma, hsm: SoftHsm, tmp_path: Path
) -> None:
    with kmip(drive(hsm_kma, tmp_path), service_address(hsm_kma)) as agent:
        key_id = agent.create_and_activate("H00001")
        material = agent.get(key_id)
        assert len(material) == 32 and agent.get(key_id) == material

    # Everything in the data dir opens only the outer layer: the token key is needed for the key.
    local = WrappingKey((hsm_kma.data_dir / "unlock.key").read_bytes())
    with read_only_db(hsm_kma) as db:
        blob = db.execute("SELECT autounlock_master FROM kmas").fetchone()[0]
        unlock_key = WrappingKey(local.unwrap("autounlock:kma-dal-1", blob))
        wrapped = db.execute("SELECT material_wrapped FROM keys WHERE id = ?", (key_id,)).fetchone()[0]
    inner = unlock_key.unwrap(f"key:{key_id}", wrapped)
    assert len(inner) == 12 + 32 + 16 and material not in inner

    # The key, and the unlock key, are in no file of the data dir, the token's folder, or any file
    # the KMA holds open.
    process = hsm_kma.process
    assert process is not None
    held = open_files(process.pid)
    files = set(files_under(hsm_kma.data_dir)) | set(files_under(hsm.conf.parent / "softhsm-tokens"))
    files |= {p for p in held if p.is_file()}
    assert hsm_kma.data_dir / "kma.db" in files and any("softhsm-tokens" in str(p) for p in files)
    secrets = {"key": material, "unlock key": unlock_key.raw()}  # neither is anywhere in the clear
    hits = {str(p): found_in(p.read_bytes(), secrets) for p in files}
    assert {p: h for p, h in hits.items() if h} == {}


def open_files(pid: int) -> set[Path]:
    """The files a process holds open now (a descriptor closed while they are listed is skipped)."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:
            continue
        if target.startswith("/"):
            held.add(Path(target))
    return held


def test_a_locked_kma_cannot_use_the_token_until_a_quorum_unlocks_it(
    hsm_kma: RunningKma, tmp_path: Path
) -> None:
    agent_dir = drive(hsm_kma, tmp_path)
    with kmip(agent_dir, service_address(hsm_kma)) as agent:
        key_id = agent.create_and_activate("H00002")
        material = agent.get(key_id)
    so = hsm_kma.client("so")
    kma_id = so.get_status().kma_id
    so.lock_kma(kma_id)
    with kmip(agent_dir, service_address(hsm_kma)) as agent, pytest.raises(KmipFailure, match="locked"):
        agent.get(key_id)
    hsm_kma.restart()  # the lock holds: the unlock key stays shut, so the token key is unused
    assert hsm_kma.client().get_status().locked
    hsm_kma.client("so").unlock_kma(kma_id, credentials=creds(hsm_kma, "alice", "bob", "carol"))
    with kmip(agent_dir, service_address(hsm_kma)) as agent:
        assert agent.get(key_id) == material
        assert len(agent.get(agent.create_and_activate("H00003"))) == 32
    hsm_kma.restart()  # autonomous unlock: the local unlock key, then the token (PIN from its file)
    with kmip(agent_dir, service_address(hsm_kma)) as agent:
        assert agent.get(key_id) == material


def test_a_wrong_pin_or_a_missing_token_stops_the_kma_serving_with_a_clear_warning(
    hsm_kma: RunningKma, hsm: SoftHsm, tmp_path: Path
) -> None:
    agent_dir = drive(hsm_kma, tmp_path)
    with kmip(agent_dir, service_address(hsm_kma)) as agent:
        key_id = agent.create_and_activate("H00004")
        material = agent.get(key_id)
    port = int(hsm_kma.address.rsplit(":", 1)[1])
    hsm_kma.stop()

    hsm.pin_file.write_text("0000\n")
    hsm_kma.start(port)
    status = hsm_kma.client().get_status()
    assert status.locked and any("refused the PIN (wrong PIN)" in w for w in status.warnings)
    said = run_kma("status", "--data-dir", str(hsm_kma.data_dir)).stdout
    assert "WARNING: The HSM holding the master key fails" in said and "wrong PIN" in said
    with kmip(agent_dir, service_address(hsm_kma)) as agent, pytest.raises(KmipFailure, match="locked"):
        agent.get(key_id)  # no fallback to software
    trail = events(hsm_kma, 0, "kma.hsm_unavailable")  # a locked KMA shows no one its trail: read it
    assert trail and "wrong PIN" in trail[-1]["message"] and trail[-1]["condition"] == "error"
    with pytest.raises(KmsError, match="wrong PIN"):  # a quorum cannot unlock it past the token either
        hsm_kma.client("so").unlock_kma("kma-dal-1", credentials=creds(hsm_kma, "alice", "bob", "carol"))
    assert hsm_kma.client().get_status().locked
    hsm_kma.stop()

    hsm.pin_file.write_text(PIN + "\n")
    tokens = hsm.conf.parent / "softhsm-tokens"
    away = tmp_path / "token-taken-away"
    (folder,) = tokens.iterdir()
    folder.rename(away)
    hsm_kma.start(port)
    assert any(f"token '{hsm.label}' is not in" in w for w in warnings_of(hsm_kma))
    assert hsm_kma.client().get_status().locked
    hsm_kma.stop()

    away.rename(folder)
    hsm_kma.start(port)
    assert not [w for w in warnings_of(hsm_kma) if "HSM" in w]
    with kmip(agent_dir, service_address(hsm_kma)) as agent:
        assert agent.get(key_id) == material


def test_a_token_that_disappears_while_serving_stops_the_key_service(
    hsm_kma: RunningKma, hsm: SoftHsm, tmp_path: Path
) -> None:
    agent_dir = drive(hsm_kma, tmp_path)
    with kmip(agent_dir, service_address(hsm_kma)) as agent:
        key_id = agent.create_and_activate("H00005")
        agent.get(key_id)
    (folder,) = (hsm.conf.parent / "softhsm-tokens").iterdir()
    folder.rename(tmp_path / "token-pulled")
    with kmip(agent_dir, service_address(hsm_kma)) as agent:
        with pytest.raises(KmipFailure, match="HSM token 'kma-token' failed"):
            agent.get(key_id)
    assert any("The HSM holding the master key fails" in w for w in warnings_of(hsm_kma))
    refused = hsm_kma.client("auditor").list_audit_events(operation="kmip.get").items
    assert any("HSM" in e.message and e.condition == "error" for e in refused)


def test_backup_and_restore_onto_the_token_that_holds_the_master_key(
    hsm_kma: RunningKma, hsm: SoftHsm, tmp_path: Path
) -> None:
    agent_dir = drive(hsm_kma, tmp_path)
    with kmip(agent_dir, service_address(hsm_kma)) as agent:
        key_id = agent.create_and_activate("H00006")
        material = agent.get(key_id)
    core, database = take_backups(hsm_kma, tmp_path / "offline")
    hsm_kma.stop()
    target = tmp_path / "restored" / "kma"
    plain = restore_answers(tmp_path, core, database, quorum(hsm_kma))

    refused = run_kma("init", "--data-dir", str(target), "--answers", str(plain), check=False)
    assert refused.returncode != 0 and "cannot be restored onto software" in refused.stderr
    assert not target.exists()

    with_hsm = tmp_path / "restore-with-hsm.toml"
    with_hsm.write_text(plain.read_text() + hsm.table(token_label="another-token"))
    refused = run_kma("init", "--data-dir", str(target), "--answers", str(with_hsm), check=False)
    assert refused.returncode == 2 and "token 'another-token' is not in" in refused.stderr
    with_hsm.write_text(plain.read_text() + hsm.table())
    done = run_kma("init", "--data-dir", str(target), "--answers", str(with_hsm), check=False)
    assert done.returncode == 0, done.stderr
    assert "[hsm]" in (target / "kma.toml").read_text()
    restored = RunningKma(target, hsm_kma.demo)
    restored.start()
    try:
        with kmip(agent_dir, service_address(restored)) as agent:
            assert agent.get(key_id) == material
    finally:
        restored.stop()


def test_the_pin_is_in_no_process_argument_environment_log_or_core_file(hsm_kma: RunningKma) -> None:
    """Issue 39, item 8: a serving KMA with an HSM has read its PIN, and holds it in memory only:
    not in any of its processes' arguments or environment, not in its logs, and it makes no core
    file (another process of its user cannot look into it either)."""
    assert hsm_kma.process is not None
    pid = hsm_kma.process.pid
    assert hsm_kma.client().get_status().master_key.startswith("pkcs11")  # it has read its PIN
    limits = Path(f"/proc/{pid}/limits").read_text()
    assert any(
        line.startswith("Max core file size") and line.split()[4:6] == ["0", "0"]
        for line in limits.splitlines()
    )
    for proc in [pid, *children(pid)]:
        for part in ("cmdline", "environ"):
            assert PIN.encode() not in Path(f"/proc/{proc}/{part}").read_bytes(), (proc, part)
    files = files_under(hsm_kma.data_dir)  # its logs, its configuration, its store
    assert hsm_kma.data_dir / "logs" / "kma.log" in files
    assert [f for f in files if PIN.encode() in f.read_bytes()] == []
