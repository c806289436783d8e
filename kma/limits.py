"""How long the listeners wait and how many connections they hold: `[listeners]` in kma.toml.

Anyone who can reach a port can open connections and say nothing. Each listener therefore
bounds the TLS handshake and the time to send a request, holds at most so many connections, and
at most so many unidentified ones from one address. The service listener keeps part of its room
for enrolled agents (connections that present a client certificate of the cluster CA), so
strangers cannot crowd out the tape drives. Every value can be set in kma.toml, for example:

    [listeners]
    management_max_connections = 64
    handshake_timeout = 5

The defaults and what each means are in docs/security.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields
from typing import Any

from kma.errors import ValidationFailed

# One HTTP exchange on the service listener (an enrollment: Argon2id, signing and a durable commit,
# which on a loaded cluster waits out a leader election). The enrolling agent waits longer than this.
ENROLLMENT_DEADLINE = 60.0


@dataclass(frozen=True)
class ListenerLimits:
    handshake_timeout: float = 10.0  # seconds to finish the TLS handshake (both listeners)
    request_timeout: float = 10.0  # seconds to send a whole HTTP request, headers and body
    message_timeout: float = 10.0  # service: to finish sending a KMIP message once it started
    agent_idle_timeout: float = 300.0  # service: an enrolled agent's connection, between messages
    anonymous_idle_timeout: float = 10.0  # service: a connection without a client certificate, idle
    management_max_connections: int = 512
    service_max_connections: int = 1024
    kept_for_agents: int = 256  # of the service connections: only for enrolled agents
    max_per_address: int = 128  # from one address: in their handshake; and without a client certificate
    enrollments_at_once: int = 2  # each costs an Argon2id verification and a signature
    refusals_per_second: int = 20  # per listener, of peers without an identity, recorded one by one
    kmip_max_answer: int = 1 << 20  # bytes of one KMIP answer's payloads (kma/kmip/budget.py)
    # Addresses of reverse proxies whose X-Forwarded-For is believed; none by default.
    trusted_proxies: tuple[str, ...] = ()

    @classmethod
    def from_table(cls, table: dict[str, Any]) -> ListenerLimits:
        """The `[listeners]` table of kma.toml; a wrong name or value is refused, with the fix."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(table) - set(known))
        if unknown:
            raise ValidationFailed(
                f"kma.toml [listeners]: unknown setting {unknown[0]!r}; the settings are {', '.join(known)}."
            )
        values: dict[str, Any] = {}
        for name, value in table.items():
            if name == "trusted_proxies":
                if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                    raise ValidationFailed(
                        'kma.toml [listeners]: trusted_proxies is a list of addresses, e.g. ["10.0.0.5"].'
                    )
                values[name] = tuple(value)
                continue
            kind = int if known[name].type == "int" else float
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or value <= 0
                or (kind is int and not isinstance(value, int))
            ):
                what = "whole number" if kind is int else "number of seconds"
                raise ValidationFailed(f"kma.toml [listeners]: {name} must be a positive {what}.")
            values[name] = kind(value)
        limits = cls(**values)
        if limits.kept_for_agents >= limits.service_max_connections:
            raise ValidationFailed(
                "kma.toml [listeners]: kept_for_agents must be less than "
                "service_max_connections, or no one could enroll."
            )
        return limits


class Refused(Exception):
    """A connection the listener will not hold; the message says why (for the audit trail)."""


class Full(Refused):
    """The listener holds as many connections as it may: the management listener then makes room
    by closing an idle one (kma/api/listener.py); the service listener refuses."""


class Crowded(Refused):
    """As many connections from this address are in their handshake as one address may have: the
    service listener then makes room by closing the oldest of them (kma/kmip/server.py)."""


@dataclass(eq=False)  # each ticket is its own: held in sets and dicts by identity
class Ticket:
    """One admitted connection's place in its listener's counts."""

    host: str
    handshaken: bool = False  # its TLS handshake is done
    anonymous: bool = False  # and it showed no client certificate
    released: bool = False  # no longer counted (a connection closed to make room is counted out at once)


class ConnectionGate:
    """Counts one listener's connections and refuses those over its limits.

    Used from its listener's event loop only, so it needs no lock. Per address, two counts of at
    most `per_address` each: connections still in their handshake (all of the management
    listener's, which never asks for a certificate), and connections that finished it without a
    client certificate. An enrolled agent's connection leaves the first count when its handshake
    shows its certificate and never enters the second, so certificate-less connections from a
    drive's own address (a library controller, a NAT) cannot keep the drive out. Those must also
    fit in the room not kept for agents.
    """

    def __init__(self, most: int, per_address: int, kept_for_agents: int = 0) -> None:
        self.most = most
        self.per_address = per_address
        self.most_anonymous = most - kept_for_agents
        self.open = 0
        self.anonymous = 0
        self._handshaking: Counter[str] = Counter()
        self._anonymous: Counter[str] = Counter()

    def admit(self, host: str) -> Ticket:
        if self._handshaking[host] >= self.per_address:
            raise Crowded(
                f"connection refused: {self.per_address} unidentified connections from {host} "
                "are open, the limit per address"
            )
        if self.open >= self.most:
            raise Full(f"connection refused: {self.open} connections are open, this listener's limit")
        self.open += 1
        self._handshaking[host] += 1
        return Ticket(host)

    def handshaken(self, ticket: Ticket, identified: bool) -> None:
        """After the TLS handshake: an agent's connection is no longer counted against its address."""
        if ticket.released:  # closed to make room meanwhile: it counts no more
            return
        _forget(self._handshaking, ticket.host)
        ticket.handshaken = True
        if identified:
            return
        if self.anonymous >= self.most_anonymous:
            raise Refused(
                f"connection refused: {self.anonymous} connections without a client certificate "
                "are open; the rest is kept for enrolled agents"
            )
        if self._anonymous[ticket.host] >= self.per_address:
            raise Refused(
                f"connection refused: {self.per_address} connections without a client certificate "
                f"from {ticket.host} are open, the limit per address"
            )
        self.anonymous += 1
        self._anonymous[ticket.host] += 1
        ticket.anonymous = True

    def release(self, ticket: Ticket) -> None:
        if ticket.released:
            return
        ticket.released = True
        self.open -= 1
        if ticket.anonymous:
            self.anonymous -= 1
            _forget(self._anonymous, ticket.host)
        elif not ticket.handshaken:
            _forget(self._handshaking, ticket.host)


def _forget(counts: Counter[str], host: str) -> None:
    counts[host] -= 1
    if counts[host] <= 0:
        del counts[host]
