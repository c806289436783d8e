"""The key split credentials: opening members' shares, rebuilding the root secret, re-splitting.

Quorum is a cryptographic fact here, not a counter: `reconstruct` combines M opened shares into
the root secret and proves it by unwrapping `cluster.master_wrapped_by_root`. Every quorum
operation runs only with the `Quorum` this returns, so none can run without M real credentials.
Shamir shares carry no integrity of their own, which is why the unwrap is the check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kma.appliance import Appliance
from kma.crypto import (
    BadPassphrase,
    CryptoError,
    combine_shares,
    open_share,
)
from kma.crypto.generations import FIRST, MasterKeys
from kma.domain.actor import Actor
from kma.domain.validation import check_id
from kma.errors import Conflict, KmaError, LockedOut, ValidationFailed
from kma.services.integrity import row_macs
from kma.services.sign_in import lockout
from kma.store import Batch, Stmt
from kma.vault import unwrap_master_with_root

Share = tuple[int, bytes]
MAX_SPLIT_MEMBERS = 10
MIN_LIFETIME, MAX_LIFETIME = 300, 30 * 86400  # of a pending quorum operation


def check_split_members(threshold: Any, names: list[str]) -> None:
    """The threshold and the member names (a key split change names members; each then sets their
    own passphrase)."""
    if not names:
        raise ValidationFailed("The key split needs at least one member.")
    if len(names) > MAX_SPLIT_MEMBERS:
        raise ValidationFailed(
            f"The key split can have at most {MAX_SPLIT_MEMBERS} members, not {len(names)}."
        )
    if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1:
        raise ValidationFailed("The key split threshold must be a whole number of at least 1.")
    if threshold > len(names):
        raise ValidationFailed(
            f"The threshold ({threshold}) cannot exceed the number of members ({len(names)})."
        )
    folded = [n.casefold() for n in names]
    if len(set(folded)) != len(folded):
        twice = sorted({n for n in names if folded.count(n.casefold()) > 1})
        raise ValidationFailed(
            f"Each key split member must have a different name; names differing only in upper and lower "
            f"case are the same name: {', '.join(twice)}."
        )
    for name in names:
        check_id(name, "A key split member's name")


@dataclass(frozen=True)
class Credential:
    """One key split member's name and passphrase, as typed by a person; never stored."""

    member: str
    passphrase: str = field(repr=False)


@dataclass(frozen=True)
class KeySplit:
    """The cluster's key split as stored: sealed shares, never a clear one."""

    threshold: int
    generation: int
    lifetime: int  # seconds a pending quorum operation waits for approvals
    sealed: dict[str, str]  # member name -> share sealed under that member's passphrase
    master_wrapped_by_root: bytes
    master_generation: int = FIRST  # of the master key `master_wrapped_by_root` holds

    @property
    def members(self) -> list[str]:
        return sorted(self.sealed)


@dataclass(frozen=True)
class Quorum:
    """Proof that M members' credentials were given: the root secret and the master key it opens."""

    root_secret: bytes = field(repr=False)
    master: MasterKeys  # of the newest generation only
    members: tuple[str, ...]
    generation: int  # of the key split these members belong to


class WrongCredential(ValidationFailed):
    """A key split member is unknown or their passphrase is wrong (422, audited by the caller)."""


def current_split(kma: Appliance) -> KeySplit:
    with kma.store.snapshot() as conn:
        cluster = conn.execute(
            "SELECT split_threshold, split_generation, quorum_op_lifetime, master_wrapped_by_root, "
            "master_generation FROM cluster"
        ).fetchone()
        rows = conn.execute(
            "SELECT name, share_sealed, generation, mac FROM key_split_members WHERE generation = ?",
            (cluster[1],),
        ).fetchall()
    # A member row written without the KMA counts for nothing (an unlocked KMA can tell: row MACs).
    members = {r[0]: r[1] for r in rows if row_macs.genuine(kma, row_macs.SPLIT_MEMBERS, r)}
    return KeySplit(cluster[0], cluster[1], cluster[2], members, cluster[3], cluster[4])


def check_distinct(credentials: Sequence[Credential]) -> None:
    names = [c.member for c in credentials]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ValidationFailed(
            f"Each key split member counts once; given more than once: {', '.join(twice)}."
        )


def open_credential(kma: Appliance, split: KeySplit, credential: Credential) -> Share:
    """The member's share, or `WrongCredential` (an unknown member and a wrong passphrase alike).

    Each check takes one of the member's failure slots first (`kma.services.sign_in.lockout`): five wrong
    passphrases lock the member out for 15 minutes, whoever typed them and on whatever path, and
    while locked not even the right passphrase is checked. The caller audits the refusal.
    """
    member = credential.member
    sealed = split.sealed.get(member)
    if sealed is None:
        raise WrongCredential(f"'{member[:64]}' is not a member of the key split.")
    (counter,) = lockout.for_member(member)
    if not lockout.take_slots(kma, [counter]):
        _, until = lockout.standing(kma, counter)
        raise LockedOut(
            f"Key split member '{member}' is locked out after {counter.limit} wrong passphrases "
            f"until {_when(until)}; nothing is checked for this member until then."
        )
    try:
        share = open_share(sealed, member, credential.passphrase)
    except BadPassphrase:
        failures, until = lockout.standing(kma, counter)
        locked = f"; member '{member}' is now locked out until {_when(until)}" if until else ""
        raise WrongCredential(
            f"The passphrase of key split member '{member}' is wrong "
            f"({failures} of {counter.limit} failures{locked})."
        ) from None
    except CryptoError:
        raise KmaError(f"The stored share of key split member '{member}' is damaged.") from None
    kma.store.write(Batch([lockout.give_back(counter)]))
    return share


def _when(epoch: int | None) -> str:
    return "later" if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def reconstruct(split: KeySplit, shares: Sequence[Share], members: Sequence[str]) -> Quorum:
    """Combine at least M shares into the root secret and prove it opens the master key."""
    if len(shares) < split.threshold:
        raise Conflict(f"The quorum needs {split.threshold} key split members; {len(shares)} given.")
    try:
        root = combine_shares(list(shares)[: split.threshold])
        master = unwrap_master_with_root(root, split.master_wrapped_by_root)
    except (CryptoError, ValueError):
        raise Conflict(
            "These key split credentials do not rebuild the cluster's root secret "
            "(the key split may have changed)."
        ) from None
    return Quorum(root, MasterKeys(master, split.master_generation), tuple(members), split.generation)


# --- the key split as the Quorum page shows it, and how long operations wait ------------
@dataclass(frozen=True)
class KeySplitRow:
    """The key split without its shares, as the Quorum page shows it; the API's `KeySplit` reads it."""

    threshold: int
    members: list[str]
    generation: int
    operation_lifetime: int  # seconds a new pending quorum operation waits for approvals


def get_key_split(kma: Appliance) -> KeySplitRow:
    split = current_split(kma)
    return KeySplitRow(split.threshold, split.members, split.generation, split.lifetime)


def set_quorum_lifetime(kma: Appliance, actor: Actor, seconds: int) -> KeySplitRow:
    """How long new pending quorum operations wait for approvals (existing ones keep their expiry)."""
    if not MIN_LIFETIME <= seconds <= MAX_LIFETIME:
        raise ValidationFailed(
            f"The lifetime of a pending quorum operation must be {MIN_LIFETIME} seconds "
            f"to {MAX_LIFETIME // 86400} days."
        )
    kma.commit(
        actor,
        "cluster.quorum_lifetime",
        [
            Stmt("UPDATE cluster SET quorum_op_lifetime = ? WHERE id = 1", (seconds,), expect=1),
        ],
        f"pending quorum operations now expire after {seconds} seconds",
        ("cluster", "key_split"),
    )
    return get_key_split(kma)
