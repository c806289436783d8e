"""A witness's request for a new node certificate proves that it holds its current node key
(kma/cluster/witness_renewal.py): the KMA signs no request that a leaked node credential wrote."""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kma.cluster.node_config import issue_node_certificate
from kma.cluster.witness_renewal import checked_request, request_text
from kma.crypto.ca import create_cluster_ca
from kma.crypto.errors import CryptoError


def _node() -> tuple[str, ec.EllipticCurvePrivateKey]:
    made = issue_node_certificate(create_cluster_ca("test"), "witness-1", ["127.0.0.1"])
    key = serialization.load_pem_private_key(made.key_pem, None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return made.cert_pem.decode("ascii"), key


def _csr() -> x509.CertificateSigningRequest:
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "witness-1")])
    new_key = ec.generate_private_key(ec.SECP256R1())
    return x509.CertificateSigningRequestBuilder().subject_name(name).sign(new_key, hashes.SHA256())


def test_a_request_proved_with_the_current_node_key_is_taken() -> None:
    current, key = _node()
    csr = _csr()
    assert checked_request(request_text(csr, key), current) == csr.public_bytes(serialization.Encoding.PEM)


def test_a_request_proved_with_another_key_or_without_proof_is_refused() -> None:
    current, _ = _node()
    csr = _csr()
    stranger = ec.generate_private_key(ec.SECP256R1())
    with pytest.raises(CryptoError, match="current node key"):
        checked_request(request_text(csr, stranger), current)
    with pytest.raises(CryptoError, match="with its proof"):
        checked_request(csr.public_bytes(serialization.Encoding.PEM).decode("ascii"), current)
    with pytest.raises(CryptoError, match="with its proof"):
        checked_request(
            "-----BEGIN NODE KEY PROOF-----\nnot base64!\n-----END NODE KEY PROOF-----\n", current
        )
