"""Alerts that leave the building, against real receivers the test starts: net-snmp's snmptrapd
(SNMPv3 authPriv, an inform and a trap channel), an SMTP server with STARTTLS (aiosmtpd), and an
HTTPS webhook receiver that checks the signature. A dashboard warning's start and end reach each;
a receiver that is down gets what it missed once it is back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kma.alerts import snmp
from kma.alerts.message import Alert
from kma.appliance import Appliance
from kma.cluster.store import open_store
from kma.crypto import hash_passphrase
from kma.datadir import DataDir
from kma.services.alert_channels import add_channel
from kma.services.alerts import QUEUE_LIMIT, WARNING_CHECK, alert_sender, identity
from kma.services.overview.dashboard import scoped_warnings
from kma.services.quorum.locking import unlock_autonomously
from kma.store import Batch, Stmt
from kms_client import Forbidden, KmsError, ValidationFailed
from tests.integration.test_metrics import samples, scrape, value
from tests.integration.test_quorum import creds
from tests.support.alert_receivers import SmtpReceiver, Snmptrapd, WebhookReceiver
from tests.support.cluster import add_node, execute, first_node
from tests.support.kma_process import RunningKma
from tests.support.waiting import wait_until

SECRET = "the webhook's shared secret"
LOCKED = "This KMA is locked"


@pytest.fixture
def receivers(fresh_kma: RunningKma) -> Iterator[dict[str, Any]]:
    kma_id = fresh_kma.client("auditor").get_status().kma_id
    so = fresh_kma.client("so")
    engines = so.list_alert_channels().snmp_engine_ids
    parts = {"webhook": WebhookReceiver(SECRET), "smtp": SmtpReceiver(), "snmp": Snmptrapd([engines[kma_id]])}
    for part in parts.values():
        part.start()
    yield parts
    for part in parts.values():
        part.stop()


def add_channels(so: Any, r: dict[str, Any]) -> dict[str, str]:
    hook, smtp, trapd = r["webhook"], r["smtp"], r["snmp"]
    snmp = {"address": trapd.address, "user": trapd.USER, "auth_protocol": "SHA-256", "priv_protocol": "AES"}
    keys = {"auth_key": trapd.AUTH, "priv_key": trapd.PRIV}
    return {
        "webhook": so.add_alert_channel(
            "SOC webhook",
            "webhook",
            {"url": hook.url, "ca_pem": hook.tls.ca_pem},
            {"secret": SECRET},
            audit_classes=["site"],
        ).id,
        "email": so.add_alert_channel(
            "On-call e-mail",
            "email",
            {
                "address": smtp.address,
                "sender": "kma@example.com",
                "recipients": ["oncall@example.com"],
                "ca_pem": smtp.tls.ca_pem,
            },
            {},
        ).id,
        "inform": so.add_alert_channel("NOC informs", "snmp", snmp | {"mode": "inform"}, keys).id,
        "trap": so.add_alert_channel("NOC traps", "snmp", snmp | {"mode": "trap"}, keys).id,
    }


def kinds(hook: WebhookReceiver, kind: str, words: str = "") -> list[dict[str, Any]]:
    return [a for a in hook.alerts if a["kind"] == kind and words in a["text"]]


def mails(smtp: SmtpReceiver, words: str) -> list[Any]:
    return [m for m in smtp.messages if words in m["Subject"]]


def test_a_warning_start_and_end_reach_every_channel(
    fresh_kma: RunningKma, receivers: dict[str, Any]
) -> None:
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    kma_id = auditor.get_status().kma_id
    hook, smtp, trapd = receivers["webhook"], receivers["smtp"], receivers["snmp"]
    ids = add_channels(so, receivers)

    # A test alert on each: the answer says the receiver took it, and it did
    for channel_id in ids.values():
        result = so.send_test_alert(channel_id)
        assert result.delivered and result.error is None, result
    assert kinds(hook, "test") and hook.bad_signatures == 0
    assert mails(smtp, "Test alert")[0]["To"] == "oncall@example.com"
    wait_until(
        lambda: trapd.received().count(".1.3.6.1.4.1.32473.1.0.4") == 2, 10, "the test inform and trap"
    )
    # A channel added while a warning is on hears of it at once (this KMA's test clock's)
    wait_until(lambda: kinds(hook, "warning.started", "test clock"), 30, "the warning already on")
    wait_until(lambda: trapd.received().count(".1.3.6.1.4.1.32473.1.0.1") == 2, 30, "it as inform and trap")

    # When a Security Officer locks the KMA, its warning reaches every channel
    so.lock_kma(kma_id)
    started = wait_until(lambda: kinds(hook, "warning.started", LOCKED), 30, "the webhook gets the warning")
    assert LOCKED in started[0]["text"] and started[0]["kma_id"] == kma_id
    wait_until(lambda: mails(smtp, f"Warning: {LOCKED}"), 30, "the e-mail of the warning")
    wait_until(lambda: trapd.received().count(".1.3.6.1.4.1.32473.1.0.1") == 4, 30, "the inform and the trap")
    assert f'STRING: "{started[0]["warning"]}"' in trapd.received()

    # And once a quorum unlocks it, the warning's end, under the same identity
    so.unlock_kma(kma_id, credentials=creds(fresh_kma, "alice", "bob", "carol"))
    ended = wait_until(lambda: kinds(hook, "warning.ended", LOCKED), 30, "the webhook gets the warning's end")
    assert ended[0]["warning"] == started[0]["warning"] and LOCKED in ended[0]["text"]
    wait_until(lambda: mails(smtp, "Warning over"), 30, "the e-mail of the warning's end")
    wait_until(
        lambda: trapd.received().count(".1.3.6.1.4.1.32473.1.0.2") == 2, 30, "the end as inform and trap"
    )
    assert len(kinds(hook, "warning.started", LOCKED)) == 1  # a warning that goes on is not sent again
    assert not kinds(hook, "warning.ended", "test clock")

    metrics = samples(scrape(fresh_kma, auditor.token).text)
    assert value(metrics, "kma_alerts_delivered_total", kind="webhook") >= 3


def test_audit_forwarding_falling_behind_is_a_warning_that_alerts(
    fresh_kma: RunningKma, receivers: dict[str, Any]
) -> None:
    so, hook = fresh_kma.client("so"), receivers["webhook"]
    add_channels(so, receivers)
    so.set_audit_forwarding("127.0.0.1:9", fresh_kma.ca_pem)  # where nothing listens
    so.create_site("alert-unforwarded", "An event the collector never gets")
    fresh_kma.advance_clock(600)
    started = wait_until(
        lambda: kinds(hook, "warning.started", "Audit forwarding"), 30, "the forwarding warning"
    )
    assert "127.0.0.1:9 is behind" in started[0]["text"]
    assert any(
        "Audit forwarding to 127.0.0.1:9 is behind" in w for w in so.get_status().warnings
    )  # the dashboard's
    so.set_audit_forwarding("127.0.0.1:9", fresh_kma.ca_pem, enabled=False)
    ended = wait_until(lambda: kinds(hook, "warning.ended", "Audit forwarding"), 30, "its end")
    assert ended[0]["warning"] == started[0]["warning"]


def test_a_receiver_down_gets_the_alerts_once_back_across_a_kma_restart(
    fresh_kma: RunningKma, receivers: dict[str, Any]
) -> None:
    so = fresh_kma.client("so")
    hook, smtp = receivers["webhook"], receivers["smtp"]
    ids = add_channels(so, receivers)
    wait_until(lambda: kinds(hook, "warning.started", "test clock"), 30, "the warning already on")
    hook.stop()
    smtp.stop()
    so.create_site("alert-during", "Made while the webhook receiver is down")

    def webhook_status() -> Any:
        return {c.id: c.this_kma for c in fresh_kma.client("auditor").list_alert_channels().items}[
            ids["webhook"]
        ]

    wait_until(lambda: webhook_status().queued >= 1 and webhook_status().last_error, 30, "queued, and why")
    assert not so.send_test_alert(ids["email"]).delivered

    # The KMA restarts meanwhile: what was queued is still to be sent, and nothing is announced twice
    fresh_kma.restart()
    hook.start()
    smtp.start()
    site = wait_until(
        lambda: [a for a in kinds(hook, "audit.event") if "alert-during" in a["text"]], 60, "the late alert"
    )
    assert site[0]["event"]["event_class"] == "site" and site[0]["event"]["operation"] == "site.create"
    wait_until(lambda: webhook_status().queued == 0, 30, "the queue empties")
    assert fresh_kma.client("so").send_test_alert(ids["email"]).delivered
    wait_until(lambda: mails(smtp, "test clock"), 30, "the e-mail's warning, sent late")
    assert len(kinds(hook, "warning.started", "test clock")) == 1


def test_secrets_never_leave_and_only_a_security_officer_configures(
    fresh_kma: RunningKma, receivers: dict[str, Any]
) -> None:
    so, auditor = fresh_kma.client("so"), fresh_kma.client("auditor")
    add_channels(so, receivers)
    listed = auditor.list_alert_channels()
    text = repr(listed)
    for secret in (SECRET, Snmptrapd.AUTH, Snmptrapd.PRIV):
        assert secret not in text
    hook = next(c for c in listed.items if c.kind == "webhook")
    assert hook.secrets_set == ("secret",) and "KMA-ALERTS-MIB DEFINITIONS" in listed.mib
    with pytest.raises(Forbidden):
        auditor.send_test_alert(hook.id)
    with pytest.raises(ValidationFailed, match="https"):
        so.add_alert_channel("plain", "webhook", {"url": "http://127.0.0.1:1/x"}, {"secret": SECRET})
    with pytest.raises(ValidationFailed, match="8 characters"):
        so.add_alert_channel(
            "weak",
            "snmp",
            {
                "address": "127.0.0.1:162",
                "mode": "trap",
                "user": "u",
                "auth_protocol": "SHA",
                "priv_protocol": "AES",
            },
            {"auth_key": "short", "priv_key": "short"},
        )
    # A change that leaves the secret out keeps it: the next test alert is still signed right
    so.change_alert_channel(
        hook.id, "SOC webhook", "webhook", {"url": hook.settings.url, "ca_pem": hook.settings.ca_pem}
    )
    assert so.send_test_alert(hook.id).delivered and receivers["webhook"].bad_signatures == 0


def test_a_full_queue_drops_its_oldest_alerts_and_counts_them(tmp_path: Path) -> None:
    """The queue is bounded: a receiver gone for long costs at most QUEUE_LIMIT alerts of store per
    KMA and channel; the oldest make way, and the channel and /metrics say how many."""
    demo = RunningKma.demo_in(tmp_path, test_clock=False)
    demo.stop()
    kma = Appliance(DataDir(demo.data_dir), open_store)  # in-process: the sender's rounds run here
    try:
        assert unlock_autonomously(kma)
        nowhere = {"url": "https://127.0.0.1:9/alerts"}  # nothing listens: every delivery fails
        channel = add_channel(
            kma,
            kma.itself,
            "gone",
            "webhook",
            nowhere,
            {"secret": SECRET},
            warnings=False,
            audit_classes=["drill"],
        )
        sender = alert_sender(kma)
        sender.work()  # its first round: the channel, and this KMA's audit events from now on
        for n in range(QUEUE_LIMIT + 5):
            kma.audit(kma.itself, "drill.event", f"drill {n}", event_class="drill")
        for _ in range(4):  # 500 events a round
            sender.work()
        status = sender.channel_status(channel.id)
        assert status["queued"] == QUEUE_LIMIT and status["dropped"] == 5 and status["last_error"]
        oldest = kma.store.query_one("SELECT alert FROM alert_queue ORDER BY seq LIMIT 1")
        assert oldest is not None and Alert.from_json(oldest["alert"]).text == "drill 5"
    finally:
        kma.close()


def test_the_kma_announcing_the_clusters_warnings_goes_on_from_those_recorded(tmp_path: Path) -> None:
    """A cluster's warning already announced (by the KMA that announced them before this one, which
    stopped) is not sent again by the KMA that takes over; this KMA's own warnings are its own."""
    demo = RunningKma.demo_in(tmp_path, test_clock=False)
    demo.stop()
    kma = Appliance(DataDir(demo.data_dir), open_store)
    try:
        assert unlock_autonomously(kma)
        nowhere = {"url": "https://127.0.0.1:9/alerts"}  # every delivery fails: what is sent stays queued
        add_channel(kma, kma.itself, "gone", "webhook", nowhere, {"secret": SECRET}, warnings=True)
        sender = alert_sender(kma)
        sender.work()
        kma.audit(kma.itself, "security.tamper", "a row written behind the KMA", event_class="security")
        tamper = next(w for w in scoped_warnings(kma).cluster if "tamper events" in w)
        kma.store.write(  # as the KMA before this one recorded it
            Batch([Stmt("INSERT INTO alert_warnings VALUES ('', ?, ?, 0)", (identity(tamper), tamper))])
        )
        kma.vault.lock()  # and one of this KMA's own
        time.sleep(WARNING_CHECK)  # the sender's next look at the warnings
        sender.work()
        queued = [Alert.from_json(r["alert"]) for r in kma.store.query("SELECT alert FROM alert_queue")]
        assert [(a.kind, a.text[:18]) for a in queued] == [("warning.started", "This KMA is locked")]
    finally:
        kma.close()


def test_in_a_cluster_each_kma_sends_its_own(tmp_path: Path) -> None:
    """On rqlite, a channel set through one KMA is followed by the others, each sending its own
    audit events and its own warnings, named by its id; a warning about the cluster, which both
    KMAs see, is sent once."""
    hook = WebhookReceiver(SECRET)
    hook.start()
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        second.start()
        so = first.client("so")
        so.add_alert_channel(
            "SOC",
            "webhook",
            {"url": hook.url, "ca_pem": hook.tls.ca_pem},
            {"secret": SECRET},
            audit_classes=["site"],
        )
        second.client("so").create_site("made-on-2", "Through the second KMA")
        made = wait_until(lambda: kinds(hook, "audit.event", "made-on-2"), 30, "the second KMA's event")
        assert made[0]["kma_id"] == "kma-dal-2" and len(made) == 1  # the first KMA does not send it
        so.lock_kma("kma-dal-2")
        locked = wait_until(lambda: kinds(hook, "warning.started", LOCKED), 30, "the second KMA's warning")
        assert [a["kma_id"] for a in locked] == ["kma-dal-2"]

        # A user row written through rqlite: its use is a tamper event, and a warning of the cluster's
        forged = (
            "INSERT INTO users (id, name, roles, passphrase_hash, created_at, updated_at, mac) "
            "VALUES ('mallory', 'Mallory', 'security_officer', ?, 0, 0, ?)"
        )
        execute(first, [[forged, hash_passphrase("mallory's passphrase"), "00" * 32]])
        with pytest.raises(KmsError):
            first.client("mallory", "mallory's passphrase")
        tamper = wait_until(
            lambda: kinds(hook, "warning.started", "tamper events"), 30, "the cluster's warning"
        )
        time.sleep(3 * WARNING_CHECK)  # the other KMA's rounds
        assert len(kinds(hook, "warning.started", "tamper events")) == 1
        assert tamper[0]["kma_id"] == "kma-dal-1"  # the first of the KMAs the cluster reaches
    finally:
        second.stop()
        first.stop()
        hook.stop()


class RotatedTrapd(Snmptrapd):
    AUTH, PRIV = "auth passphrase 2", "priv passphrase 2"


def test_new_snmp_keys_for_the_same_user_and_manager_are_used_at_once() -> None:
    """A key rotation: the manager now knows the user by its new keys only, and so does the KMA."""
    alert = Alert(id="k:1", kind="test", cluster="c", kma_id="kma-x", time=0, text="after the rotation")
    before, after = Snmptrapd([snmp.engine_id("kma-x")]), RotatedTrapd([snmp.engine_id("kma-x")])
    after.port = before.port  # the same manager, restarted with the user's new keys
    before.start()
    try:
        for trapd in (before, after):
            if trapd is after:
                before.stop()
                after.start()
            for mode in ("inform", "trap"):
                snmp.send(
                    "kma-x",
                    "127.0.0.1",
                    trapd.port,
                    mode,
                    trapd.USER,
                    "SHA-256",
                    trapd.AUTH,
                    "AES",
                    trapd.PRIV,
                    alert,
                )
        wait_until(lambda: after.received().count(".1.3.6.1.4.1.32473.1.0.4") == 2, 10, "inform and trap")
    finally:
        before.stop()
        after.stop()
