"""Bounded failures for whatever a person proves with a passphrase: signing in, and a key split
member's credential on every path that takes one (approving, submitting with credentials,
unlocking, changing the key split).

A failure slot is taken *before* each passphrase check, by the same statement that checks the
lock (an upsert guarded by `locked_until`), so however many guesses arrive at once, at most
`limit` of them are ever checked per counter. A right passphrase gives its slot back, a wrong one
keeps it; the slot that reaches the limit sets `locked_until`, and until then nothing is checked,
the right passphrase included. A lockout ends after `LOCKOUT_SECONDS`, or when the passphrase is
set anew (a user's passphrase, or a key split change for members). Failures are forgotten after
`LOCKOUT_SECONDS` without a new one.

Counters (kind, name, address):
- ("user", user ID as typed, source address), limit 5: one workstation guessing one user.
- ("user", user ID as typed, "*"), limit 20: the same user from everywhere, so spreading guesses
  over many addresses stays bounded too.
- ("kma", KMA ID, source address), limit 5, and ("kma", KMA ID, "*"), limit 20: a KMA passphrase
  (a join), counted as sign-ins are, so a stranger cannot block a pending join from elsewhere.
- ("key_split_member", member, "*"), limit 5: a member's passphrase, whoever types it.
Why per address for users: with one count per user, anyone who can reach the management port
could lock any Security Officer out by typing five wrong passphrases; per address, the officer's
own workstation still signs in while a stranger's is locked out, and it takes many addresses to
lock the account everywhere. User IDs that do not exist are counted like known ones, so the
answer (401, then 429) never tells which users exist. Every refusal is audited with the address.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kma.appliance import Appliance
from kma.store import Batch, Refused, Stmt

MAX_FAILURES = 5
ACCOUNT_FAILURES = 20
LOCKOUT_SECONDS = 15 * 60
EVERYWHERE = "*"


@dataclass(frozen=True)
class Counter:
    kind: str  # user | key_split_member
    name: str
    address: str = EVERYWHERE
    limit: int = MAX_FAILURES


def for_sign_in(user_id: str, address: str) -> tuple[Counter, Counter]:
    return Counter("user", user_id, address), Counter("user", user_id, EVERYWHERE, ACCOUNT_FAILURES)


def for_join(kma_id: str, address: str) -> tuple[Counter, Counter]:
    return Counter("kma", kma_id, address), Counter("kma", kma_id, EVERYWHERE, ACCOUNT_FAILURES)


def for_member(member: str) -> tuple[Counter]:
    return (Counter("key_split_member", member),)


def _take(counter: Counter, now: int) -> Stmt:
    # In the DO UPDATE branch every column name is the row as it was: the count restarts at 1
    # once a lockout has passed or the last failure is older than the window.
    fresh = f"(locked_until IS NOT NULL OR updated_at <= {now - LOCKOUT_SECONDS})"
    count = f"CASE WHEN {fresh} THEN 1 ELSE failures + 1 END"
    return Stmt(
        "INSERT INTO lockouts (kind, name, address, failures, locked_until, updated_at) "
        "VALUES (:kind, :name, :address, 1, CASE WHEN :limit <= 1 THEN :until END, :now) "
        "ON CONFLICT (kind, name, address) DO UPDATE SET "
        f"failures = {count}, "
        f"locked_until = CASE WHEN {count} >= :limit THEN :until END, "
        "updated_at = :now "
        "WHERE locked_until IS NULL OR locked_until <= :now",
        {
            "kind": counter.kind,
            "name": counter.name,
            "address": counter.address,
            "limit": counter.limit,
            "until": now + LOCKOUT_SECONDS,
            "now": now,
        },
        expect=1,
    )


def take_slots(kma: Appliance, counters: Sequence[Counter]) -> bool:
    """Take one failure slot on every counter, atomically; False (nothing taken) when any is locked."""
    now = kma.clock.now()
    stale = Stmt(
        "DELETE FROM lockouts WHERE updated_at <= ? AND (locked_until IS NULL OR locked_until <= ?)",
        (now - LOCKOUT_SECONDS, now),
    )
    try:
        kma.store.write(Batch([stale, *(_take(c, now) for c in counters)]))
    except Refused:
        return False
    return True


def give_back(counter: Counter) -> Stmt:
    """The right passphrase returns its slot (and so lifts a lockout that this very slot set);
    other people's failures on a shared counter stay counted."""
    return Stmt(
        "UPDATE lockouts SET failures = max(failures - 1, 0), locked_until = CASE WHEN failures - 1 >= ? "
        "THEN locked_until END WHERE kind = ? AND name = ? AND address = ?",
        (counter.limit, counter.kind, counter.name, counter.address),
    )


def forget(counter: Counter) -> Stmt:
    """The whole count goes (a user signed in from this very address)."""
    return Stmt(
        "DELETE FROM lockouts WHERE kind = ? AND name = ? AND address = ?",
        (counter.kind, counter.name, counter.address),
    )


def clear(kind: str, name: str | None = None) -> Stmt:
    """Lift every lockout of a user (their passphrase was set) or of all members (new key split)."""
    if name is None:
        return Stmt("DELETE FROM lockouts WHERE kind = ?", (kind,))
    return Stmt("DELETE FROM lockouts WHERE kind = ? AND name = ?", (kind, name))


def standing(kma: Appliance, counter: Counter) -> tuple[int, int | None]:
    """(failures, locked_until) of a counter as it is now; for messages, not for decisions."""
    row = kma.store.query_one(
        "SELECT failures, locked_until FROM lockouts WHERE kind = ? AND name = ? AND address = ?",
        (counter.kind, counter.name, counter.address),
    )
    return (0, None) if row is None else (int(row[0]), row[1])
