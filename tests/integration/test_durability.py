"""A KMA killed (SIGKILL) in the middle of a burst of key issues loses no acknowledged key.

Several operators issue keys as fast as they can, each recording the key IDs the KMA
acknowledged; the KMA is killed without warning while they are at it, then restarted. Every
acknowledged key must be there, active, with its audit event; the database must be consistent
and the audit trail must verify.
"""

from __future__ import annotations

import signal
import threading
from collections import Counter
from dataclasses import dataclass, field

from kms_client import KmaUnreachable, KmsClient
from tests.support.kma_process import RunningKma, read_only_db, run_kma
from tests.support.waiting import wait_until

THREADS = 6
KILL_AFTER = 60  # acknowledged keys before the kill; the burst goes on until the KMA dies


@dataclass
class Operator:
    client: KmsClient
    data_unit: str
    acknowledged: list[str] = field(default_factory=list)
    ended_by: BaseException | None = None

    def issue_until_the_kma_dies(self) -> None:
        try:
            while True:
                self.acknowledged.append(self.client.issue_key("backup-dallas", self.data_unit).id)
        except BaseException as exc:  # recorded and checked by the test
            self.ended_by = exc


def test_every_acknowledged_key_survives_a_sigkill_in_the_middle_of_a_burst(fresh_kma: RunningKma) -> None:
    setup = fresh_kma.client("op")
    operators = []
    for i in range(THREADS):
        setup.create_data_unit(f"DUR{i:03d}", "Burst cartridge")
        client = KmsClient(fresh_kma.address, ca_pem=fresh_kma.ca_pem, ca_fingerprint=fresh_kma.fingerprint)
        client.sign_in("op", fresh_kma.passphrases["op"])
        operators.append(Operator(client, f"DUR{i:03d}"))
    threads = [threading.Thread(target=o.issue_until_the_kma_dies, daemon=True) for o in operators]
    for thread in threads:
        thread.start()

    def burst_going() -> bool:
        assert all(t.is_alive() for t in threads), [o.ended_by for o in operators]
        return sum(len(o.acknowledged) for o in operators) >= KILL_AFTER

    wait_until(burst_going, 60, interval=0.005, what="the burst getting going")
    assert fresh_kma.process is not None
    fresh_kma.process.send_signal(signal.SIGKILL)  # no warning, no clean shutdown
    fresh_kma.process.wait(timeout=20)
    for thread in threads:
        thread.join(timeout=30)
    for operator in operators:
        operator.client.close()
        assert isinstance(operator.ended_by, KmaUnreachable), operator.ended_by  # the burst was cut off
    fresh_kma.kill()  # let the harness forget the dead process

    acknowledged = {key_id: o.data_unit for o in operators for key_id in o.acknowledged}
    assert (
        len(acknowledged) == sum(len(o.acknowledged) for o in operators) >= KILL_AFTER
    )  # no key issued twice

    fresh_kma.start()
    op, auditor = fresh_kma.client("op"), fresh_kma.client("auditor")
    for key_id, data_unit in acknowledged.items():
        key = op.get_key(key_id)
        assert (key.state, key.data_unit_id, key.key_group_id) == (
            "protect_and_process",
            data_unit,
            "backup-dallas",
        )
    issued_events = Counter(
        e.subject_id for e in auditor.iter_audit_events(operation="key.issue", subject_type="key")
    )
    assert all(issued_events[key_id] == 1 for key_id in acknowledged), (
        "an acknowledged key lost its audit event"
    )
    for operator in operators:  # keys committed but not yet acknowledged when the KMA died may also be there
        assert op.get_data_unit(operator.data_unit).key_count >= len(operator.acknowledged)

    with read_only_db(fresh_kma) as db:
        assert [tuple(r) for r in db.execute("PRAGMA integrity_check")] == [("ok",)]
        assert [tuple(r) for r in db.execute("PRAGMA foreign_key_check")] == []
    assert auditor.verify_audit_chain().intact

    # The restarted KMA goes on issuing fresh keys, never one it had already handed out.
    again = {op.issue_key("backup-dallas", "DUR000").id for _ in range(5)}
    assert len(again) == 5 and not again & acknowledged.keys()

    fresh_kma.stop()
    verified = run_kma("audit", "verify", "--data-dir", str(fresh_kma.data_dir), check=False)
    assert verified.returncode == 0, verified.stderr
