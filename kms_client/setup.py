"""The set-up API of a KMA that is not set up yet (kma/setup/api.py): what the wizard calls.

from kms_client import Trust
from kms_client.setup import SetupClient
trust = Trust.fetch("10.0.1.10:8443")   # the temporary certificate: compare with the console
setup = SetupClient("10.0.1.10:8443", trust, code="ABCD-EFGH-JKLM")
setup.check_code()
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from ._http import base_url, error_from_response, translated_transport_errors
from .trust import Trust, ssl_context_for


@dataclass(frozen=True)
class SetUpKma:
    """Where the new KMA serves, and the fingerprint of its cluster CA (to pin, as on first contact)."""

    management_address: str
    ca_fingerprint: str
    service_address: str = ""  # where agents reach it; a KMA before 0.2.0 does not say

    @classmethod
    def answered(cls, result: dict[str, Any]) -> SetUpKma:
        address = str(result.get("service_address", ""))
        return cls(result["management_address"], result["ca_fingerprint"], address)


@dataclass(frozen=True)
class BackupPair:
    """What an uploaded pair of backup files is a backup of (the KMA found them to belong together)."""

    cluster_name: str
    ca_fingerprint: str
    kma_id: str
    created_at: int  # Unix seconds
    threshold: int = 0  # the key split of the core security backup: any `threshold` of `members`
    members: tuple[str, ...] = ()


class SetupClient:
    """One installer's connection to a KMA in set-up mode, pinned to its temporary certificate."""

    def __init__(self, address: str, trust: Trust, code: str, *, timeout: float = 60) -> None:
        self.address = address
        self.code = code
        self._timeout = timeout
        self._http = httpx.Client(
            base_url=base_url(address),
            verify=ssl_context_for(trust.ca_pem),
            timeout=timeout,
            headers={"Accept": "application/json"},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> SetupClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        with translated_transport_errors(self.address, self._timeout):
            response = self._http.request(method, path, json=body, headers={"X-Setup-Code": self.code})
        if response.is_error:
            raise error_from_response(response)
        return response.json()

    def state(self) -> dict[str, Any]:
        """`{"state": "waiting" | "finished", "version", "modes": [{"mode", "title"}]}`."""
        result: dict[str, Any] = self._call("GET", "/setup")
        return result

    def check_code(self) -> None:
        """Raises `Unauthenticated` (with how many tries are left) for a wrong set-up code."""
        self._call("POST", "/setup/code")

    def check_network(self, management_address: str, service_address: str) -> None:
        self._call(
            "POST",
            "/setup/network",
            {"management_address": management_address, "service_address": service_address},
        )

    def draft_key_split(self, threshold: int, members: Sequence[tuple[str, str]]) -> list[str]:
        """Seal each member's share under their passphrase (in the KMA's memory only); returns the
        members whose passphrases the proof asks for."""
        body = {"threshold": threshold, "members": [{"name": n, "passphrase": p} for n, p in members]}
        proof_members: list[str] = self._call("POST", "/setup/key-split", body)["proof_members"]
        return proof_members

    def prove(self, typed: Sequence[tuple[str, str]]) -> str:
        """The proof members' passphrases again; returns the reconstructed secret's check value."""
        body = {"members": [{"name": n, "passphrase": p} for n, p in typed]}
        check: str = self._call("POST", "/setup/proof", body)["check"]
        return check

    def check_hsm(self, hsm: dict[str, str], kma_id: str = "") -> list[str]:
        """Whether the token of `hsm` (the answers' [hsm] table) opens with its PIN and can take the
        master key (raises `ValidationFailed` with the reason); returns the module's token labels.
        With only `module` in `hsm`, just those labels."""
        tokens: list[str] = self._call("POST", "/setup/hsm", {"kma_id": kma_id, "hsm": hsm})["tokens"]
        return tokens

    def finish(self, answers: dict[str, Any]) -> SetUpKma:
        """`answers`: the answers file's fields with `threshold` and `members` (names only)."""
        result = self._call("POST", "/setup/finish", answers)
        return SetUpKma.answered(result)

    def upload_backup(self, which: str, path: Path) -> None:
        """`which`: "database-backup" or "core-security-backup"; the file goes to the KMA as it is."""
        with translated_transport_errors(self.address, self._timeout):
            response = self._http.put(
                f"/setup/restore/{which}",
                content=path.read_bytes(),
                params={"name": path.name},
                headers={"X-Setup-Code": self.code, "Content-Type": "application/octet-stream"},
            )
        if response.is_error:
            raise error_from_response(response)

    def check_backups(self, autonomous_unlock: bool = True, hsm: dict[str, str] | None = None) -> BackupPair:
        """Whether the two uploaded files belong together and can be restored so (autonomous unlock,
        `hsm`: the [hsm] table of a token, docs/hsm.md); raises `ValidationFailed` with the reason
        (another cluster's pair, a newer schema, a damaged file, a token that cannot be used) before
        anyone types a passphrase."""
        body: dict[str, Any] = {"autonomous_unlock": autonomous_unlock, **({"hsm": hsm} if hsm else {})}
        result = self._call("POST", "/setup/restore/check", body)
        return BackupPair(
            str(result["cluster_name"]),
            str(result["ca_fingerprint"]),
            str(result["kma_id"]),
            int(result["created_at"]),
            int(result.get("threshold", 0)),
            tuple(str(m) for m in result.get("members", ())),
        )

    def restore(
        self,
        management_address: str,
        service_address: str,
        quorum: Sequence[tuple[str, str]],
        autonomous_unlock: bool = True,
        hsm: dict[str, str] | None = None,
    ) -> SetUpKma:
        """Restore from the uploaded backup files with a quorum's (member, passphrase) pairs; `hsm`:
        the [hsm] table of the token that holds (or is to receive) the master key."""
        body: dict[str, Any] = {
            "management_address": management_address,
            "service_address": service_address,
            "members": [{"name": n, "passphrase": p} for n, p in quorum],
            "autonomous_unlock": autonomous_unlock,
            **({"hsm": hsm} if hsm else {}),
        }
        result = self._call("POST", "/setup/restore", body)
        return SetUpKma.answered(result)

    def join(
        self, kma: str, ca_fingerprint: str, kma_id: str, passphrase: str, hsm: dict[str, str] | None = None
    ) -> SetUpKma:
        """Join the cluster of the KMA at `kma` (its CA must have `ca_fingerprint`) as `kma_id`;
        `hsm`: the [hsm] table of the token that is to hold the cluster's master key (docs/hsm.md)."""
        body: dict[str, Any] = {
            "kma": kma,
            "ca_fingerprint": ca_fingerprint,
            "kma_id": kma_id,
            "passphrase": passphrase,
            **({"hsm": hsm} if hsm else {}),
        }
        result = self._call("POST", "/setup/join", body)
        return SetUpKma.answered(result)
