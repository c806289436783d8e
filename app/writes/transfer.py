"""Transfer partners (register under quorum, enable, disable, remove) and transfer files (export
to a file, import from one): docs/transfer.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.operations import OpContext
from app.writes import Write
from kms_client import KmsClient, ValidationFailed
from kms_client.wire import TransferExport, TransferImport

register_transfer_partner = Write(KmsClient.register_transfer_partner, {"transfer", "quorum"})
enable_transfer_partner = Write(
    KmsClient.enable_transfer_partner, {"transfer"}, "Transfer partner {0} enabled."
)
disable_transfer_partner = Write(
    KmsClient.disable_transfer_partner, {"transfer"}, "Transfer partner {0} disabled."
)
remove_transfer_partner = Write(
    KmsClient.remove_transfer_partner, {"transfer"}, "Transfer partner {0} removed."
)


def local_file_refused(what: str, path: Path, exc: OSError | UnicodeError) -> ValidationFailed:
    """A file on this computer that cannot be read or written, said like a refused field."""
    return ValidationFailed(422, "validation_failed", f"Cannot {what} {path}: {exc}.")


def _export(worker: OpContext, dest: Path, partner_id: str, **selection: Any) -> TransferExport:
    """Ask for the file, then save it; an existing file is never overwritten."""
    if dest.exists():
        raise ValidationFailed(422, "validation_failed", f"{dest} already exists; choose a new file name.")
    worker.progress(f"Writing the transfer file for {partner_id}…")
    done = worker.client.export_transfer_file(partner_id, **selection)
    try:
        dest.write_text(done.file, encoding="utf-8")
    except OSError as exc:
        raise local_file_refused("save the transfer file to", dest, exc) from None
    return done


def read_transfer_file(source: Path) -> str:
    try:
        return source.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise local_file_refused("read", source, exc) from None


def _import(worker: OpContext, source: Path, key_group_id: str) -> TransferImport:
    worker.progress(f"Importing {source.name}…")
    return worker.client.import_transfer_file(read_transfer_file(source), key_group_id)


export_transfer_file = Write(_export, {"transfer", "data_units"})
import_transfer_file = Write(_import, {"transfer", "data_units", "keys"})
