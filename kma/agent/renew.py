"""An enrolled agent renews its own certificate before it expires: no passphrase, no operator.

It sends a CSR for a new key (`POST /v1/renew`) to one of its KMAs over mutual TLS, presenting the
certificate it holds; the KMA signs it if that certificate is still the agent's current one
(kma/services/certificates/agent_renewal.py). The new key and certificate replace agent.key and agent.pem
(each written beside and renamed over the old), so every new connection presents the new one;
the KMA still accepts the old one on connections already open until it expires. When the cluster
CA's certificate was renewed (kma/services/certificates/ca_renewal.py) the answer carries the new one,
which the agent trusts from then on in place of ca.pem (only a renewal of the CA it trusts: the
same name and key).

When: once less than a third of the certificate's validity is left (so a ten-year certificate
renews after six years and eight months, a test's three-minute one after two minutes), by
`kma agent renew` or by itself in `kma agent simulate`.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from kma.agent.enroll import EnrollmentError, make_csr, service_request, split_address
from kma.crypto import fingerprint, load_certificate, renews
from kma.datadir import write_private
from kma.kmip.tls import agent_context

RENEW_WHEN_LEFT = 1 / 3  # of the certificate's validity


def expires_at(agent_dir: Path) -> datetime:
    return load_certificate((agent_dir / "agent.pem").read_bytes()).not_valid_after_utc


def renewal_due(agent_dir: Path, now: datetime | None = None) -> bool:
    cert = load_certificate((agent_dir / "agent.pem").read_bytes())
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    left = cert.not_valid_after_utc - (now or datetime.now(UTC))
    return left <= lifetime * RENEW_WHEN_LEFT


def _addresses(agent_dir: Path, first: str) -> list[str]:
    try:
        known = [k["service_address"] for k in json.loads((agent_dir / "kmas.json").read_text())]
    except (OSError, ValueError, KeyError, TypeError):
        known = []
    return [first, *(a for a in known if a != first)]


def _replace(path: Path, data: bytes) -> None:
    fresh = path.with_name(f"{path.name}.{os.getpid()}.new")
    write_private(fresh, data)
    os.replace(fresh, path)


def renew(agent_dir: Path) -> datetime:
    """Renew now through the first KMA that answers; the new certificate's expiry."""
    info = json.loads((agent_dir / "agent.json").read_text())
    key_pem, csr_pem = make_csr(info["agent_id"])
    context = agent_context(agent_dir / "ca.pem", agent_dir / "agent.pem", agent_dir / "agent.key")
    failures = []
    for address in _addresses(agent_dir, info["kma"]):
        host, port = split_address(address)
        try:
            answer = service_request(host, port, context, "POST", "/v1/renew", {"csr_pem": csr_pem.decode()})
            break
        except EnrollmentError as exc:
            failures.append(f"{address}: {exc}")
    else:
        raise EnrollmentError("no KMA renewed the certificate: " + "; ".join(failures))
    ca_pem = answer["ca_pem"].encode()
    if fingerprint(ca_pem) != info["ca_fingerprint"]:
        if not renews((agent_dir / "ca.pem").read_bytes(), ca_pem):
            raise EnrollmentError("the KMA answered with a different CA than the agent trusts; not renewing")
        # the cluster CA's renewed certificate (the same name and key): trusted from now on
        _replace(agent_dir / "ca.pem", ca_pem)
        _replace(
            agent_dir / "agent.json",
            (json.dumps(info | {"ca_fingerprint": fingerprint(ca_pem)}) + "\n").encode(),
        )
    _replace(agent_dir / "agent.key", key_pem)
    _replace(agent_dir / "agent.pem", answer["certificate_pem"].encode())
    _replace(agent_dir / "kmas.json", (json.dumps(answer["kmas"], indent=2) + "\n").encode())
    return expires_at(agent_dir)
