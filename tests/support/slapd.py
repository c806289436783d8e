"""A real OpenLDAP server (Debian's `slapd`) for the directory sign-in tests, started unprivileged in
a temporary directory with a configuration of its own, on free loopback ports: LDAP (for StartTLS)
and LDAPS, with a certificate from a test CA of its own (not the cluster's), which the KMA pins.

Its one suffix, dc=corp,dc=example, holds an Active Directory-like tree: people under ou=Users with
`sAMAccountName` and `memberOf` (the attributes AD answers, under Microsoft's OIDs, in a small schema
of the fixture's own: Debian's msuser.schema asks for AD's security descriptors), groups under
ou=Groups. The fixture adds, changes and removes entries with ldap-utils, as an administrator
would."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.alert_receivers import _Tls
from tests.support.ports import free_port
from tests.support.waiting import wait_until

SUFFIX = "dc=corp,dc=example"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "directory administrator's password"
USERS = f"ou=Users,{SUFFIX}"
GROUPS = f"ou=Groups,{SUFFIX}"
SLAPD = "/usr/sbin/slapd"

AD_SCHEMA = """\
attributetype ( 1.2.840.113556.1.4.221 NAME 'sAMAccountName'
    EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.2.102 NAME 'memberOf'
    EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )
objectclass ( 1.3.6.1.4.1.99999.1.1 NAME 'adAccount' AUXILIARY MAY ( sAMAccountName $ memberOf ) )
"""

CONFIG = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include {dir}/ad.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {dir}/slapd.pid
TLSCACertificateFile {ca}
TLSCertificateFile {cert}
TLSCertificateKeyFile {key}
database mdb
suffix "{suffix}"
rootdn "{admin}"
rootpw "{password}"
directory {dir}/db
access to attrs=userPassword by self write by anonymous auth by * none
access to * by users read by * none
"""


class Slapd:
    def __init__(self) -> None:
        self.tls = _Tls("ldap")
        self.dir = Path(tempfile.mkdtemp(prefix="slapd-"))
        self.ldap_port, self.ldaps_port = free_port(), free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def ldap_url(self) -> str:
        return f"ldap://127.0.0.1:{self.ldap_port}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://127.0.0.1:{self.ldaps_port}"

    def start(self) -> None:
        (self.dir / "db").mkdir(exist_ok=True)
        (self.dir / "ad.schema").write_text(AD_SCHEMA)
        config = CONFIG.format(
            dir=self.dir,
            ca=self.tls.files.name + "/ca.pem",
            cert=self.tls.cert,
            key=self.tls.key,
            suffix=SUFFIX,
            admin=ADMIN_DN,
            password=ADMIN_PASSWORD,
        )
        Path(self.tls.files.name, "ca.pem").write_text(self.tls.ca_pem)
        (self.dir / "slapd.conf").write_text(config)
        urls = f"{self.ldap_url}/ {self.ldaps_url}/"
        # -d 0: stays in the foreground, so the test owns the process and stops it.
        self.process = subprocess.Popen(
            [SLAPD, "-f", str(self.dir / "slapd.conf"), "-h", urls, "-d", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_until(self._answers, 20, what="slapd")

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(
                f"slapd exited: {self.process.stderr.read().decode() if self.process.stderr else ''}"
            )
        probe = [
            "ldapsearch",
            "-x",
            "-H",
            self.ldap_url,
            "-D",
            ADMIN_DN,
            "-w",
            ADMIN_PASSWORD,
            "-s",
            "base",
            "-b",
            "",
        ]
        return subprocess.run(probe, capture_output=True, check=False).returncode == 0

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=20)
            if self.process.stderr is not None:
                self.process.stderr.close()
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.tls.files.cleanup()

    def _tool(self, tool: str, ldif: str) -> None:
        command = [tool, "-x", "-H", self.ldap_url, "-D", ADMIN_DN, "-w", ADMIN_PASSWORD]
        subprocess.run(command, input=ldif.encode(), capture_output=True, check=True)

    def add(self, ldif: str) -> None:
        self._tool("ldapadd", ldif)

    def modify(self, ldif: str) -> None:
        self._tool("ldapmodify", ldif)

    def delete(self, dn: str) -> None:
        command = ["ldapdelete", "-x", "-H", self.ldap_url, "-D", ADMIN_DN, "-w", ADMIN_PASSWORD, dn]
        subprocess.run(command, capture_output=True, check=True)

    def add_tree(self) -> None:
        self.add(
            f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: corp\no: Corp\n\n"
            f"dn: {USERS}\nobjectClass: organizationalUnit\nou: Users\n\n"
            f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: Groups\n"
        )

    def add_person(self, account: str, name: str, password: str, groups: list[str]) -> str:
        """A person as AD shows one: cn, sAMAccountName, memberOf each of `groups` (by cn)."""
        dn = f"cn={account},{USERS}"
        member_of = "".join(f"memberOf: cn={g},{GROUPS}\n" for g in groups)
        self.add(
            f"dn: {dn}\nobjectClass: inetOrgPerson\nobjectClass: adAccount\ncn: {account}\nsn: {name}\n"
            f"displayName: {name}\nsAMAccountName: {account}\nuserPassword: {password}\n{member_of}"
        )
        return dn

    def set_groups(self, account: str, groups: list[str]) -> None:
        values = "".join(f"memberOf: cn={g},{GROUPS}\n" for g in groups)
        self.modify(f"dn: cn={account},{USERS}\nchangetype: modify\nreplace: memberOf\n{values}")


def slapd_or_skip() -> Slapd:
    """A started server; the test is skipped without Debian's slapd (scripts/setup.sh installs it)
    and fails without it under CI."""
    import os

    if not Path(SLAPD).exists() or shutil.which("ldapadd") is None:
        if os.environ.get("CI"):
            raise RuntimeError("slapd and ldap-utils are missing: scripts/setup.sh installs them")
        pytest.skip("slapd and ldap-utils are not installed (scripts/setup.sh installs them)")
    server = Slapd()
    server.start()
    server.add_tree()
    return server
