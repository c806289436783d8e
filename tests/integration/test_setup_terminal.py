"""`kma init` in a real terminal (issue 13): `--interactive` asks the set-up questions, passphrases
not echoed and each checked where it is typed; answers saved without passphrases ask each person
for theirs. Driven through a pseudo-terminal, as a person at the KMA's console would type."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from tests.support.first_setup import MEMBERS, OFFICER
from tests.support.kma_process import run_kma
from tests.support.ports import free_port
from tests.support.softhsm import PIN, softhsm

PASSPHRASES = dict(MEMBERS)


def kma_init(tmp_path: Path, *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "kma", "init", "--data-dir", str(tmp_path / "kma"), *args],
        env=dict(os.environ),
        encoding="utf-8",
        timeout=60,
    )


def type_secret(child: pexpect.spawn, prompt: str, secret: str) -> None:
    child.expect(prompt)
    child.sendline(secret)
    child.expect("\n")  # the end of the (unechoed) line
    assert secret not in (child.before or "")


@pytest.mark.parametrize("in_hsm", [False, True], ids=["software", "hsm"])
def test_interactive_set_up_in_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_hsm: bool
) -> None:
    hsm = softhsm(tmp_path) if in_hsm else None
    if hsm is not None:
        monkeypatch.setenv("SOFTHSM2_CONF", str(hsm.conf))
    child = kma_init(tmp_path, "--interactive")
    for prompt, answer in [
        ("What to do", ""),
        ("Management address", f"127.0.0.1:{free_port()}"),
        ("Service address", f"127.0.0.1:{free_port()}"),
        ("Cluster name", "Acme Tape Vault"),
        ("Site ID", "dallas"),
        ("Site name", ""),
        ("KMA ID", "kma-dal-1"),
        ("KMA name", ""),
        (r"How many members \(N\)", "3"),
        (r"form the quorum \(M", "4"),
    ]:
        child.expect(prompt)
        child.sendline(answer)
    child.expect("from 1 to 3")  # M > N: the reason, and the question again
    child.sendline("2")
    for i, (name, passphrase) in enumerate(MEMBERS):
        child.expect(f"Member {i + 1}'s name")
        child.sendline(name)
        if i == 0:
            type_secret(child, "passphrase \\(not shown\\)", passphrase)
            type_secret(child, "the same passphrase again", passphrase + " but not quite")
            child.expect("not the same")
        type_secret(child, "passphrase \\(not shown\\)", passphrase)
        type_secret(child, "the same passphrase again", passphrase)
    child.expect(r"Proof: before anything is written, (\w+), (\w+) type")
    chosen = [child.match.group(1), child.match.group(2)]
    for name in chosen:
        type_secret(child, f"{name}: passphrase again", PASSPHRASES[name])
    child.expect("They reconstruct the secret")
    for prompt, answer in [("User ID", ""), ("Name", OFFICER["name"])]:
        child.expect(prompt)
        child.sendline(answer)
    type_secret(child, "so: passphrase \\(not shown\\)", OFFICER["passphrase"])
    type_secret(child, "so: the same passphrase again", OFFICER["passphrase"])
    for prompt, answer in [
        ("Autonomous unlock", ""),
        ("Require two-step sign-in of Security Officers", ""),  # yes, the default
        ("Key pool size", "25"),
        ("Master key in an HSM", "yes" if hsm else ""),
    ]:
        child.expect(prompt)
        child.sendline(answer)
    if hsm is not None:
        open_pin = tmp_path / "open.pin"
        open_pin.write_text(PIN)
        open_pin.chmod(0o644)
        for pin_file in (open_pin, hsm.pin_file):  # a PIN file others can read is refused, with why
            for prompt, answer in [
                ("PKCS#11 module", hsm.module),
                ("Token label", hsm.label),
                ("User PIN: a file", str(pin_file)),
            ]:
                child.expect(prompt)
                child.sendline(answer)
            if pin_file == open_pin:
                child.expect("readable by nobody else: chmod 600")
    child.expect("Created cluster 'Acme Tape Vault'")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    status = json.loads(run_kma("status", "--data-dir", str(tmp_path / "kma"), "--json").stdout)
    assert (status["cluster_name"], status["autonomous_unlock"]) == ("Acme Tape Vault", False)
    assert status["master_key"] == (f"pkcs11: token '{hsm.label}' in {hsm.module}" if hsm else "software")


def test_answers_saved_without_passphrases_ask_each_person_in_the_terminal(tmp_path: Path) -> None:
    saved = tmp_path / "answers.toml"  # as the wizard saves them: no passphrase anywhere
    members = "".join(f'[[key_split.members]]\nname = "{name}"\n' for name, _ in MEMBERS)
    saved.write_text(
        'mode = "new_cluster"\ncluster_name = "Acme Tape Vault"\nkey_pool_size = 25\n'
        '[site]\nid = "dallas"\n[kma]\nid = "kma-dal-1"\n[security_officer]\nid = "so"\n'
        f'name = "Sam Officer"\n[key_split]\nthreshold = 2\n{members}'
    )
    child = kma_init(tmp_path, "--answers", str(saved))
    for name, passphrase in [*MEMBERS, ("so", OFFICER["passphrase"])]:
        type_secret(child, f"{name}: passphrase \\(not shown\\)", passphrase)
        type_secret(child, f"{name}: the same passphrase again", passphrase)
    child.expect("Created cluster 'Acme Tape Vault'")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
