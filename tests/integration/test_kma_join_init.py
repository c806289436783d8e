"""`kma cluster add-kma` then `kma init` with `mode = "join"` on the new machine (issue 11):
the data dir it writes, and every refusal leaving nothing behind. Real processes over real TLS."""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from kma.datadir import DataDir
from tests.integration.test_quorum import creds
from tests.integration.test_quorum_cli import kma_cli, secret_file
from tests.support.first_node import FIRST_RAFT, demo_first_node
from tests.support.kma_process import RunningKma, run_kma


@pytest.fixture
def node_kma(tmp_path: Path) -> Iterator[RunningKma]:
    kma = demo_first_node(tmp_path)
    yield kma
    kma.stop()


def add_kma(
    kma: RunningKma, tmp: Path, kma_id: str, *members: str, voter: bool = True
) -> tuple[int, str, str]:
    cred_file = secret_file(tmp, f"creds-{kma_id}", "\n".join(f"{m} {p}" for m, p in creds(kma, *members)))
    return kma_cli(
        kma,
        tmp,
        "so",
        "cluster",
        "add-kma",
        kma_id,
        "--site",
        "boston",
        "--management-address",
        "127.0.0.1:18443",
        "--service-address",
        "127.0.0.1:15696",
        "--raft-address",
        "127.0.0.1:14002",
        *([] if voter else ["--non-voter"]),
        "--credentials-file",
        cred_file,
    )


def passphrase_in(out: str) -> str:
    return out.split("One-time KMA passphrase", 1)[1].split(": ", 1)[1].split(maxsplit=1)[0]


def init_join(
    tmp: Path,
    data_dir: Path,
    kma: str,
    fingerprint: str,
    kma_id: str,
    passphrase: str,
    rqlite_http: str = "127.0.0.1:14003",
) -> tuple[int, str]:
    answers = tmp / f"answers-{data_dir.name}.toml"
    answers.write_text(
        f'mode = "join"\n[join]\nkma = "{kma}"\nca_fingerprint = "{fingerprint}"\n'
        f'kma_id = "{kma_id}"\npassphrase = "{passphrase}"\nrqlite_http_address = "{rqlite_http}"\n',
        encoding="utf-8",
    )
    result = run_kma("init", "--data-dir", str(data_dir), "--answers", str(answers), check=False)
    return result.returncode, result.stdout + result.stderr


def nothing_written(tmp: Path, data_dir: Path) -> bool:
    leftovers = [p.name for p in tmp.iterdir() if p.name.startswith(f".{data_dir.name}.joining-")]
    return not data_dir.exists() and not leftovers


def test_add_kma_then_init_join_writes_a_private_data_dir_that_starts_locked(
    node_kma: RunningKma,
    tmp_path: Path,
) -> None:
    code, out, err = add_kma(node_kma, tmp_path, "kma-bos-1", "alice", "bob", "carol")
    assert code == 0 and "Done: created the entry of KMA 'kma-bos-1'" in out, err
    assert "WARNING: A two-voter cluster stops management writes when either voter is lost" in out
    new = tmp_path / "new-kma"
    code, said = init_join(
        tmp_path, new, node_kma.address, node_kma.fingerprint, "kma-bos-1", passphrase_in(out)
    )
    assert code == 0 and "Joined cluster 'Demo Tape Vault' as KMA 'kma-bos-1'" in said and "LOCKED" in said, (
        said
    )

    data_dir = DataDir(new)
    identity = data_dir.identity()
    assert (identity.kma_id, identity.site_id, identity.service_address) == (
        "kma-bos-1",
        "boston",
        "127.0.0.1:15696",
    )
    node = tomllib.loads((new / "cluster" / "node.toml").read_text())
    assert node == {
        "node_id": "kma-bos-1",
        "raft_address": "127.0.0.1:14002",
        "http_address": "127.0.0.1:14003",
        "voter": True,
        "join": [FIRST_RAFT],
    }
    ca = x509.load_pem_x509_certificate((new / "cluster" / "ca.crt").read_bytes())
    assert (new / "tls" / "ca.pem").read_bytes() == (new / "cluster" / "ca.crt").read_bytes()
    for cert_file in ("cluster/node.crt", "tls/server.pem"):
        x509.load_pem_x509_certificate((new / cert_file).read_bytes()).verify_directly_issued_by(ca)
    assert not data_dir.unlock_key.exists()  # no autonomous unlock: it waits locked for a quorum
    assert data_dir.exposed() == []  # everything its owner's only, keys included
    assert stat.S_IMODE(os.stat(new / "cluster" / "node.key").st_mode) == 0o600


def test_refusals_write_nothing(node_kma: RunningKma, tmp_path: Path) -> None:
    code, out, err = add_kma(node_kma, tmp_path, "kma-bos-2", "alice")  # pending: not approved yet
    assert code == 0 and "Pending quorum operation" in out, err
    pending = passphrase_in(out)
    new = tmp_path / "new-kma"
    fp, address = node_kma.fingerprint, node_kma.address

    code, said = init_join(tmp_path, new, address, fp, "kma-bos-2", pending)
    assert code == 2 and "not approved" in said.replace("approved this KMA", "not approved"), said
    assert nothing_written(tmp_path, new)
    code, said = init_join(tmp_path, new, address, fp, "kma-nobody", pending)
    assert code == 2 and "refused the join" in said and nothing_written(tmp_path, new)

    code, out, err = add_kma(node_kma, tmp_path, "kma-bos-3", "alice", "bob", "carol", voter=False)
    passphrase = passphrase_in(out)
    code, said = init_join(tmp_path, new, address, fp, "kma-bos-3", "WRONG1-WRONG2-WRONG3-WRONG4")
    assert code == 2 and "wrong" in said and nothing_written(tmp_path, new)
    other_cluster = "SHA256:" + ":".join(["AB"] * 32)
    code, said = init_join(tmp_path, new, address, other_cluster, "kma-bos-3", passphrase)
    assert code == 2 and "not the pinned" in said and nothing_written(tmp_path, new)
    code, said = init_join(tmp_path, new, "127.0.0.1:9", fp, "kma-bos-3", passphrase)  # nobody listens
    assert code == 2 and "reach" in said and nothing_written(tmp_path, new)

    # The right one joins once; the same passphrase a second time is refused.
    code, said = init_join(tmp_path, new, address, fp, "kma-bos-3", passphrase)
    assert code == 0, said
    again = tmp_path / "another-kma"
    code, said = init_join(tmp_path, again, address, fp, "kma-bos-3", passphrase)
    assert code == 2 and "already used" in said and nothing_written(tmp_path, again)
    # And a data dir that already holds something is refused before the passphrase is spent.
    code, said = init_join(tmp_path, new, address, fp, "kma-bos-3", passphrase)
    assert code == 2 and "already holds a KMA" in said
