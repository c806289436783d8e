"""Directory sign-in against a real OpenLDAP server (slapd) the test starts, holding an Active
Directory-like tree (sAMAccountName, memberOf), over LDAPS and StartTLS with its own CA pinned.

People sign in to the KMA with their directory account; their groups give their roles, as they are
at each sign-in; a Security Officer maps the groups under quorum; a directory that is down or not
verified leaves local accounts working and says so; the KMA keeps no directory password."""

from __future__ import annotations

import csv
import io
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kms_client import (
    Conflict,
    DirectoryUnavailable,
    Forbidden,
    KmsClient,
    PendingQuorumOp,
    Unauthenticated,
    ValidationFailed,
)
from tests.integration.test_quorum import creds
from tests.support.alert_receivers import _Tls
from tests.support.kma_process import RunningKma
from tests.support.slapd import GROUPS, Slapd, slapd_or_skip

SECURITY, AUDITORS, OPERATORS = (
    f"cn={g},{GROUPS}" for g in ("KMS Security", "KMS Auditors", "KMS Operators")
)
MAPPING = {SECURITY: ["security_officer"], AUDITORS: ["auditor"], OPERATORS: ["operator"]}
ADAMS_PW, BAKER_PW = "adams's directory password", "baker's directory password"


@pytest.fixture(scope="module")
def slapd() -> Iterator[Slapd]:
    server = slapd_or_skip()
    server.add_person("adams", "Ann Adams", ADAMS_PW, ["KMS Security", "Everyone"])
    server.add_person("baker", "Bob Baker", BAKER_PW, ["KMS Auditors"])
    yield server
    server.close()


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory, slapd: Slapd) -> Iterator[RunningKma]:
    running = RunningKma.demo_in(tmp_path_factory.mktemp("directory-kma"))
    set_directory(running, slapd)
    yield running
    running.stop()


def as_rows(mapping: dict[str, list[str]]) -> list[dict[str, Any]]:
    """A group -> roles mapping as the API takes it: one {group, roles} per group."""
    return [{"group": group, "roles": roles} for group, roles in mapping.items()]


def set_directory(kma: RunningKma, slapd: Slapd, **changes: Any) -> Any:
    settings: dict[str, Any] = {
        "url": slapd.ldaps_url,
        "ca_pem": slapd.tls.ca_pem,
        "bind_format": "cn={user},ou=Users,dc=corp,dc=example",
        "search_base": "dc=corp,dc=example",
        "group_roles": MAPPING,
        **changes,
    }
    members = changes.pop("members", ("alice", "bob", "carol"))
    settings.pop("members", None)
    settings["group_roles"] = as_rows(settings["group_roles"])
    return kma.client("so").set_directory(**settings, credentials=creds(kma, *members))


def sign_in(kma: RunningKma, user: str, password: str) -> KmsClient:
    return kma.client(user, password)


def events(kma: RunningKma, **filters: Any) -> list[str]:
    return [e.message for e in kma.client("auditor").iter_audit_events(**filters)]


def test_a_directory_account_signs_in_with_the_roles_its_groups_map_to(kma: RunningKma, slapd: Slapd) -> None:
    adams = sign_in(kma, "adams", ADAMS_PW).get_me()
    assert (adams.name, adams.roles) == ("Ann Adams", ("security_officer",))
    assert adams.directory_account == "cn=adams,ou=Users,dc=corp,dc=example"
    assert "users.write" in adams.permissions
    baker = sign_in(kma, "baker", BAKER_PW).get_me()
    assert baker.roles == ("auditor",) and "users.write" not in baker.permissions
    said = events(kma, operation="auth.sign_in", subject_id="adams")
    assert any(
        "directory account 'cn=adams,ou=Users,dc=corp,dc=example' as Security Officer" in m for m in said
    )
    # The KMA keeps no directory password: the row holds the entry's name, nothing derived from it.
    with sqlite3.connect(f"file:{kma.data_dir / 'kma.db'}?mode=ro", uri=True) as db:
        stored = db.execute("SELECT passphrase_hash FROM users WHERE id = 'adams'").fetchone()[0]
    assert stored == "directory:cn=adams,ou=Users,dc=corp,dc=example"
    assert all(
        ADAMS_PW not in line
        for line in Path(kma.data_dir / "kma.db").read_bytes().decode("latin-1").splitlines()
    )


def test_a_wrong_directory_password_or_an_unknown_account_is_refused(kma: RunningKma, slapd: Slapd) -> None:
    # "SO" in the directory is not the local "so": the trail never shows two people as one.
    slapd.add_person("SO", "Someone Else", "a directory password", ["KMS Security"])
    for user, password in (
        ("adams", "not the password"),
        ("nobody", "whatever it is"),
        ("adams", " "),
        ("SO", "a directory password"),
    ):
        with pytest.raises(Unauthenticated, match="user ID or passphrase is wrong"):
            sign_in(kma, user, password)


def test_roles_follow_the_directory_at_each_sign_in(kma: RunningKma, slapd: Slapd) -> None:
    slapd.add_person("clark", "Cy Clark", "clark's password", ["KMS Operators"])
    clark = sign_in(kma, "clark", "clark's password")
    assert clark.get_me().roles == ("operator",)
    slapd.set_groups("clark", ["KMS Auditors", "KMS Operators"])
    assert sign_in(kma, "clark", "clark's password").get_me().roles == ("auditor", "operator")
    slapd.set_groups("clark", ["Everyone"])
    with pytest.raises(Forbidden, match="no group that grants a role"):
        sign_in(kma, "clark", "clark's password")
    slapd.delete("cn=clark,ou=Users,dc=corp,dc=example")  # the account is removed from the directory
    with pytest.raises(Unauthenticated):
        sign_in(kma, "clark", "clark's password")
    # A Security Officer disabling the account here ends its sessions at once, whatever the directory says.
    slapd.add_person("clark", "Cy Clark", "clark's password", ["KMS Operators"])
    clark = sign_in(kma, "clark", "clark's password")
    kma.client("so").update_user("clark", enabled=False, credentials=creds(kma, "alice", "bob", "carol"))
    with pytest.raises(Unauthenticated):
        clark.get_me()
    with pytest.raises(Unauthenticated):
        sign_in(kma, "clark", "clark's password")


def test_a_directory_account_keeps_its_passphrase_and_roles_in_the_directory(kma: RunningKma) -> None:
    sign_in(kma, "baker", BAKER_PW)
    so = kma.client("so")
    with pytest.raises(ValidationFailed, match="passphrase is set in the directory"):
        so.set_user_passphrase(
            "baker", "a brand new passphrase", credentials=creds(kma, "alice", "bob", "carol")
        )
    with pytest.raises(ValidationFailed, match="roles follow its directory groups"):
        so.update_user("baker", roles=["operator"], credentials=creds(kma, "alice", "bob", "carol"))


def test_the_last_local_security_officer_stays_even_with_a_directory_one(kma: RunningKma) -> None:
    sign_in(kma, "adams", ADAMS_PW)  # a directory Security Officer exists
    so, quorum = kma.client("so"), creds(kma, "alice", "bob", "carol")
    so.update_user("admin", enabled=False, credentials=quorum)  # the demo's other local one
    try:
        with pytest.raises(Conflict, match="(?i)at least one enabled local security officer"):
            so.update_user("so", enabled=False, credentials=quorum)
    finally:
        so.update_user("admin", enabled=True, credentials=quorum)


def test_a_directory_down_says_so_and_local_accounts_still_sign_in(kma: RunningKma, slapd: Slapd) -> None:
    slapd.stop()
    try:
        with pytest.raises(DirectoryUnavailable, match="cannot be reached.*local accounts still can"):
            sign_in(kma, "adams", ADAMS_PW)
        assert kma.client("so").get_me().roles == ("security_officer",)
    finally:
        slapd.start()
    assert sign_in(kma, "adams", ADAMS_PW).get_me().id == "adams"
    assert any("cannot be reached" in m for m in events(kma, operation="auth.sign_in", subject_id="adams"))


def test_starttls_works_and_a_directory_signed_by_another_ca_is_not_trusted(
    kma: RunningKma, slapd: Slapd
) -> None:
    try:
        set_directory(kma, slapd, url=slapd.ldap_url, start_tls=True)
        assert sign_in(kma, "baker", BAKER_PW).get_me().roles == ("auditor",)
        set_directory(kma, slapd, ca_pem=_Tls("impostor").ca_pem)
        with pytest.raises(DirectoryUnavailable):
            sign_in(kma, "baker", BAKER_PW)
    finally:
        set_directory(kma, slapd)


def test_a_new_mapping_needs_the_quorum_and_applies_at_once(kma: RunningKma, slapd: Slapd) -> None:
    baker = sign_in(kma, "baker", BAKER_PW)
    pending = set_directory(kma, slapd, group_roles={AUDITORS: ["operator"]}, members=("alice",))
    assert isinstance(pending, PendingQuorumOp)
    assert "KMS Auditors" in pending.summary and "Operator" in pending.summary
    assert baker.get_me().roles == ("auditor",)  # nothing changed yet
    with pytest.raises(Forbidden):
        baker.set_directory(
            url=slapd.ldaps_url, ca_pem="x", bind_format="{user}", search_base="x", group_roles=[]
        )
    assert baker.get_directory().group_roles[1].group == AUDITORS  # an Auditor reads the mapping
    try:
        done = set_directory(kma, slapd, group_roles={AUDITORS: ["operator"]})
        assert not isinstance(done, PendingQuorumOp) and done.configured
        with pytest.raises(Unauthenticated):  # directory sessions end with a new mapping
            baker.get_me()
        assert sign_in(kma, "baker", BAKER_PW).get_me().roles == ("operator",)
    finally:
        set_directory(kma, slapd)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"url": "ldap://127.0.0.1:389"}, "needs StartTLS"),
        ({"url": "http://example.org"}, "ldaps://host"),
        ({"ca_pem": "not a certificate"}, "PEM certificates"),
        ({"bind_format": "cn=admin"}, "'{user}' once"),
        ({"group_roles": {SECURITY: ["king"]}}, "Roles must be among"),
        ({"group_roles": {SECURITY: []}}, "maps to no role"),
    ],
)
def test_bad_settings_are_refused_and_change_nothing(
    kma: RunningKma, slapd: Slapd, change: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValidationFailed, match=words):
        set_directory(kma, slapd, **change)
    assert kma.client("so").get_directory().url == slapd.ldaps_url


def test_a_signed_report_of_users_and_roles_names_directory_accounts_and_the_mapping(
    kma: RunningKma, tmp_path: Path
) -> None:
    sign_in(kma, "adams", ADAMS_PW)
    report = kma.client("auditor").get_users_report()
    rows = list(csv.DictReader(io.StringIO(report.csv)))
    by_id = {r["id"]: r for r in rows}
    assert by_id["adams"]["signs_in_with"] == "directory cn=adams,ou=Users,dc=corp,dc=example"
    assert by_id["adams"]["roles"] == "security_officer"
    assert by_id["so"]["signs_in_with"] == "local passphrase" and by_id["so"]["kind"] == "user"
    groups = {r["id"]: r["roles"] for r in rows if r["kind"] == "directory_group"}
    assert groups == {SECURITY: "security_officer", AUDITORS: "auditor", OPERATORS: "operator"}
    with pytest.raises(Forbidden):
        kma.client("op").get_users_report()

    # Checked offline against the cluster's CA; one changed byte and it no longer verifies.
    path, sig, ca = tmp_path / report.filename, tmp_path / f"{report.filename}.sig", tmp_path / "ca.pem"
    path.write_text(report.csv)
    sig.write_text(report.signature)
    ca.write_text(kma.ca_pem)
    verify = [
        sys.executable,
        "-m",
        "kma",
        "audit",
        "verify",
        "--export",
        str(path),
        "--signature",
        str(sig),
        "--ca",
        str(ca),
    ]
    checked = subprocess.run(verify, capture_output=True, text=True, check=False)
    assert checked.returncode == 0 and "Export verified (users.csv)" in checked.stdout, checked.stderr
    path.write_text(report.csv.replace("security_officer", "auditor", 1))
    checked = subprocess.run(verify, capture_output=True, text=True, check=False)
    assert checked.returncode == 1 and "content was changed" in checked.stderr
