"""A thin client of the local rqlited's HTTP API, over mutual TLS with the node certificate.

rqlite answers a transaction with HTTP 200 and one result per statement; a failed statement
carries `error` and rolls the whole request back. `execute` turns any `error` into `StatementFailed`
naming the statement, so callers cannot mistake a refused request for a committed one.
"""

from __future__ import annotations

import logging
import re
import ssl
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from kma.errors import ClusterUnavailable, ValidationFailed

logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise

# rqlite takes a string parameter of this form for a BLOB (its X'..' literal): such a text cannot
# travel as itself, so it is refused rather than stored as something else.
_LOOKS_LIKE_BLOB = re.compile(r"\s*[xX]'([0-9a-fA-F]{2})*'\s*")


__all__ = ["ClusterUnavailable", "RqliteClient", "StatementFailed"]


SETTLE_WAIT_S = 5.0  # how long a request waits for its node's rqlited to be back (a restart)
RECENTLY_S = 10.0  # after a restart, "no leader" answers are the cluster settling, waited out too


class Restarts:
    """The rqlited nodes of this process being restarted (kma/cluster/rqlited.py: each node's
    rqlited restarts whenever the cluster's members change, kma/cluster/trust.py): meanwhile its
    HTTP API refuses connections and, a moment after, the cluster may have no leader. A request
    that meets either waits for it, bounded, rather than failing at once (issue 39, item 6).
    A restart also waits for the requests already sent to its node to be answered: rqlited cuts
    the connections it holds when it stops, and a write cut mid-way may or may not have been
    applied, which nobody could then tell its user."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._down: set[str] = set()
        self._back_at: dict[str, float] = {}
        self._in_flight: dict[str, int] = {}

    def begin(self, address: str) -> None:
        """No new request is sent to the node; those in flight are answered first (bounded)."""
        with self._lock:
            self._down.add(address)
            self._lock.wait_for(lambda: not self._in_flight.get(address), SETTLE_WAIT_S)

    @contextmanager
    def sending(self, address: str) -> Iterator[None]:
        """One request to the node at `address`: sent once the node is not being restarted (or
        the wait ran out: the request then meets the stopped node and says so)."""
        with self._lock:
            self._lock.wait_for(lambda: address not in self._down, SETTLE_WAIT_S)
            self._in_flight[address] = self._in_flight.get(address, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight[address] -= 1
                self._lock.notify_all()

    def end(self, address: str) -> None:
        with self._lock:
            self._down.discard(address)
            self._back_at[address] = time.monotonic()
            self._lock.notify_all()

    def settling(self, address: str) -> bool:
        """Being restarted, or back from a restart only a moment ago."""
        with self._lock:
            back = self._back_at.get(address)
            return address in self._down or (back is not None and time.monotonic() - back < RECENTLY_S)

    def wait(self, address: str, timeout: float) -> bool:
        """Wait until the node is back (at most `timeout` s); whether it is."""
        with self._lock:
            return self._lock.wait_for(lambda: address not in self._down, timeout)


RESTARTS = Restarts()


class StatementFailed(Exception):
    def __init__(self, index: int, error: str) -> None:
        super().__init__(f"statement {index}: {error}")
        self.index = index
        self.error = error


def rqlite_param(value: Any) -> Any:
    """A Python value as rqlite's JSON takes it (bytes as SQLite's X'..' blob literal)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"x'{bytes(value).hex()}'"
    if isinstance(value, str) and _LOOKS_LIKE_BLOB.fullmatch(value):
        raise ValidationFailed(f"The text {value!r} cannot be stored: it reads as a binary literal.")
    return value


def rqlite_statement(sql: str, params: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    if isinstance(params, Mapping):
        return [sql, {k.lstrip(":"): rqlite_param(v) for k, v in params.items()}]
    return [sql, *(rqlite_param(v) for v in params)]


def tls_context(trusted: Path, cert: Path, key: Path) -> ssl.SSLContext:
    """Mutual TLS trusting the certificates in `trusted` themselves (a node's own certificate is
    trusted as it is, not through the CA that signed it)."""
    context = ssl.create_default_context(cafile=str(trusted))
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    context.load_cert_chain(str(cert), str(key))
    return context


class RqliteClient:
    # An answer later than this counts as "the cluster takes no changes now" (a write may still
    # have committed: the store then reads its chain's head back). Below rqlite's 10 s apply
    # timeout and the management clients' 15 s, so a cut-off KMA answers them, and stops, promptly.
    # `credential`: the node credential (user, password) rqlited's `-auth` asks of every request.
    def __init__(
        self,
        http_address: str,
        context: ssl.SSLContext,
        credential: tuple[str, str] | None = None,
        timeout: float = 5.0,
    ) -> None:
        self.base = f"https://{http_address}"
        self._context = context
        self.address = http_address
        self._http = httpx.Client(base_url=self.base, verify=context, timeout=timeout, auth=credential)

    def use_certificate(self, cert: Path, key: Path) -> None:
        """A renewed node certificate (kma/cluster/node_renewal.py): presented from the next
        connection on, and trusted as the restarted rqlited's, beside the one before."""
        self._context.load_verify_locations(cafile=str(cert))
        self._context.load_cert_chain(str(cert), str(key))

    def close(self) -> None:
        self._http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        with RESTARTS.sending(self.address):
            return self._http.request(method, path, **kwargs)

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._send(method, path, **kwargs)
        except httpx.ConnectError as exc:  # nothing was sent: its rqlited may be restarting
            if not (RESTARTS.settling(self.address) and RESTARTS.wait(self.address, SETTLE_WAIT_S)):
                raise ClusterUnavailable(f"the cluster store cannot be reached: {exc}") from exc
            return self._request_once(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClusterUnavailable(f"the cluster store cannot be reached: {exc}") from exc
        return self._checked(response)

    def _request_once(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._send(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClusterUnavailable(f"the cluster store cannot be reached: {exc}") from exc
        return self._checked(response)

    @staticmethod
    def _checked(response: httpx.Response) -> httpx.Response:
        if response.status_code >= 500 or response.status_code == 408:
            text = response.text.strip()[:200]
            raise ClusterUnavailable(f"the cluster store refused the request: {text or response.status_code}")
        return response

    def _leader_settled(self, method: str, path: str, **kwargs: Any) -> Any:
        """The answer's body; a "no leader" answer a moment after a node's restart (nothing was
        applied) is asked again until a leader answers, at most `SETTLE_WAIT_S`."""
        deadline = time.monotonic() + SETTLE_WAIT_S
        while True:
            try:
                body = self._request(method, path, **kwargs).json()
            except ClusterUnavailable as exc:
                if not self._wait_for_leader(exc.message, deadline):
                    raise
            else:
                error = str(body.get("error", "")) if isinstance(body, dict) else ""
                if not self._wait_for_leader(error, deadline):
                    return body
            time.sleep(0.2)

    def _wait_for_leader(self, error: str, deadline: float) -> bool:
        """Whether `error` says only that there is no leader (nothing was applied; "leadership lost"
        while committing is no such answer) while this node settles after a restart."""
        no_leader = any(s in error for s in ("not leader", "leader not found", "no leader"))
        return no_leader and time.monotonic() < deadline and RESTARTS.settling(self.address)

    def execute(self, statements: Sequence[list[Any]], transaction: bool = True) -> list[dict[str, Any]]:
        """Run `statements` (already in rqlite's form) in one request; raises StatementFailed with
        the first failed statement's index: then nothing of the request was applied."""
        params = {"transaction": ""} if transaction else {}
        body = self._leader_settled("POST", "/db/execute", params=params, json=list(statements))
        if "error" in body:  # the node could not run the request at all (no leader, forwarding failed)
            raise ClusterUnavailable(f"the cluster store cannot take changes now: {body['error']}")
        results: list[dict[str, Any]] = body.get("results", [])
        for index, result in enumerate(results):
            if "error" in result:
                raise StatementFailed(index, str(result["error"]))
        return results

    def query(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = (), level: str = "linearizable"
    ) -> list[list[Any]]:
        body = self._leader_settled(
            "POST", "/db/query", params={"level": level}, json=[rqlite_statement(sql, params)]
        )
        if "error" in body or not body.get("results"):
            raise ClusterUnavailable(f"the cluster store cannot answer now: {body.get('error', body)}")
        result = body["results"][0]
        if "error" in result:
            raise StatementFailed(0, str(result["error"]))
        values: list[list[Any]] = result.get("values", [])
        return values

    def get_json(self, path: str, **params: str) -> Any:
        return self._request("GET", path, params=params).json()

    def ready(self) -> bool:
        try:
            return self._http.get("/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def backup(self, destination: Path) -> None:
        """A consistent SQLite copy of the cluster's store (rqlite's hot backup)."""
        with self._http.stream("GET", "/db/backup", timeout=300) as response:
            if response.status_code != 200:
                raise ClusterUnavailable(f"the cluster store refused the backup: {response.status_code}")
            with destination.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)

    def boot(self, sqlite_file: Path) -> None:
        """Load a SQLite file into this (fresh, single) node: the start of a cluster."""
        with sqlite_file.open("rb") as data:
            response = self._request(
                "POST",
                "/boot",
                content=data.read(),
                timeout=300,
                headers={"Content-Type": "application/octet-stream"},
            )
        if response.status_code != 200:
            raise ClusterUnavailable(f"rqlite refused to boot from {sqlite_file}: {response.text.strip()}")

    def remove_node(self, node_id: str) -> None:
        """Take a node out of the Raft configuration (rqlite's DELETE /remove; needs a leader)."""
        response = self._request("DELETE", "/remove", json={"id": node_id})
        if response.status_code != 200:
            raise ClusterUnavailable(
                f"rqlite refused to remove node {node_id}: {response.text.strip()[:200]}"
            )
