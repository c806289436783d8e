"""Cryptography of the KMA behind one small interface, so a test or an HSM can stand in.

Shamir key split of the root secret, Argon2id passphrases, AES-GCM key wrapping, sealed key split
shares and the cluster CA. Nothing here imports the rest of the project.
"""

from __future__ import annotations

from kma.crypto.ca import (
    CertifiedKey,
    create_cluster_ca,
    fingerprint,
    issue_server_certificate,
    load_certificate,
    renew_cluster_ca,
    renews,
    sign_agent_csr,
    sign_kma_csr,
)
from kma.crypto.envelope import WrappingKey, derive_wrapping_key
from kma.crypto.errors import BadPassphrase, CryptoError, IntegrityError
from kma.crypto.keysplit import open_share, seal_share
from kma.crypto.passphrase import derive_key, hash_passphrase, verify_passphrase
from kma.crypto.shamir import combine_shares, split_secret

__all__ = [
    "BadPassphrase",
    "CertifiedKey",
    "CryptoError",
    "IntegrityError",
    "WrappingKey",
    "combine_shares",
    "create_cluster_ca",
    "derive_key",
    "derive_wrapping_key",
    "fingerprint",
    "hash_passphrase",
    "issue_server_certificate",
    "load_certificate",
    "open_share",
    "renew_cluster_ca",
    "renews",
    "seal_share",
    "sign_agent_csr",
    "sign_kma_csr",
    "split_secret",
    "verify_passphrase",
]
