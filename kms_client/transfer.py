"""Transfer partners, exports and imports (docs/transfer.md): a part of `KmsClient`, given its
connection (same threading rule: network I/O, never on the GUI thread)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._http import Credentials, FilterValue, credentials_body, present, query, segment
from .connection import Connection
from .reader import Page, reader
from .wire import PendingQuorumOp, TransferExport, TransferIdentity, TransferImport, TransferPartner

LONG_WORK_S = 600.0  # an export or import of many data units runs for minutes


class TransferCalls:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def get_transfer_identity(self) -> TransferIdentity:
        """This cluster's identity line and fingerprint (made at first use)."""
        return self._connection.call("GET", "/transfer-identity", reader(TransferIdentity))

    def list_transfer_partners(
        self, /, *, limit: int = 100, cursor: str | None = None, q: str | None = None, **filters: FilterValue
    ) -> Page[TransferPartner]:
        return self._connection.list(
            "/transfer-partners", TransferPartner, query(filters, limit=limit, cursor=cursor, q=q)
        )

    def get_transfer_partner(self, id: str) -> TransferPartner:
        return self._connection.call("GET", f"/transfer-partners/{segment(id)}", reader(TransferPartner))

    def register_transfer_partner(
        self,
        id: str,
        name: str,
        identity: str,
        *,
        fingerprint: str = "",
        contact: str = "",
        may_send: bool = True,
        may_receive: bool = True,
        credentials: Credentials | None = None,
    ) -> TransferPartner | PendingQuorumOp:
        """Quorum-protected: with M key split `credentials` the partner is registered at once;
        `fingerprint`, the one the partner read out of band, must match its `identity`'s."""
        body = present(
            id=id,
            name=name,
            identity=identity,
            fingerprint=fingerprint,
            contact=contact,
            may_send=may_send,
            may_receive=may_receive,
            credentials=credentials_body(credentials),
        )
        return self._connection.call_or_pending("POST", "/transfer-partners", reader(TransferPartner), body)

    def enable_transfer_partner(self, id: str) -> TransferPartner:
        path = f"/transfer-partners/{segment(id)}/enable"
        return self._connection.call("POST", path, reader(TransferPartner))

    def disable_transfer_partner(self, id: str) -> TransferPartner:
        path = f"/transfer-partners/{segment(id)}/disable"
        return self._connection.call("POST", path, reader(TransferPartner))

    def remove_transfer_partner(self, id: str) -> None:
        self._connection.request("DELETE", f"/transfer-partners/{segment(id)}")

    def export_transfer_file(
        self,
        partner_id: str,
        *,
        volsers: Sequence[str] = (),
        volser_from: str | None = None,
        volser_to: str | None = None,
        key_group_id: str | None = None,
        written_from: int | None = None,
        written_to: int | None = None,
        valid_days: int = 30,
    ) -> TransferExport:
        """Operator: the transfer file (`.file`) for the partner, and the keys left behind."""
        body: dict[str, Any] = present(
            partner_id=partner_id,
            volsers=list(volsers),
            volser_from=volser_from,
            volser_to=volser_to,
            key_group_id=key_group_id,
            written_from=written_from,
            written_to=written_to,
            valid_days=valid_days,
        )
        return self._connection.call(
            "POST", "/transfer-exports", reader(TransferExport), body=body, timeout=LONG_WORK_S
        )

    def preview_transfer_import(self, file: str) -> TransferImport:
        """Security Officer: what importing `file` would do; refusals as for an import."""
        body = {"file": file}
        path = "/transfer-imports/preview"
        return self._connection.call("POST", path, reader(TransferImport), body=body, timeout=LONG_WORK_S)

    def import_transfer_file(self, file: str, key_group_id: str) -> TransferImport:
        """Security Officer: every data unit of `file` into `key_group_id`, or nothing."""
        body = {"file": file, "key_group_id": key_group_id}
        return self._connection.call(
            "POST", "/transfer-imports", reader(TransferImport), body=body, timeout=LONG_WORK_S
        )
