"""What an alert says, without a network: a warning's identity lasts while its numbers change, and
the MIB shipped in the package declares exactly the OIDs the KMA sends."""

from __future__ import annotations

import re

from kma.alerts import mail, snmp
from kma.alerts.message import AUDIT_EVENT, Alert
from kma.services.alerts import identity

RUNS_OUT = (
    "At the recent issue rate ({} keys in the last hour, 40 in the last day, 90 in 7 days) the {} Ready "
    "keys run out in {}: take a database backup before then."
)


def test_a_warning_keeps_its_identity_while_its_numbers_change() -> None:
    assert identity("The last database backup is 8 days old.") == identity(
        "The last database backup is 9 days old."
    )
    later = [
        RUNS_OUT.format(3, 120, "59 min"),
        RUNS_OUT.format(1, 1200, "2 days 3 h"),
        RUNS_OUT.format(0, 9, "1 h"),
    ]
    assert len({identity(w) for w in later}) == 1
    lagging = "KMA {} has {} writes (key assignments, audit events) that have waited {} to reach the cluster."
    first = identity(lagging.format("kma-dal-1", 3, "1 min"))
    assert first == identity(lagging.format("kma-dal-1", 40, "2 h"))
    assert first != identity(lagging.format("kma-dal-2", 3, "1 min"))
    assert identity("This KMA is locked: it serves no keys until a quorum unlocks it.") != identity(
        "The last database backup is 8 days old."
    )


def _assignments(mib: str) -> dict[str, str]:
    """Each name's OID, from the MIB's `name ... ::= { parent n }` assignments."""
    found = dict(re.findall(r"^(\w+)\s[^\n]*?(?:\n(?!\w)[^\n]*)*?::= \{ (\w+ \d+(?: \d+)?) \}", mib, re.M))
    oids = {"enterprises": "1.3.6.1.4.1"}

    def oid(name: str) -> str:
        if name not in oids:
            parent, *numbers = found[name].split()
            oids[name] = ".".join([oid(parent), *numbers])
        return oids[name]

    return {name: oid(name) for name in found}


def test_the_shipped_mib_declares_what_the_kma_sends() -> None:
    mib = snmp.MIB_FILE.read_text(encoding="ascii")
    oids = _assignments(mib)
    notifications = {
        "warning.started": "kmaWarningStarted",
        "warning.ended": "kmaWarningEnded",
        "audit.event": "kmaAuditEvent",
        "test": "kmaTestAlert",
    }
    assert {kind: oids[name] for kind, name in notifications.items()} == snmp.NOTIFICATIONS
    objects = {
        "id": "kmaAlertId",
        "kma_id": "kmaAlertKmaId",
        "cluster": "kmaAlertCluster",
        "time": "kmaAlertTime",
        "text": "kmaAlertText",
        "warning": "kmaAlertWarning",
        "event_class": "kmaAlertEventClass",
        "operation": "kmaAlertOperation",
        "severity": "kmaAlertSeverity",
        "chain_seq": "kmaAlertChainSeq",
    }
    assert {field: oids[name] for field, name in objects.items()} == snmp.OBJECT


def test_an_engine_id_is_the_kmas_own_and_stable() -> None:
    assert snmp.engine_id("kma-dal-1") == "80007ed904" + b"kma-dal-1".hex()
    assert snmp.engine_id("kma-dal-1") != snmp.engine_id("kma-dal-2")


def test_an_email_subject_is_one_line_whatever_the_words() -> None:
    alert = Alert(
        id="k:1", kind=AUDIT_EVENT, cluster="Vault\nB", kma_id="k", time=0, text="two\r\nlines. More."
    )
    msg = mail.message(alert, "kma@example.com", ["oncall@example.com"])
    assert msg["Subject"] == "[KMA Vault B] Audit event: two lines"
    assert "lines. More." in msg.get_content()  # the body keeps the words as they are
