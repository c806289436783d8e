"""Signed exports of the audit trail, and their offline check (`kma audit verify --export`).

Two forms:
- CSV, streamed: a header, one row per event (every hashed field, so each row's hash can be
  recomputed; cells a spreadsheet would take for a formula are neutralised), then one trailer
  line `#KMA-EXPORT-SIGNATURE {json}` whose JSON carries the SHA-256 of every byte before it,
  signed with the cluster's audit key. Streaming cannot sign first, so the signature comes last.
- HTML report with a detached signature file (`report.html.sig`, the same JSON).

The signature JSON also carries the signing key's certificate and the cluster CA, so the check
needs nothing but the files; give `--ca` (or `--data-dir`) to check against the CA you pinned,
otherwise compare the CA fingerprint printed with the one you know. Any changed byte fails.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kma.audit.chain import HASHED_FIELDS, event_hash
from kma.audit.signing import (
    Signer,
    b64,
    certificate_problem,
    key_fingerprint,
    signature_checks,
    unb64,
)

FORMAT = "kma-audit-export/1"
TRAILER = b"#KMA-EXPORT-SIGNATURE "
COLUMNS = (
    "id",
    "kma_id",
    "chain_seq",
    "created_at",
    "created_at_epoch",
    "site_id",
    "operation",
    "severity",
    "condition",
    "event_class",
    "entity_id",
    "entity_address",
    "message",
    "retention",
    "subject_type",
    "subject_id",
    "prev_hash",
    "hash",
)


def iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ca_fingerprint(ca_pem: bytes) -> str:
    der = x509.load_pem_x509_certificate(ca_pem).public_bytes(serialization.Encoding.DER)
    return "SHA256:" + hashlib.sha256(der).digest().hex(":").upper()


def _canonical(meta: Mapping[str, Any]) -> bytes:
    return json.dumps(
        {k: v for k, v in meta.items() if k != "signature"},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()


def signature_record(
    signer: Signer, body_sha256: str, kind: str, ca_pem: bytes, details: Mapping[str, Any]
) -> dict[str, Any]:
    """The signed statement about one export: what it is, its digest, and who signed it."""
    meta: dict[str, Any] = {
        "format": FORMAT,
        "kind": kind,
        "sha256": body_sha256,
        **details,
        "algorithm": "Ed25519",
        "signing_key": key_fingerprint(signer.public_key),
        "public_key": b64(signer.public_key),
        "certificate": signer.certificate_pem,
        "ca_pem": ca_pem.decode(),
        "ca_fingerprint": ca_fingerprint(ca_pem),
    }
    meta["signature"] = b64(signer.sign(_canonical(meta)))
    return meta


# OWASP's rule against CSV (formula) injection: a cell a spreadsheet could read as a formula gets a
# leading apostrophe. Cells that already start with one get another, so the rule is reversible and
# the offline check recovers every value exactly (each row's hash is recomputed from them).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"


def neutralised(value: Any) -> Any:
    if isinstance(value, str) and value.startswith((*FORMULA_STARTS, QUOTE)):
        return QUOTE + value
    return value


def restored(cell: str) -> str:
    return cell[1:] if cell.startswith(QUOTE) else cell


def _csv_line(values: list[Any]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL).writerow([neutralised(v) for v in values])
    return out.getvalue().encode()


def csv_row(event: Mapping[str, Any]) -> list[Any]:
    return [
        iso(event["created_at"])
        if c == "created_at"
        else event["created_at"]
        if c == "created_at_epoch"
        else ("" if event[c] is None else event[c])
        for c in COLUMNS
    ]


def stream_csv(
    events: Iterator[Mapping[str, Any]], signer: Signer, ca_pem: bytes, details: Mapping[str, Any]
) -> Iterator[bytes]:
    """The CSV export, chunk by chunk; the signed trailer last."""
    sha = hashlib.sha256()
    rows = 0
    buffer = [_csv_line(list(COLUMNS))]
    for event in events:
        buffer.append(_csv_line(csv_row(event)))
        rows += 1
        if len(buffer) >= 500:
            chunk = b"".join(buffer)
            sha.update(chunk)
            yield chunk
            buffer = []
    chunk = b"".join(buffer)
    sha.update(chunk)
    record = signature_record(signer, sha.hexdigest(), "csv", ca_pem, {**details, "rows": rows})
    yield chunk + TRAILER + json.dumps(record, ensure_ascii=False).encode() + b"\n"


# --- offline check -------------------------------------------------------------------------
@dataclass
class ExportCheck:
    ok: bool
    problem: str | None = None
    kind: str = ""
    rows: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        if not self.ok:
            return f"Export does NOT verify: {self.problem}"
        meta = self.meta
        lines = [
            f"Export verified ({self.kind}): signed {meta.get('created_at', '?')} by KMA "
            f"{meta.get('kma_id', '?')} for {meta.get('created_by', '?')}",
            f"  audit signing key {meta.get('signing_key')}",
            f"  certified by cluster CA {meta.get('ca_fingerprint')}",
        ]
        if self.kind == "csv":
            lines.append(f"  {self.rows} events, each event's hash recomputed and matching")
        chain = meta.get("chain")
        if isinstance(chain, Mapping):
            state = "INTACT" if chain.get("intact") else f"BROKEN: {chain.get('reason')}"
            lines.append(f"  chain verification stated in it: {state} ({chain.get('events_checked')} events)")
        return "\n".join(lines)


def _split_trailer(data: bytes) -> tuple[bytes, bytes] | None:
    at = data.rfind(b"\n" + TRAILER)
    if at < 0:
        return None
    return data[: at + 1], data[at + 1 + len(TRAILER) :]


def _read_signed(path: Path, signature: Path | None) -> tuple[bytes, bytes] | str:
    """(signed body, signature JSON) from a trailer or a detached file, or what went wrong."""
    try:
        data = path.read_bytes()
        split = _split_trailer(data)
        if signature is None and split is None:
            candidate = path.with_name(path.name + ".sig")
            signature = candidate if candidate.exists() else None
        if signature is not None:
            return data, signature.read_bytes()
    except OSError as exc:
        return f"cannot read {exc.filename}: {exc.strerror}"
    if split is None:
        return "it carries no signature (no trailer line, no .sig file)"
    if not split[1].endswith(b"\n") or split[1].count(b"\n") != 1:
        return "the signature trailer is not the last line"
    return split


def _signature_problem(body: bytes, meta: dict[str, Any], ca_pem: bytes | None) -> str | None:
    try:
        public_key, sig_bytes = unb64(meta["public_key"]), unb64(meta["signature"])
        trusted_ca = ca_pem or str(meta["ca_pem"]).encode()
    except (ValueError, KeyError, TypeError):
        return "the signature cannot be read"
    if ca_pem is not None and ca_fingerprint(ca_pem) != meta.get("ca_fingerprint"):
        return "it was not signed under the cluster CA you gave"
    if hashlib.sha256(body).hexdigest() != meta.get("sha256"):
        return "its content was changed after it was signed (SHA-256 differs)"
    if not signature_checks(public_key, sig_bytes, _canonical(meta)):
        return "the signature does not check: the signed statement was changed"
    return certificate_problem(str(meta.get("certificate", "")), public_key, trusted_ca)


def verify_export(path: Path, signature: Path | None = None, ca_pem: bytes | None = None) -> ExportCheck:
    """Check an export offline: its signature, its certificate, and (CSV) every row's hash."""
    signed = _read_signed(path, signature)
    if isinstance(signed, str):
        return ExportCheck(False, signed)
    body, sig_text = signed
    try:
        meta = json.loads(sig_text)
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return ExportCheck(False, "the signature is not a KMA audit export signature")
    problem = _signature_problem(body, meta, ca_pem)
    if problem:
        return ExportCheck(False, problem, meta=meta)
    kind = str(meta.get("kind", ""))
    if kind == "csv":
        return _check_csv_rows(body, meta)
    return ExportCheck(True, kind=kind, meta=meta)


def _check_csv_rows(body: bytes, meta: dict[str, Any]) -> ExportCheck:
    """Recompute each row's event hash, and the links between rows that follow each other."""
    reader = csv.reader(io.StringIO(body.decode("utf-8"), newline=""))
    header = next(reader, None)
    if header is None or tuple(header) != COLUMNS:
        return ExportCheck(False, "the CSV header is not the export's", meta=meta)
    try:
        return _check_rows(reader, meta)
    except (ValueError, KeyError, csv.Error):
        return ExportCheck(False, "a row of it cannot be read as an audit event", meta=meta)


def _check_rows(reader: Iterator[list[str]], meta: dict[str, Any]) -> ExportCheck:
    last: dict[str, tuple[int, str]] = {}
    rows = 0
    for values in reader:
        rows += 1
        row = dict(zip(COLUMNS, (restored(v) for v in values), strict=True))
        event: dict[str, Any] = {f: row[f] for f in HASHED_FIELDS}
        event["chain_seq"] = int(row["chain_seq"])
        event["created_at"] = int(row["created_at_epoch"])
        for optional in ("subject_type", "subject_id"):
            event[optional] = event[optional] or None
        if event_hash(event) != row["hash"] or iso(event["created_at"]) != row["created_at"]:
            return ExportCheck(False, f"event #{row['id']} in it does not match its hash", meta=meta)
        before = last.get(event["kma_id"])
        if before and before[0] + 1 == event["chain_seq"] and before[1] != event["prev_hash"]:
            return ExportCheck(False, f"event #{row['id']} does not follow the event before it", meta=meta)
        last[event["kma_id"]] = (event["chain_seq"], row["hash"])
    if rows != meta.get("rows"):
        return ExportCheck(False, f"it holds {rows} events, the signature says {meta.get('rows')}", meta=meta)
    return ExportCheck(True, kind="csv", rows=rows, meta=meta)
