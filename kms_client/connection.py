"""`Connection`: the transport every part of `KmsClient` is given: one pinned TLS connection to a
KMA, the session token, failover to the cluster's other KMAs, and how an answer is read (a 2xx
body into a model, an error body into a typed error).

Threading: as `KmsClient`'s (one thread at a time, never the GUI thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, BinaryIO, TypeVar

import httpx

from ._http import base_url, error_from_response, translated_transport_errors, unreadable_response
from .errors import KmaUnreachable, TrustError
from .failover import Failover, KnownKma, failover_order, never_sent
from .reader import JsonObject, Page, read, read_page
from .trust import Trust, pinned_ca, ssl_context_for
from .wire import PendingQuorumOp

T = TypeVar("T")


class Connection:
    """See `KmsClient` for `ca_pem`, `ca_fingerprint`, `transport`, `cluster` and `on_failover`."""

    def __init__(
        self,
        address: str,
        *,
        ca_pem: str | None,
        ca_fingerprint: str,
        timeout: float,
        transport: httpx.BaseTransport | None,
        cluster: Sequence[KnownKma],
        on_failover: Callable[[Failover], None] | None,
    ) -> None:
        url = base_url(address)
        ca_pem, renewed = pinned_ca(address, ca_pem, ca_fingerprint, timeout, transport)
        # the cluster CA's renewed certificate, accepted for the pinned one: a manager saves it
        self.renewed_ca = Trust.from_pem(ca_pem) if renewed else None
        self.ca_pem = ca_pem  # what this connection trusts
        self.address = address
        self.timeout = timeout
        self.token: str | None = None
        # The cluster's KMAs (failover.py): when this one stops answering, the client goes on
        # with another. `on_failover` hears of it (called on the thread of the request).
        self.cluster = tuple(cluster)
        self.on_failover = on_failover
        self._switching = threading.Lock()
        self._tls = ssl_context_for(ca_pem)
        self._http = httpx.Client(
            base_url=url,
            verify=self._tls,
            timeout=timeout,
            transport=transport,
            headers={"Accept": "application/json"},
        )

    def close(self) -> None:
        self._http.close()

    def _headers(self, auth: bool = True) -> dict[str, str]:
        token = self.token
        return {"Authorization": f"Bearer {token}"} if auth and token is not None else {}

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        auth: bool = True,
        timeout: float | None = None,
    ) -> httpx.Response:
        """`timeout`: for a call that takes longer than most (a backup), instead of the client's."""
        headers = self._headers(auth)
        wait = timeout or self.timeout

        def send() -> httpx.Response:
            with translated_transport_errors(self.address, wait):
                return self._http.request(
                    method, path, params=params, json=body, headers=headers, timeout=wait
                )

        tried = self.address
        try:
            response = send()
        except KmaUnreachable as lost:
            response = self._fail_over(lost, tried, send, again=method == "GET" or never_sent(lost))
        if response.is_error:
            raise error_from_response(response)
        return response

    @contextmanager
    def stream(
        self, path: str, *, params: dict[str, str] | None = None, timeout: float | None = None
    ) -> Iterator[httpx.Response]:
        """A GET whose body is read as it arrives (a download); an error answer raises."""
        wait = timeout or self.timeout
        with (
            translated_transport_errors(self.address, wait),
            self._http.stream("GET", path, params=params, headers=self._headers(), timeout=wait) as response,
        ):
            if response.is_error:
                response.read()
                raise error_from_response(response)
            yield response

    def upload(self, path: str, content: BinaryIO, *, timeout: float | None = None) -> httpx.Response:
        """A POST whose body is read from `content` (an open file) as it is sent, never held whole,
        with its Content-Length; an error answer raises. Not sent again through another KMA: the
        file may have arrived (an upload nobody uses expires)."""
        wait = timeout or self.timeout
        headers = {**self._headers(), "Content-Type": "application/octet-stream"}
        with translated_transport_errors(self.address, wait):
            response = self._http.post(path, content=content, headers=headers, timeout=wait)
        if response.is_error:
            raise error_from_response(response)
        return response

    def _fail_over(
        self, lost: KmaUnreachable, gone: str, send: Callable[[], httpx.Response], again: bool
    ) -> httpx.Response:
        """Go on with another KMA of the cluster after the one at `gone` stopped answering.

        The request is sent again there if it is a read or never reached the KMA; a change that
        may have been applied is not sent twice: the client switches and `lost` is raised."""

        def answers() -> httpx.Response:
            with translated_transport_errors(self.address, self.timeout):
                return self._http.request("GET", "/status")

        with self._switching:
            expected = self._tls.expected_kma  # type: ignore[attr-defined]
            if self.address != gone:  # another thread switched meanwhile: go on where it went
                if not again:
                    raise lost
                return send()
            impostor: TrustError | None = None
            for kma in failover_order(self.cluster, gone):
                # Only the KMA it chose gets the token or passphrase: its certificate must name it.
                self._point_at(kma.address, kma.id)
                try:
                    response = send() if again else answers()
                except KmaUnreachable:
                    continue
                except TrustError as exc:  # not that KMA there (a rewritten address): nothing was sent
                    impostor = impostor or exc
                    continue
                except BaseException:
                    self._point_at(gone, expected)
                    raise
                if self.on_failover is not None:
                    known = next((k.name for k in self.cluster if k.address == gone), gone)
                    self.on_failover(Failover(known, kma))
                if not again:
                    raise lost
                return response
            self._point_at(gone, expected)
        if impostor is not None:
            raise impostor from lost
        raise lost

    def expect(self, kma_id: str | None) -> None:
        """Refuse, from now on, a certificate at this address that does not name `kma_id`."""
        self._tls.expected_kma = kma_id  # type: ignore[attr-defined]

    def _point_at(self, address: str, kma_id: str | None = None) -> None:
        """`kma_id`: the KMA expected at `address` (None: whichever KMA of the cluster CA answers
        there, as for the address the user gave)."""
        self.address = address
        self._http.base_url = httpx.URL(base_url(address))
        self.expect(kma_id)

    def call(
        self,
        method: str,
        path: str,
        parse: Callable[[JsonObject], T],
        *,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        auth: bool = True,
        timeout: float | None = None,
    ) -> T:
        response = self.request(method, path, params=params, body=body, auth=auth, timeout=timeout)
        try:
            return parse(response.json())
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise unreadable_response(response, exc) from exc

    def list(self, path: str, item: type[T], params: dict[str, str]) -> Page[T]:
        return self.call("GET", path, lambda d: read_page(item, d), params=params)

    def call_or_pending(
        self, method: str, path: str, parse: Callable[[JsonObject], T], body: dict[str, Any]
    ) -> T | PendingQuorumOp:
        """A quorum-protected call: its result when it ran (2xx), the pending operation on 202."""
        response = self.request(method, path, body=body)
        if response.status_code == 204:
            return parse({})
        try:
            if response.status_code == 202:
                return read(PendingQuorumOp, response.json())
            return parse(response.json())
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise unreadable_response(response, exc) from exc
