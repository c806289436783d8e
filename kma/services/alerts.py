"""The alert sender: each KMA tells the cluster's alert channels about its own dashboard warnings,
as they start and as they end, and about the audit events of its own chain whose class a channel
carries (docs/alerts.md). The cluster's warnings, which every KMA sees alike (a backup's age, tamper
events, certificates), are announced by one KMA only (`announcer`), not once per KMA.

The warnings are the dashboard's own (`kma.services.overview.dashboard.warnings`), whatever they are: a
warning is known by its identity, its words with the numbers in them left out (so "the last backup
is 8 days old" and, a day later, "9 days old" are one warning that goes on), never by a list kept
here. A KMA records the warnings it has announced (`alert_warnings`), so a restart announces only
what changed meanwhile.

Like the audit forwarder (kma/services/audit/audit_forwarding.py), a worker of its own does the sending,
so neither the dashboard nor the audit write path waits for a receiver. What is to be sent is first
queued in the store (`alert_queue`, per KMA and channel, at most QUEUE_LIMIT: when full the oldest
makes way and `kma_alerts_dropped_total` counts it) and leaves the queue only once the receiver has
taken it (a webhook's 2xx, the SMTP server's acceptance, an inform's response; a trap, which has no
answer, once sent). A receiver that is down gets it later, after a restart of the KMA too: at least
once, never not at all while the queue holds it.

A channel's secrets are under the master key: the sender unwraps them while the KMA is unlocked and
keeps them in memory, so a KMA that a quorum locks still says so. A KMA that starts locked queues
its alerts and sends them once it is unlocked.
"""

from __future__ import annotations

import hashlib
import re
import secrets as random
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kma.alerts import snmp
from kma.alerts.message import (
    AUDIT_EVENT,
    EVENT_FIELDS,
    WARNING_ENDED,
    WARNING_STARTED,
    Alert,
    DeliveryFailed,
)
from kma.domain.actor import Actor
from kma.errors import KmaError, ValidationFailed
from kma.metrics import ALERT_ERRORS, ALERTS_DELIVERED, ALERTS_DROPPED
from kma.services import alert_channels
from kma.services.alert_channels import Channel, ChannelSecrets, cluster_name, stored_secrets
from kma.services.overview.dashboard import scoped_warnings
from kma.store import Batch, Stmt
from kma.worker import Worker

if TYPE_CHECKING:
    from kma.appliance import Appliance

QUEUE_LIMIT = 1000  # alerts waiting per KMA and channel
BATCH = 50  # alerts per channel per round
EVENTS_READ = 500  # audit events read per round
POLL = 0.5  # seconds between rounds when idle
WARNING_CHECK = 2.0  # seconds between looks at the dashboard's warnings
ANNOUNCER_CHECK = 10.0  # seconds between asks of which KMA announces the cluster's warnings
CLUSTER = ""  # alert_warnings' owner of the cluster's warnings, whichever KMA announced them
SETTING_CHECK = 1.0  # seconds between looks at the channels (changed through any KMA)
MAX_BACKOFF = 30.0

# A number standing alone ("8 days", "(3 keys", "127.0.0.1:6514"), not one inside a name (kma-dal-1).
_NUMBER = re.compile(r"(?<![\w-])\d[\d,.:]*(\s*(days?|h|min|s|%)\b)?")
_NUMBERS = re.compile(r"#(\s*#)+")


def identity(warning: str) -> str:
    """A warning's identity: a digest of its words with every number (and a duration's unit) left
    out, the same while the warning lasts and in its end."""
    words = _NUMBERS.sub("#", _NUMBER.sub("#", warning))
    return "w-" + hashlib.sha256(words.encode()).hexdigest()[:16]


@dataclass
class ChannelStatus:
    """How one channel fares on this KMA, as the API and /metrics show it."""

    queued: int = 0
    delivered: int = 0
    dropped: int = 0
    last_delivered_at: int | None = None
    last_error: str | None = None
    next_try: float = field(default=0.0, repr=False)
    backoff: float = field(default=0.5, repr=False)


class AlertSender(Worker):
    name = "kma-alert-sender"
    pause_s = MAX_BACKOFF
    stop_wait_s = 20.0

    def __init__(self, kma: Appliance) -> None:
        super().__init__()
        self.kma = kma
        self._channels: list[Channel] = []
        self._secrets = kma.part(ChannelSecrets)
        self._status: dict[str, ChannelStatus] = {}
        self._checked = {"settings": 0.0, "warnings": 0.0, "announcer": -ANNOUNCER_CHECK}
        self._announcer = True
        self._loaded = False

    # --- what the API and /metrics show ----------------------------------------------------
    def channel_status(self, channel_id: str) -> dict[str, Any]:
        st = self._status.get(channel_id) or ChannelStatus()
        queued = self.kma.store.scalar(
            "SELECT count(*) FROM alert_queue WHERE kma_id = ? AND channel_id = ?",
            (self.kma.kma_id, channel_id),
        )
        out = {k: v for k, v in asdict(st).items() if k not in ("next_try", "backoff")}
        return out | {"queued": int(queued or 0)}

    # --- the worker ------------------------------------------------------------------------
    def work(self) -> float:
        now = time.monotonic()
        if self.woken or now - self._checked["settings"] >= SETTING_CHECK:
            self.woken = False
            self._checked["settings"] = now
            self._load_channels()
        if not self._channels:  # nobody listens: no look at the warnings or events (a KMA's CPU)
            return POLL
        if now - self._checked["warnings"] >= WARNING_CHECK:
            self._checked["warnings"] = now
            self._note_warnings()
        self._note_audit_events()
        return 0.0 if self._deliver() else POLL

    def _load_channels(self) -> None:
        first, self._loaded = not self._loaded, True  # the first look since this KMA started
        before = {c.id for c in self._channels}
        channels = [c for c in alert_channels.genuine_channels(self.kma) if c.enabled]
        if first:
            self._start_position()
        if channels and not self._channels and not first:
            # The warnings were not followed while no channel listened: bring them up to date,
            # sending nothing, so that the catch-up below announces those on now.
            self._note_warnings()
        self._channels = channels
        added = [c for c in self._channels if c.id not in before]
        for ch in self._channels:
            self._status.setdefault(ch.id, ChannelStatus())
            self._secrets.of(ch)  # unwrapped now, while this KMA may be unlocked
        if added and not first:
            self._catch_up(added)

    def _catch_up(self, added: list[Channel]) -> None:
        """A channel added (or turned on) meanwhile gets the warnings that are on now, as started
        (it would otherwise hear of them only at their end), and this KMA's events of its classes
        that passed since it was saved: it may have been saved through another KMA a moment before
        this one's replica showed it."""
        kma_id = self.kma.kma_id
        owners = (kma_id, CLUSTER if self._announces() else kma_id)
        rows = self.kma.store.query(
            "SELECT identity, text FROM alert_warnings WHERE kma_id IN (?, ?) ORDER BY since", owners
        )
        on = [self._alert(WARNING_STARTED, r["text"], warning=r["identity"]) for r in rows]
        pos = self.kma.store.scalar("SELECT chain_seq FROM alert_audit_positions WHERE kma_id = ?", (kma_id,))
        stmts = []
        for ch in added:
            events = (
                self.kma.store.query(
                    "SELECT * FROM audit_events WHERE created_at >= ? AND kma_id = ? AND chain_seq <= ? "
                    "ORDER BY chain_seq LIMIT ?",
                    (ch.updated_at, kma_id, pos, EVENTS_READ),
                )
                if ch.audit_classes and pos is not None
                else []
            )
            alerts = (on if ch.warnings else []) + [
                self._event_alert(r) for r in events if r["event_class"] in ch.audit_classes
            ]
            stmts += self._enqueue(ch, alerts) if alerts else []
        if stmts:
            self.kma.store.write(Batch(stmts))

    def _event_alert(self, row: Any) -> Alert:
        return self._alert(AUDIT_EVENT, str(row["message"]), event={f: row[f] for f in EVENT_FIELDS})

    def _alert(self, kind: str, text: str, **more: Any) -> Alert:
        kma = self.kma
        return Alert(
            id=f"{kma.kma_id}:{random.token_hex(8)}",
            kind=kind,
            cluster=cluster_name(kma),
            kma_id=kma.kma_id,
            time=kma.clock.now(),
            text=text,
            **more,
        )

    def _note_warnings(self) -> None:
        """Queue a start for each warning that is new, an end for each that is gone: this KMA's own,
        and the cluster's while this KMA is the one that announces them (`announcer`)."""
        kma_id = self.kma.kma_id
        scoped = scoped_warnings(self.kma)
        cluster = {identity(w): w for w in scoped.cluster}
        shown = {kma_id: {identity(w): w for w in scoped.this_kma}}
        if self._announces():
            shown[CLUSTER] = cluster
        known: dict[str, dict[str, str]] = {kma_id: {}, CLUSTER: {}}
        for r in self.kma.store.query(
            "SELECT kma_id, identity, text FROM alert_warnings WHERE kma_id IN (?, ?)", (kma_id, CLUSTER)
        ):
            known[r["kma_id"]][r["identity"]] = r["text"]
        stmts, alerts, now = [], [], self.kma.clock.now()
        for owner, now_shown in shown.items():
            for i, text in now_shown.items():
                if i in known[owner]:
                    continue
                stmts.append(
                    Stmt(
                        "INSERT INTO alert_warnings (kma_id, identity, text, since) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (kma_id, identity) DO NOTHING",
                        (owner, i, text, now),
                    )
                )
                if not (owner == CLUSTER and i in known[kma_id]):  # announced already, as this KMA's
                    alerts.append(self._alert(WARNING_STARTED, text, warning=i))
            for i, text in known[owner].items():
                if i in now_shown:
                    continue
                stmts.append(Stmt("DELETE FROM alert_warnings WHERE kma_id = ? AND identity = ?", (owner, i)))
                if not (owner == kma_id and i in cluster):  # not over: the cluster's (before scopes)
                    alerts.append(self._alert(WARNING_ENDED, text, warning=i))
        if not stmts:
            return
        wanted = [c for c in self._channels if c.warnings]
        self.kma.store.write(Batch(stmts + [s for c in wanted for s in self._enqueue(c, alerts)]))

    def _announces(self) -> bool:
        """Whether this KMA announces the cluster's warnings, asked of the cluster every
        ANNOUNCER_CHECK seconds."""
        now = time.monotonic()
        if now - self._checked["announcer"] >= ANNOUNCER_CHECK:
            self._checked["announcer"] = now
            self._announcer = announcer(self.kma) == self.kma.kma_id
        return self._announcer

    def _start_position(self) -> None:
        """The first start of a KMA with alerts: its events are followed from its chain's head on
        (a channel saved later keeps those from its save on)."""
        kma_id = self.kma.kma_id
        if self.kma.store.scalar("SELECT 1 FROM alert_audit_positions WHERE kma_id = ?", (kma_id,)):
            return
        head = self.kma.store.scalar("SELECT chain_seq FROM audit_heads WHERE kma_id = ?", (kma_id,)) or 0
        self.kma.store.write(Batch([_position(kma_id, int(head), self.kma.clock.now())]))

    def _note_audit_events(self) -> None:
        """Queue this KMA's new audit events on the channels that carry their class."""
        kma_id = self.kma.kma_id
        pos = self.kma.store.scalar("SELECT chain_seq FROM alert_audit_positions WHERE kma_id = ?", (kma_id,))
        if pos is None:
            self._start_position()
            return
        if not any(c.audit_classes for c in self._channels):
            # Nothing wants events: no replicated write per poll. The position stays where it was; a
            # channel saved later reads on from there, keeping only events from its save on.
            return
        rows = self.kma.store.query(
            "SELECT * FROM audit_events WHERE kma_id = ? AND chain_seq > ? ORDER BY chain_seq LIMIT ?",
            (kma_id, pos, EVENTS_READ),
        )
        if not rows:
            return
        stmts = []
        for ch in self._channels:
            alerts = [
                self._event_alert(r)
                for r in rows
                if r["event_class"] in ch.audit_classes and r["created_at"] >= ch.updated_at
            ]
            stmts += self._enqueue(ch, alerts) if alerts else []
        stmts.append(_position(kma_id, int(rows[-1]["chain_seq"]), self.kma.clock.now()))
        self.kma.store.write(Batch(stmts))

    def _enqueue(self, ch: Channel, alerts: list[Alert]) -> list[Stmt]:
        """Statements that queue `alerts` on `ch` and keep its queue within QUEUE_LIMIT."""
        kma_id, now = self.kma.kma_id, self.kma.clock.now()
        waiting = int(
            self.kma.store.scalar(
                "SELECT count(*) FROM alert_queue WHERE kma_id = ? AND channel_id = ?", (kma_id, ch.id)
            )
        )
        over = waiting + len(alerts) - QUEUE_LIMIT
        if over > 0:
            ALERTS_DROPPED.labels(ch.kind).inc(over)
            self._status[ch.id].dropped += over
            self.log.warning("alert channel '%s': queue full, %d oldest alerts dropped", ch.name, over)
        insert = "INSERT INTO alert_queue (kma_id, channel_id, alert, created_at) VALUES (?, ?, ?, ?)"
        trim = (
            "DELETE FROM alert_queue WHERE kma_id = ? AND channel_id = ? AND seq <= (SELECT seq FROM "
            "alert_queue WHERE kma_id = ? AND channel_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)"
        )
        return [Stmt(insert, (kma_id, ch.id, a.to_json(), now)) for a in alerts] + [
            Stmt(trim, (kma_id, ch.id, kma_id, ch.id, QUEUE_LIMIT))
        ]

    def _deliver(self) -> bool:
        """Send what each channel has queued, oldest first; True if some channel has more."""
        more = False
        for ch in self._channels:
            st = self._status[ch.id]
            if time.monotonic() < st.next_try:
                continue
            secret = self._secrets.of(ch)
            if secret is None:
                st.last_error = (
                    "waiting for this KMA's unlock: the channel's secrets are under the master key"
                )
                continue
            rows = self.kma.store.query(
                "SELECT seq, alert FROM alert_queue WHERE kma_id = ? AND channel_id = ? ORDER BY seq LIMIT ?",
                (self.kma.kma_id, ch.id, BATCH),
            )
            for row in rows:
                if not self._send(ch, secret, row["seq"], Alert.from_json(row["alert"])):
                    break
            else:
                more = more or len(rows) == BATCH
        return more

    def _send(self, ch: Channel, secret: dict[str, str], seq: int, alert: Alert) -> bool:
        st = self._status[ch.id]
        try:
            alert_channels.deliver(self.kma, ch, secret, alert)
        except DeliveryFailed as exc:
            st.last_error = str(exc)
            st.next_try = time.monotonic() + st.backoff
            st.backoff = min(st.backoff * 2, MAX_BACKOFF)
            ALERT_ERRORS.labels(ch.kind).inc()
            self.log.warning("alert channel '%s': %s", ch.name, exc)
            return False
        self.kma.store.write(Batch([Stmt("DELETE FROM alert_queue WHERE seq = ?", (seq,))]))
        st.delivered += 1
        st.last_delivered_at, st.last_error, st.backoff = self.kma.clock.now(), None, 0.5
        ALERTS_DELIVERED.labels(ch.kind).inc()
        return True

    def failed(self, exc: Exception) -> float:
        if isinstance(exc, KmaError):  # e.g. the store's refusal while a cluster elects its leader
            self.log.warning("alerts: %s", exc)
            return POLL * 4
        return super().failed(exc)


def _position(kma_id: str, seq: int, now: int) -> Stmt:
    return Stmt(
        "INSERT INTO alert_audit_positions (kma_id, chain_seq, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (kma_id) DO UPDATE SET chain_seq = excluded.chain_seq, updated_at = excluded.updated_at",
        (kma_id, seq, now),
    )


def queued_by_channel(kma: Appliance) -> dict[str, int]:
    """This KMA's queue length per channel (the /metrics gauge)."""
    rows = kma.store.query(
        "SELECT c.name AS name, count(q.seq) AS n FROM alert_channels c LEFT JOIN alert_queue q "
        "ON q.channel_id = c.id AND q.kma_id = ? GROUP BY c.id",
        (kma.kma_id,),
    )
    return {str(r["name"]): int(r["n"]) for r in rows}


@dataclass(frozen=True)
class ChannelView:
    """A channel as the API answers it (the API's `AlertChannel` reads it): its settings, which
    secrets are set (never their values), and this KMA's sending to it."""

    id: str
    name: str
    kind: str
    enabled: bool
    warnings: bool
    audit_classes: list[str]
    settings: dict[str, Any]
    secrets_set: list[str]
    updated_at: int
    this_kma: dict[str, Any]


@dataclass(frozen=True)
class AlertChannelList:
    """Every channel, with what an SNMP manager needs to receive this cluster's traps; the API's
    `AlertChannels` reads it."""

    items: list[ChannelView]
    snmp_engine_ids: dict[str, str]  # KMA id -> its SNMP engine ID (hex), for the managers' trap users
    mib: str  # KMA-ALERTS-MIB, for the SNMP managers


def list_alert_channels(kma: Appliance) -> AlertChannelList:
    ids = [str(r["id"]) for r in kma.store.query("SELECT id FROM kmas ORDER BY id")]
    return AlertChannelList(
        items=[_view(kma, c) for c in alert_channels.channels(kma)],
        snmp_engine_ids={i: snmp.engine_id(i) for i in ids},
        mib=snmp.MIB_FILE.read_text(encoding="ascii"),
    )


def add_alert_channel(
    kma: Appliance,
    actor: Actor,
    name: str,
    kind: str,
    settings: dict[str, Any],
    given: dict[str, str | None],
    *,
    enabled: bool,
    warnings: bool,
    audit_classes: list[str],
) -> ChannelView:
    added = alert_channels.add_channel(
        kma,
        actor,
        name,
        kind,
        settings,
        given,
        enabled=enabled,
        warnings=warnings,
        audit_classes=audit_classes,
    )
    return _view(kma, added)


def change_alert_channel(
    kma: Appliance,
    actor: Actor,
    channel_id: str,
    kind: str,
    name: str,
    settings: dict[str, Any],
    given: dict[str, str | None],
    *,
    enabled: bool,
    warnings: bool,
    audit_classes: list[str],
) -> ChannelView:
    if kind != alert_channels.channel(kma, channel_id).kind:
        raise ValidationFailed("A channel's kind cannot change: add a new channel instead.")
    changed = alert_channels.change_channel(
        kma,
        actor,
        channel_id,
        name,
        settings,
        given,
        enabled=enabled,
        warnings=warnings,
        audit_classes=audit_classes,
    )
    return _view(kma, changed)


def _view(kma: Appliance, ch: Channel) -> ChannelView:
    return ChannelView(
        id=ch.id,
        name=ch.name,
        kind=ch.kind,
        enabled=ch.enabled,
        warnings=ch.warnings,
        audit_classes=list(ch.audit_classes),
        settings=ch.settings,
        secrets_set=sorted(k for k, v in stored_secrets(kma, ch.id).items() if v),
        updated_at=ch.updated_at,
        this_kma=alert_sender(kma).channel_status(ch.id),
    )


def alert_sender(kma: Appliance) -> AlertSender:
    """This KMA's one alert sender (started by `kma serve`, kma/runtime/running.py)."""
    return kma.part(AlertSender)


def announcer(kma: Appliance) -> str:
    """The KMA that announces the cluster's warnings (those every KMA sees in the store alike: a
    backup's age, tamper events, certificates, a rotation): the first by ID of the cluster's KMAs
    whose node the cluster reaches now, so each is announced once, and by the next KMA when that
    one stops (it goes on from the warnings recorded, announcing only what changed). A KMA that
    cannot tell (its node answers no status) announces them too: twice rather than never."""
    if kma.store.cluster is None:
        return kma.kma_id
    try:
        reachable = {n.kma_id for n in kma.store.cluster_nodes() if n.reachable}
    except KmaError:
        return kma.kma_id
    kmas = kma.store.query(  # an unlocked KMA first: one that started locked holds no channel secrets
        "SELECT id FROM kmas WHERE removed_at IS NULL AND witness = 0 ORDER BY locked, id"
    )
    return next((str(r["id"]) for r in kmas if r["id"] in reachable), kma.kma_id)
