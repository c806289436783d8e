"""What quorum-protected operations are made of, for the features that define them: the key split
and its credentials (key_split.py), an operation's kind (op_type.py), the shares held between
approvals (escrow.py), the key split change and locking operations. The engine that takes an
operation from submission to its one run, and the table of every kind, sit above every feature
that adds one: kma/quorum/.
"""

from __future__ import annotations

from kma.appliance import Appliance


def pending_count(kma: Appliance) -> int:
    """Operations still waiting for approvals (the dashboard shows it)."""
    return int(
        kma.store.scalar(
            "SELECT count(*) FROM pending_quorum_ops WHERE state = 'pending' AND expires_at > ?",
            (kma.clock.now(),),
        )
        or 0
    )
