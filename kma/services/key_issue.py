"""A new key from the pool: the one place where a key is taken, bound and readied for its write.

Every road to a new key comes here: an agent's KMIP Create, Write Key and Write From Beginning
(kma/kmip/ops_keys.py, ops_tape.py) and an Operator's "issue key" (kma/services/keys.py). A key
is taken from this KMA's pool (kma/services/keypool.py; generated inline when the pool is
empty), its data unit registered, the key assigned to its group (activated, or Pre-Active), and
what the caller keeps with it added. The batch may go to a cluster KMA's outbox (the deferred
write) only when it is this KMA's own pool key and nothing else. The caller commits the batch
its way, with its audit event, and gives the key back to the pool if the commit is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kma.appliance import Appliance
from kma.services.agent_keys import key_lifecycle
from kma.services.integrity import key_macs
from kma.services.keypool import key_pool, new_key_id
from kma.store import Stmt
from kma.store.batch import Deferred


@dataclass(frozen=True)
class KeyIssue:
    """A key about to be issued: the statements of its batch (and their deferred form)."""

    kma: Appliance
    key_id: str
    from_pool: bool
    statements: list[Stmt]
    deferred: Deferred | None
    note: str  # for the audit message: the data unit was shredded and becomes readable again

    def give_back(self) -> None:
        """The batch was refused: a pool key goes back to the pool."""
        if self.from_pool:
            key_pool(self.kma).give_back(self.key_id)


def prepare(
    kma: Appliance,
    group: str,
    data_unit: str | None,
    now: int,
    *,
    agent_id: str | None,
    groups: frozenset[str] = frozenset(),
    activate: bool,
    agent_asks: bool,
    only_if_no_write_key: bool = False,
    before: Sequence[Stmt] = (),
    keep: Callable[[str], list[Stmt]] = lambda key_id: [],
) -> KeyIssue:
    """The batch that issues one key. `agent_asks`: an agent's request, checked again inside the
    SQL (enabled, may use the group) and allowed the deferred write; `before`: statements that
    go first (Write From Beginning's release); `keep`: what the caller keeps with the key."""
    kma.vault.master()  # a locked KMA issues nothing
    key_id = key_pool(kma).take()
    from_pool = key_id is not None
    statements = list(before)
    note = key_lifecycle.shredded_note(kma, data_unit)
    if data_unit is not None:
        statements.append(key_lifecycle.register_data_unit(data_unit, now))
    if key_id is None:
        key_id = new_key_id()
        statements.append(key_pool(kma).generate_stmt(key_id, now))
    statements.append(
        key_lifecycle.assign_pool_key(
            key_id,
            agent_id,
            group,
            data_unit,
            now,
            activate,
            only_if_no_write_key,
            agent_asks=agent_asks,
            groups=groups,
            mac=key_macs.mac(
                kma.vault.row_mac_key(), key_id, key_group_id=group, data_unit_id=data_unit, agent_id=agent_id
            ),
        )
    )
    kept = keep(key_id)
    statements += kept
    deferred = None
    if agent_asks and agent_id is not None and kma.store.deferring and from_pool and not before and not kept:
        deferred = key_lifecycle.deferred_assignment(kma, key_id, agent_id, group, data_unit, now, activate)
    return KeyIssue(kma, key_id, from_pool, statements, deferred, note)
