"""`kma lock`, `kma unlock` and `kma quorum list|show|approve|delete` against a running KMA."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.test_quorum import creds
from tests.support.kma_process import RunningKma, run_kma


def secret_file(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text + "\n", encoding="utf-8")
    path.chmod(0o600)
    return str(path)


def kma_cli(kma: RunningKma, tmp: Path, user: str, *args: str, pin: str = "data-dir") -> tuple[int, str, str]:
    trust = ["--data-dir", str(kma.data_dir)] if pin == "data-dir" else ["--ca-fingerprint", kma.fingerprint]
    result = run_kma(
        *args,
        "--kma",
        kma.address,
        "--user",
        user,
        *trust,
        "--passphrase-file",
        secret_file(tmp, f"{user}.pass", kma.passphrases[user]),
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


def test_lock_then_unlock_through_a_pending_quorum_operation(fresh_kma: RunningKma, tmp_path: Path) -> None:
    code, out, err = kma_cli(fresh_kma, tmp_path, "so", "lock")
    assert code == 0 and "is locked" in out, err
    assert fresh_kma.client().get_status().locked

    (alice,) = creds(fresh_kma, "alice")
    cred_file = secret_file(tmp_path, "creds", f"# one member for now\n{alice[0]} {alice[1]}")
    code, out, err = kma_cli(fresh_kma, tmp_path, "so", "unlock", "--credentials-file", cred_file)
    assert code == 0 and "Pending quorum operation" in out and "1 of 3 approvals" in out, err
    op_id = out.split()[3].rstrip(":")

    code, out, err = kma_cli(
        fresh_kma, tmp_path, "qm1", "quorum", "list", "--state", "pending", pin="fingerprint"
    )
    assert code == 0 and op_id in out and "Unlock KMA" in out, err
    code, out, err = kma_cli(fresh_kma, tmp_path, "qm1", "quorum", "show", op_id, "--json")
    shown = json.loads(out)
    assert shown["state"] == "pending" and shown["approvals"] == ["alice"] and shown["type"] == "unlock_kma"

    for member, passphrase in creds(fresh_kma, "bob", "carol"):
        code, out, err = kma_cli(
            fresh_kma,
            tmp_path,
            "qm2",
            "quorum",
            "approve",
            op_id,
            "--member",
            member,
            "--member-passphrase-file",
            secret_file(tmp_path, member, passphrase),
        )
        assert code == 0, err
    assert "3 of 3 approvals; the operation is executed" in out
    assert not fresh_kma.client().get_status().locked


def test_wrong_member_passphrase_and_delete(fresh_kma: RunningKma, tmp_path: Path) -> None:
    op = fresh_kma.client("so").create_user(
        "cli-user", "Cli", ["auditor"], "a good passphrase", credentials=creds(fresh_kma, "alice")
    )
    code, out, err = kma_cli(
        fresh_kma,
        tmp_path,
        "qm1",
        "quorum",
        "approve",
        op.id,
        "--member",
        "bob",
        "--member-passphrase-file",
        secret_file(tmp_path, "bad", "not bob's"),
    )
    assert code == 2 and "'bob' is wrong" in err
    code, out, err = kma_cli(fresh_kma, tmp_path, "so", "quorum", "delete", op.id)
    assert code == 0 and "will never run" in out, err
    code, out, err = kma_cli(fresh_kma, tmp_path, "qm1", "quorum", "show", op.id)
    assert code == 0 and "state      deleted" in out, err


def test_refuses_to_talk_without_a_pinned_ca(fresh_kma: RunningKma, tmp_path: Path) -> None:
    result = run_kma(
        "quorum",
        "list",
        "--kma",
        fresh_kma.address,
        "--user",
        "qm1",
        "--passphrase-file",
        secret_file(tmp_path, "qm1", fresh_kma.passphrases["qm1"]),
        check=False,
    )
    assert result.returncode == 2 and "Pin the cluster CA" in result.stderr


def test_a_new_key_split_member_enrols_on_their_own_with_their_code(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    so = fresh_kma.client("so")
    change = so.change_key_split(1, ["frank"], credentials=creds(fresh_kma, "alice", "bob", "carol"))

    def enrol(code: str) -> tuple[int, str, str]:
        result = run_kma(
            "quorum",
            "enrol",
            change.op.id,
            "--member",
            "frank",
            "--kma",
            fresh_kma.address,
            "--ca-fingerprint",
            fresh_kma.fingerprint,  # no --user: frank need not be a user
            "--code-file",
            secret_file(tmp_path, "code", code),
            "--member-passphrase-file",
            secret_file(tmp_path, "frank", "frank's own passphrase"),
            check=False,
        )
        return result.returncode, result.stdout, result.stderr

    code, out, err = enrol("AAAAAA-BBBBBB-CCCCCC-DDDDDD")
    assert code == 2 and "enrolment code is wrong" in err
    code, out, err = enrol(change.enrolment_codes["frank"].lower())  # as typed, in any case
    assert code == 0 and "Passphrase set for key split member frank" in out and "is executed" in out, err
    assert so.get_key_split().members == ("frank",)
    assert so.create_user(
        "u2", "U2", ["auditor"], "a good passphrase", credentials=[("frank", "frank's own passphrase")]
    )


def test_the_cluster_version_is_raised_once_with_a_quorum(fresh_kma: RunningKma, tmp_path: Path) -> None:
    quorum = "\n".join(f"{m} {p}" for m, p in creds(fresh_kma, "alice", "bob", "carol"))
    cred_file = secret_file(tmp_path, "creds", quorum)
    raise_it = ("cluster", "raise-version", "2", "--credentials-file", cred_file)
    code, out, err = kma_cli(fresh_kma, tmp_path, "so", *raise_it)
    assert code == 0, err
    assert out.strip() == "Done: raised the cluster version from 1 to 2 (every KMA runs 0.2.0 or later)."
    code, out, err = kma_cli(fresh_kma, tmp_path, "so", *raise_it)
    assert code == 2
    assert err.strip() == "kma: The cluster runs at cluster version 2 already; it is only ever raised."
