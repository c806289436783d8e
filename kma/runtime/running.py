"""What runs beside a served KMA's listeners: `kma serve` (kma/runtime/server.py) starts it once the
sockets are bound and stops it after they close.

At start the KMA records where it listens (its service address, and on a cluster node its Raft
address and its node certificate, which the other nodes' rqlited trust, once it is unlocked: they
are signed, kma/services/integrity/entry_signatures.py), unlocks itself if
autonomous unlock is on (and no Security Officer's lock stands), and says so in the audit trail;
then the key pool fills in the background, the audit trail is pruned and database backups are taken
on schedule.
"""

from __future__ import annotations

import time

from kma import __version__
from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.cluster.rqlited import VERSION as RQLITE_VERSION
from kma.cluster.rqlited import RqliteNode
from kma.cluster.watch import ClusterWatch
from kma.crypto import WrappingKey
from kma.services.alerts import alert_sender
from kma.services.audit.audit_forwarding import audit_forwarder
from kma.services.audit.audit_pruner import auto_prune
from kma.services.backup_schedule import backup_scheduler
from kma.services.certificates.certificate_expiry import first_certificate, recorded
from kma.services.certificates.certificate_renewal import certificate_watch
from kma.services.integrity import entry_signatures, key_macs, row_macs
from kma.services.keypool import key_pool
from kma.services.master_key import master_keys
from kma.services.master_key.master_rewrap import rewrap
from kma.services.quorum.locking import unlock_autonomously
from kma.services.reports.report_schedule import report_scheduler
from kma.services.successors import rotation
from kma.steps import step
from kma.store import Stmt
from kma.store.schema import latest_schema_version

CATCH_UP_WAIT_S = 30.0


class Running:
    """Starts and stops the workers of one served KMA (kma/worker.py): the key pool's refill, the
    audit pruner, the backup and report schedulers, the cluster watch, the audit forwarder, the alert
    sender and the key rotation. The KMA (its `Appliance`) owns them; this is the order they start
    and stop in."""

    def __init__(self, kma: Appliance, node: RqliteNode | None = None) -> None:
        self.kma = kma
        self.node = node  # this KMA's rqlite node; None when its store is embedded
        self.pool = key_pool(kma)
        self.pruner = auto_prune(kma)
        self.rotation = rotation(kma)
        self.backups = backup_scheduler(kma)
        self.reports = report_scheduler(kma)  # signed reports into a folder, by e-mail
        # locks made elsewhere; removed KMAs out of Raft; the node trusting only current members
        self.cluster_watch = ClusterWatch(kma, node)
        self.forwarder = audit_forwarder(kma)
        self.rewrap = rewrap(kma)  # a master key rotation's background half, here or started elsewhere
        self.alerts = alert_sender(kma)
        self.certificates = certificate_watch(kma)  # expiry warnings; renews its listener certificate

    def start(self, management_address: str, service_address: str, master: WrappingKey | None = None) -> None:
        """`master`: given by the set-up that has just made this KMA (its key split proven a moment
        ago), which then serves at once, unlocked; after a restart, autonomous unlock decides."""
        # What it records and whether it may unlock itself, as the cluster has it now, not as a
        # restarted node's stale replica does (and its outbox shipped first).
        self._catch_up()
        self._record_where_it_listens(management_address, service_address)
        self._unlock(master)
        self._start_the_workers()

    @step("start")
    def _record_where_it_listens(self, management_address: str, service_address: str) -> None:
        kma = self.kma
        known = latest_schema_version()
        kma.own_entry = {"service_address": service_address, "management_address": management_address}
        if self.node is not None:
            kma.own_entry["raft_address"] = self.node.config.raft_address
            kma.own_entry["node_cert_pem"] = self.node.files.node_cert.read_text(encoding="ascii")
        kma.commit(
            kma.itself,
            "kma.listen",
            [
                # Its version and master key backend too: a joined KMA's row is made by another KMA.
                # A signed management address it records once unlocked (entry_signatures.own_routes).
                Stmt(
                    "UPDATE kmas SET management_address = CASE WHEN route_signature IS NULL THEN ? ELSE "
                    "management_address END, version = ?, master_key = ? WHERE id = ? AND "
                    "(management_address, version, master_key) IS NOT (?, ?, ?)",
                    (
                        management_address,
                        __version__,
                        kma.vault.backend,
                        kma.kma_id,
                        management_address,
                        __version__,
                        kma.vault.backend,
                    ),
                ),
                Stmt(
                    "UPDATE kmas SET schema_version = ? WHERE id = ? AND schema_version IS NOT ?",
                    (known, kma.kma_id, known),
                ),  # the newest schema its release knows, its own word
                *self._node_statements(),
                *self._own_certificates(),
            ],
            f"listening on {management_address} (management) and {service_address} (service)"
            + (f", Raft on {self.node.config.raft_address}" if self.node else ""),
            ("kma", kma.kma_id),
            retention=Retention.MEDIUM,
        )

    @step("start")
    def _unlock(self, master: WrappingKey | None) -> None:
        """With the set-up's master key, or by autonomous unlock; otherwise it stays locked."""
        kma = self.kma
        if master is not None:
            master_keys.unlock(kma, master)
        unlocked = master is not None or unlock_autonomously(kma)
        if unlocked:
            row_macs.after_unlock(kma)
            key_macs.seal_existing(kma)
            entry_signatures.after_unlock(kma)
        kma.audit(
            kma.itself,
            "kma.start",
            "KMA set up and started unlocked (its key split was just proven)"
            if master is not None
            else "KMA started and unlocked itself (autonomous unlock)"
            if unlocked
            else "KMA started locked; a quorum of the key split must unlock it",
            condition=Condition.SUCCESS if unlocked else Condition.WARNING,
            subject=("kma", kma.kma_id),
            event_class="kma",
        )
        problem = kma.vault.hsm_problem
        if problem:
            kma.audit(
                kma.itself,
                "kma.hsm_unavailable",
                f"the HSM cannot be used; staying locked: {problem}",
                condition=Condition.ERROR,
                subject=("kma", kma.kma_id),
                event_class="security",
            )

    def _start_the_workers(self) -> None:
        self.pool.start()
        self.pruner.start()
        self.rotation.start()
        self.backups.start()
        self.reports.start()
        self.cluster_watch.start()
        self.forwarder.start()
        self.rewrap.start()
        self.alerts.start()
        self.certificates.start()

    def _catch_up(self) -> None:
        """After a start, wait (a while) until the store has caught up with the cluster (a restarted
        node's replica may not even hold this KMA's row yet); if it has not by then, the KMA starts
        as its replica has it and serves agents once caught up (kma/kmip/server.py)."""
        deadline = time.monotonic() + CATCH_UP_WAIT_S
        while not self.kma.store.caught_up() and time.monotonic() < deadline:
            time.sleep(0.05)

    def _node_statements(self) -> list[Stmt]:
        """The rqlited release a cluster node runs (a rolling rqlite upgrade shows which nodes have
        moved). Its Raft address and node certificate, which the others trust, are recorded signed
        once it is unlocked (kma/services/integrity/entry_signatures.py)."""
        if self.node is None:
            return []
        return [
            Stmt(
                "UPDATE kmas SET rqlite_version = ? WHERE id = ? AND rqlite_version IS NOT ?",
                (RQLITE_VERSION, self.kma.kma_id, RQLITE_VERSION),
            )
        ]

    def _own_certificates(self) -> list[Stmt]:
        """Its listener and node certificates as it presents them, so that every KMA shows when
        they expire (the first KMA's come from set-up, a renewed one's from before a restart)."""
        listener = first_certificate(self.kma.data_dir.server_cert.read_text(encoding="ascii"))
        out = [recorded(self.kma.kma_id, "server", listener)]
        if self.node is not None:
            out.append(
                recorded(self.kma.kma_id, "node", self.node.files.node_cert.read_text(encoding="ascii"))
            )
        return out

    def stop(self) -> None:
        self.rewrap.stop()
        self.alerts.stop()
        self.certificates.stop()
        self.forwarder.stop()
        self.cluster_watch.stop()
        self.backups.stop()
        self.reports.stop()
        self.pruner.stop()
        self.rotation.stop()
        self.pool.stop()
