"""A cluster of a software KMA and a KMA whose master key is in its own HSM (docs/hsm.md#clusters),
with real `kma serve` processes, each running its own rqlited, and a SoftHSM2 token in a temp dir.

The HSM KMA joins with the wrapped transfer: its token makes a key pair for the join, the cluster's
master key comes back wrapped to it and is unwrapped inside the token; it is in clear nowhere on the
joining side. Keys made on either KMA are served by the other; a lock and a quorum unlock of the
HSM KMA; the topology says where each KMA's master key is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kma.crypto import WrappingKey
from kma.kmip.client import KmipClient, KmipFailure
from kms_client import KmsError, PendingQuorumOp
from tests.integration.test_backups import answers as restore_answers
from tests.integration.test_backups import quorum, take_backups
from tests.integration.test_kma_join_init import init_join, passphrase_in
from tests.integration.test_no_key_material_at_rest import files_under, found_in
from tests.integration.test_quorum import creds
from tests.integration.test_quorum_cli import kma_cli, secret_file
from tests.support.agents import demo_passphrase, enroll, kmip, service_address
from tests.support.cluster import BINARY, first_node, replica
from tests.support.kma_process import RunningKma, run_kma
from tests.support.ports import free_port
from tests.support.softhsm import PIN, SoftHsm, softhsm
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")

JOINING = "kma-bos-1"
DRIVE = "t10k-dal-01"


@pytest.fixture
def hsm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SoftHsm:
    made = softhsm(tmp_path, label="kma-boston")
    monkeypatch.setenv("SOFTHSM2_CONF", str(made.conf))  # every `kma` process this test starts
    return made


def add_entry(first: RunningKma, tmp: Path) -> str:
    """The joining KMA's entry, approved by a quorum; its one-time KMA passphrase."""
    addresses = {name: f"127.0.0.1:{free_port()}" for name in ("management", "service", "raft")}
    cred_file = secret_file(tmp, "creds", "\n".join(f"{m} {p}" for m, p in creds(first, "alice")))
    code, out, err = kma_cli(
        first,
        tmp,
        "so",
        "cluster",
        "add-kma",
        JOINING,
        "--site",
        "boston",
        "--management-address",
        addresses["management"],
        "--service-address",
        addresses["service"],
        "--raft-address",
        addresses["raft"],
        "--credentials-file",
        cred_file,
    )
    assert code == 0 and "Pending quorum operation" in out, err
    op_id = out.split("Pending quorum operation ", 1)[1].split(":", 1)[0]
    passphrases = {m["name"]: m["passphrase"] for m in first.demo["key_split"]["members"]}
    first.client("qm1").approve_quorum_operation(op_id, "bob", passphrases["bob"])
    approved = first.client("qm2").approve_quorum_operation(op_id, "carol", passphrases["carol"])
    assert approved.state == "executed"
    return passphrase_in(out)


def join_answers(tmp: Path, first: RunningKma, passphrase: str, hsm: SoftHsm) -> Path:
    answers = tmp / "answers-join.toml"
    answers.write_text(
        f'mode = "join"\n[join]\nkma = "{first.address}"\nca_fingerprint = "{first.fingerprint}"\n'
        f'kma_id = "{JOINING}"\npassphrase = "{passphrase}"\n'
        f'rqlite_http_address = "127.0.0.1:{free_port()}"\n' + hsm.table(),
        encoding="utf-8",
    )
    return answers


TOKEN_CHECK = """
import json, sys
import pkcs11
from pkcs11 import Attribute, KeyType, ObjectClass
from pkcs11 import exceptions as p11
with pkcs11.lib(sys.argv[1]).get_token(token_label=sys.argv[2]).open(user_pin=sys.argv[3]) as session:
    key = session.get_key(ObjectClass.SECRET_KEY, KeyType.AES, label=sys.argv[4])
    try:
        key[Attribute.VALUE]
        value = "read"
    except p11.AttributeSensitive:
        value = "refused"
    rsa = list(session.get_objects({Attribute.KEY_TYPE: KeyType.RSA}))
    print(json.dumps({"sensitive": key[Attribute.SENSITIVE], "extractable": key[Attribute.EXTRACTABLE],
                      "value": value, "rsa_objects": len(rsa)}))
"""


def in_token(hsm: SoftHsm, token_label: str, script: str, key_label: str) -> str:
    """What `script` prints, run on the token in a process of its own (SoftHSM2 reads SOFTHSM2_CONF
    once per process, and this test's token folder is its own)."""
    asked = [sys.executable, "-c", script, hsm.module, token_label, PIN, key_label]
    return subprocess.run(asked, check=True, capture_output=True, text=True).stdout


def token_objects(hsm: SoftHsm, token_label: str | None = None) -> dict[str, object]:
    """The joined (or restored) KMA's key object as the token reports it."""
    return dict(json.loads(in_token(hsm, token_label or hsm.label, TOKEN_CHECK, f"kma-master-{JOINING}")))


def cluster_master_key(first: RunningKma) -> bytes:
    """The cluster's master key, as the software first KMA holds it (its autonomous unlock)."""
    local = WrappingKey((first.data_dir / "unlock.key").read_bytes())
    with replica(first) as db:
        blob = db.execute("SELECT autounlock_master FROM kmas WHERE id = 'kma-dal-1'").fetchone()[0]
    return local.unwrap("autounlock:kma-dal-1", blob)


def master_keys(kma: RunningKma) -> dict[str, str | None]:
    topology = kma.client("so").get_topology()
    return {k.id: k.master_key for site in topology.sites for k in site.kmas}


def hsm_kma_joined(first: RunningKma, tmp: Path, hsm: SoftHsm) -> tuple[Path, RunningKma]:
    """A drive enrolled through the first KMA (before the join, which restarts the first's rqlited),
    then a KMA whose token is to hold the cluster's master key joined to it, started: the drive's
    folder and that KMA."""
    agent_dir = tmp / "drive"
    enroll(first, DRIVE, agent_dir, demo_passphrase(first, DRIVE))
    passphrase = add_entry(first, tmp)
    new_dir = tmp / "b" / "kma"
    joined = run_kma(
        "init",
        "--data-dir",
        str(new_dir),
        "--answers",
        str(join_answers(tmp, first, passphrase, hsm)),
        check=False,
    )
    assert joined.returncode == 0, joined.stdout + joined.stderr
    second = RunningKma(new_dir, first.demo, None)
    second.start()
    return agent_dir, second


def test_an_hsm_kma_joins_a_software_cluster_with_the_master_key_wrapped_to_its_token(
    tmp_path: Path, hsm: SoftHsm
) -> None:
    first, _ = first_node(tmp_path / "a")
    second: RunningKma | None = None
    try:
        passphrase = add_entry(first, tmp_path)
        new_dir = tmp_path / "b" / "kma"
        answers = join_answers(tmp_path, first, passphrase, hsm)

        # When the new machine joins with [hsm]: its token receives the cluster's master key
        joined = run_kma("init", "--data-dir", str(new_dir), "--answers", str(answers), check=False)
        said = joined.stdout + joined.stderr
        assert joined.returncode == 0 and f"as KMA '{JOINING}'" in said, said
        assert 'holds = "cluster-master-key"' in (new_dir / "kma.toml").read_text()
        # Its key object cannot be read out; the join's key pair, a session object, is gone.
        assert token_objects(hsm) == {
            "sensitive": True,
            "extractable": False,
            "value": "refused",
            "rsa_objects": 0,
        }

        second = RunningKma(new_dir, first.demo, None)
        second.start()
        assert second.client().get_status().locked  # it waits for a quorum, as any joined KMA
        unlocked = second.client("so").unlock_kma(JOINING, credentials=creds(first, "alice", "bob", "carol"))
        assert not isinstance(unlocked, PendingQuorumOp) and not unlocked.locked
        assert second.client().get_status().master_key.startswith("pkcs11: token 'kma-boston'")

        # Then a key made on either KMA is served by the other, the same material
        agent_dir = tmp_path / "drive"
        enroll(first, DRIVE, agent_dir, demo_passphrase(first, DRIVE))
        with kmip(agent_dir, service_address(first)) as agent:
            made_on_first = agent.create_and_activate("C00001")
            material_first = agent.get(made_on_first)
        with kmip(agent_dir, service_address(second)) as agent:
            # unwrapped by the token, once the first KMA's agent-path write has reached the cluster
            served = wait_until(lambda: _get(agent, made_on_first), 15.0, "the key on the HSM KMA")
            assert served == material_first
            made_on_second = wait_until(lambda: _create(agent, "C00002"), 30.0, "the HSM KMA's key pool")
            material_second = agent.get(made_on_second)
        with kmip(agent_dir, service_address(first)) as agent:
            # the token's blob, opened in software
            served = wait_until(lambda: _get(agent, made_on_second), 15.0, "the key on the first KMA")
            assert served == material_second

        # And the topology (both KMAs answer alike) says where each master key is
        expected = {"kma-dal-1": "software", JOINING: "pkcs11"}
        assert wait_until(lambda: master_keys(first) == expected, 10.0, "the joined KMA's backend")
        assert master_keys(second) == expected
        code, out, err = kma_cli(first, tmp_path, "so", "cluster", "status")
        assert code == 0 and "master key in HSM" in out and "master key in software" in out, err

        # A lock through the first KMA stops the HSM KMA serving; a quorum unlocks it again
        first.client("so").lock_kma(JOINING)
        wait_until(lambda: second.client().get_status().locked, 5.0, "the HSM KMA locked through the first")
        with kmip(agent_dir, service_address(second)) as agent, pytest.raises(KmipFailure, match="locked"):
            agent.get(made_on_first)
        second.client("so").unlock_kma(JOINING, credentials=creds(first, "alice", "bob", "carol"))
        with kmip(agent_dir, service_address(second)) as agent:
            assert agent.get(made_on_first) == material_first

        # The cluster's master key is in clear nowhere on the joining side: not in what the join
        # wrote or printed, its data dir, its token's files, nor the answers file.
        master = cluster_master_key(first)
        files = files_under(new_dir) + files_under(hsm.conf.parent / "softhsm-tokens") + [answers]
        hits = {str(p): found_in(p.read_bytes(), {"master key": master}) for p in files}
        assert {p: h for p, h in hits.items() if h} == {}
        assert found_in(said.encode(), {"master key": master}) == []
        # Nor can autonomous unlock put it on the HSM KMA's disk under a local file key
        with pytest.raises(KmsError, match="holds the cluster's master key in its HSM"):
            second.client("so").set_autonomous_unlock(True, credentials=creds(first, "alice", "bob"))
    finally:
        if second is not None:
            second.stop()
        first.stop()


def _create(agent: KmipClient, volser: str) -> str | None:
    try:
        return agent.create_and_activate(volser)
    except KmipFailure:
        return None  # its pool is still filling


def _get(agent: KmipClient, key_id: str) -> bytes | None:
    try:
        return agent.get(key_id)
    except KmipFailure:
        return None  # not replicated here yet


def test_an_hsm_kma_becomes_a_first_node_and_a_software_kma_joins_it(tmp_path: Path, hsm: SoftHsm) -> None:
    table = tmp_path / "hsm.toml"
    table.write_text(hsm.table())
    first = RunningKma.demo_in(tmp_path / "a", hsm=table)
    second: RunningKma | None = None
    try:
        agent_dir = tmp_path / "drive"
        enroll(first, DRIVE, agent_dir, demo_passphrase(first, DRIVE))
        with kmip(agent_dir, service_address(first)) as agent:
            before = agent.create_and_activate("B00001")
            material = agent.get(before)
        first.stop()
        converted = run_kma(
            "convert-to-cluster",
            "--data-dir",
            str(first.data_dir),
            "--raft-address",
            f"127.0.0.1:{free_port()}",
            check=False,
        )
        assert converted.returncode == 0, converted.stdout + converted.stderr

        # When it starts, its store is sealed for the cluster: the master key now in its token only,
        # and autonomous unlock off (it would keep the key on disk), so a quorum unlocks it
        first.start()
        assert first.client().get_status().locked
        config = (first.data_dir / "kma.toml").read_text()
        assert 'key_label = "kma-master-kma-dal-1-cluster"' in config
        assert 'holds = "cluster-master-key"' in config
        assert not (first.data_dir / "unlock.key").exists()
        first.client("so").unlock_kma("kma-dal-1", credentials=creds(first, "alice", "bob", "carol"))
        with kmip(agent_dir, service_address(first)) as agent:
            assert agent.get(before) == material  # sealed again, opened by the token

        # An HSM KMA cannot join through it: its token never gives the master key out (the KMA
        # passphrase is not spent)
        passphrase = add_entry(first, tmp_path)
        new_dir = tmp_path / "b" / "kma"
        refused = run_kma(
            "init",
            "--data-dir",
            str(new_dir),
            "--answers",
            str(join_answers(tmp_path, first, passphrase, hsm)),
            check=False,
        )
        assert refused.returncode != 0 and "cannot hand on the cluster's master key" in refused.stderr
        assert not new_dir.exists()

        # And a software KMA joins it: a key from before the conversion, and new ones, on both
        code, said = init_join(
            tmp_path,
            new_dir,
            first.address,
            first.fingerprint,
            JOINING,
            passphrase,
            rqlite_http=f"127.0.0.1:{free_port()}",
        )
        assert code == 0, said
        second = RunningKma(new_dir, first.demo, None)
        second.start()
        second.client("so").unlock_kma(JOINING, credentials=creds(first, "alice", "bob", "carol"))
        with kmip(agent_dir, service_address(second)) as agent:
            assert wait_until(lambda: _get(agent, before), 15.0, "the key on the software KMA") == material
            made_on_second = wait_until(lambda: _create(agent, "B00002"), 30.0, "the software KMA's key pool")
            material_second = agent.get(made_on_second)
        with kmip(agent_dir, service_address(first)) as agent:
            served = wait_until(lambda: _get(agent, made_on_second), 15.0, "the key on the HSM KMA")
            assert served == material_second
        expected = {"kma-dal-1": "pkcs11", JOINING: "software"}
        assert wait_until(lambda: master_keys(second) == expected, 10.0, "the backends")
    finally:
        if second is not None:
            second.stop()
        first.stop()


def test_an_hsm_kmas_backups_restore_onto_its_token_a_new_token_or_software_under_the_quorum(
    tmp_path: Path, hsm: SoftHsm
) -> None:
    # Given a KMA whose token holds the cluster's master key, serving a key it made
    first, _ = first_node(tmp_path / "a")
    second: RunningKma | None = None
    try:
        agent_dir, second = hsm_kma_joined(first, tmp_path, hsm)
        second.client("so").unlock_kma(JOINING, credentials=creds(first, "alice", "bob", "carol"))
        with kmip(agent_dir, service_address(second)) as agent:
            key_id = wait_until(lambda: _create(agent, "R00001"), 30.0, "the HSM KMA's key pool")
            material = agent.get(key_id)

        # When it takes the core security backup and a database backup
        core, database = take_backups(second, tmp_path / "offline")
        master = cluster_master_key(first)
    finally:
        if second is not None:
            second.stop()
        first.stop()
    # (its backups hold the cluster's master key only wrapped, as a software KMA's do)
    assert found_in(core.read_bytes() + database.read_bytes(), {"master key": master}) == []
    members = quorum(first)

    # Then the quorum restores them onto software: the key split escrows the cluster's master key
    done = restore_into(tmp_path / "software", core, database, members)
    assert (
        "Master key: in software (the KMA that made the backup held it in its HSM token 'kma-boston')" in done
    )
    assert serves(tmp_path / "software" / "kma", first, agent_dir, key_id) == material

    # ... onto the token that holds it, with autonomous unlock off (it would put the key on disk)
    with_token = hsm.table()
    refused = restore_into(tmp_path / "token-autounlock", core, database, members, with_token, check=False)
    assert "set autonomous_unlock = false" in refused
    assert not (tmp_path / "token-autounlock" / "kma").exists()
    done = restore_into(tmp_path / "token", core, database, members, with_token, autonomous_unlock=False)
    assert "Master key: in the HSM token 'kma-boston'" in done
    assert 'holds = "cluster-master-key"' in (tmp_path / "token" / "kma" / "kma.toml").read_text()
    assert serves(tmp_path / "token" / "kma", first, agent_dir, key_id, unlock=True) == material

    # ... and onto a new token, which receives it as a joining KMA's does: not extractable, and in
    # clear in none of its files
    hsm.add_token("kma-replacement")
    with_new = hsm.table(token_label="kma-replacement")
    done = restore_into(tmp_path / "new-token", core, database, members, with_new, autonomous_unlock=False)
    assert "Master key: in the HSM token 'kma-replacement'" in done
    assert token_objects(hsm, "kma-replacement") == {
        "sensitive": True,
        "extractable": False,
        "value": "refused",
        "rsa_objects": 0,
    }
    files = files_under(tmp_path / "new-token") + files_under(hsm.conf.parent / "softhsm-tokens")
    assert {str(p): h for p in files if (h := found_in(p.read_bytes(), {"master key": master}))} == {}
    assert serves(tmp_path / "new-token" / "kma", first, agent_dir, key_id, unlock=True) == material

    # A token holding another key under the label is refused, and the target left untouched
    hsm.add_token("kma-other")
    in_token(hsm, "kma-other", MAKE_KEY, f"kma-master-{JOINING}")
    with_other = hsm.table(token_label="kma-other")
    refused = restore_into(
        tmp_path / "other", core, database, members, with_other, autonomous_unlock=False, check=False
    )
    assert "is not this cluster's master key" in refused


MAKE_KEY = """
import sys
import pkcs11
from pkcs11 import Attribute, KeyType
token = pkcs11.lib(sys.argv[1]).get_token(token_label=sys.argv[2])
with token.open(user_pin=sys.argv[3], rw=True) as session:
    template = {Attribute.SENSITIVE: True}
    session.generate_key(KeyType.AES, 256, label=sys.argv[4], store=True, template=template)
"""


def restore_into(
    folder: Path,
    core: Path,
    database: Path,
    members: list[dict[str, str]],
    hsm_table: str = "",
    *,
    autonomous_unlock: bool = True,
    check: bool = True,
) -> str:
    """`kma init` restoring the two files into FOLDER/kma; what it printed (its error if `check` is
    false, after checking it failed and wrote nothing)."""
    folder.mkdir(parents=True)
    plain = restore_answers(folder, core, database, members)
    unlock = "" if autonomous_unlock else "autonomous_unlock = false\n"
    plain.write_text(unlock + plain.read_text() + hsm_table)
    done = run_kma("init", "--data-dir", str(folder / "kma"), "--answers", str(plain), check=False)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout
    assert done.returncode != 0 and not (folder / "kma").exists(), done.stdout
    return done.stderr


def serves(data_dir: Path, source: RunningKma, agent_dir: Path, key_id: str, unlock: bool = False) -> bytes:
    """The key's material as the restored KMA in DATA_DIR serves it to the drive enrolled before the
    backup (after a quorum's unlock, with `unlock`)."""
    restored = RunningKma(data_dir, source.demo)
    restored.start()
    try:
        if unlock:
            assert restored.client().get_status().locked
            restored.client("so").unlock_kma(JOINING, credentials=creds(source, "alice", "bob", "carol"))
        with kmip(agent_dir, service_address(restored)) as agent:
            return agent.get(key_id)
    finally:
        restored.stop()
