"""Unit tests for kma.crypto: key split, passphrases, key wrapping, sealed shares, cluster CA."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import re
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kma.crypto import (
    BadPassphrase,
    CertifiedKey,
    CryptoError,
    IntegrityError,
    WrappingKey,
    combine_shares,
    create_cluster_ca,
    derive_key,
    derive_wrapping_key,
    fingerprint,
    hash_passphrase,
    issue_server_certificate,
    load_certificate,
    open_share,
    seal_share,
    sign_agent_csr,
    split_secret,
    verify_passphrase,
)

secrets32 = st.binary(min_size=32, max_size=32)


# --- Shamir key split ---------------------------------------------------------------------------


@st.composite
def split_and_subset(draw: st.DrawFn) -> tuple[bytes, int, list[tuple[int, bytes]], list[int]]:
    secret = draw(secrets32)
    n = draw(st.integers(1, 10))
    m = draw(st.integers(1, n))
    order = draw(st.permutations(list(range(n))))
    return secret, m, split_secret(secret, m, n), order


@given(split_and_subset())
def test_any_threshold_shares_reconstruct_and_fewer_do_not(
    case: tuple[bytes, int, list[tuple[int, bytes]], list[int]],
) -> None:
    secret, m, shares, order = case
    assert sorted(i for i, _ in shares) == list(range(1, len(shares) + 1))
    assert all(len(s) == 32 for _, s in shares)
    chosen = [shares[i] for i in order]
    assert combine_shares(chosen[:m]) == secret
    assert combine_shares(chosen) == secret  # more than M is fine too
    if m > 1:
        assert combine_shares(chosen[: m - 1]) != secret


@given(secrets32, st.integers(2, 10))
def test_a_single_share_reveals_nothing_obvious_when_threshold_is_above_one(secret: bytes, n: int) -> None:
    shares = split_secret(secret, 2, n)
    assert all(value != secret for _, value in shares)


def test_threshold_one_gives_every_member_the_secret() -> None:
    secret = bytes(range(32))
    shares = split_secret(secret, 1, 3)
    assert [value for _, value in shares] == [secret] * 3
    assert all(combine_shares([s]) == secret for s in shares)


def test_split_is_randomised() -> None:
    secret = bytes(32)
    assert split_secret(secret, 2, 3) != split_secret(secret, 2, 3)


@pytest.mark.parametrize(
    ("secret", "threshold", "shares", "message"),
    [
        (bytes(31), 2, 3, "32 bytes"),
        (bytes(33), 2, 3, "32 bytes"),
        (bytes(32), 0, 3, "at least 1"),
        (bytes(32), 4, 3, "cannot exceed"),
        (bytes(32), 2, 11, "at most 10"),
    ],
)
def test_split_refuses_bad_parameters(secret: bytes, threshold: int, shares: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        split_secret(secret, threshold, shares)


def test_combine_refuses_duplicates_and_malformed_shares() -> None:
    shares = split_secret(bytes(range(32)), 2, 3)
    with pytest.raises(ValueError, match="more than once"):
        combine_shares([shares[0], shares[0]])
    with pytest.raises(ValueError, match="more than once"):
        combine_shares([shares[0], (shares[0][0], shares[1][1])])
    with pytest.raises(ValueError):
        combine_shares([])
    with pytest.raises(ValueError, match="32 bytes"):
        combine_shares([shares[0], (2, b"short")])
    with pytest.raises(ValueError, match="index"):
        combine_shares([shares[0], (0, shares[1][1])])


# --- Passphrases --------------------------------------------------------------------------------


def test_passphrase_hash_verifies_only_the_right_passphrase() -> None:
    encoded = hash_passphrase("correct horse battery staple")
    assert encoded.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert "correct horse" not in encoded
    assert verify_passphrase("correct horse battery staple", encoded)
    assert not verify_passphrase("correct horse battery stapl", encoded)
    assert not verify_passphrase("", encoded)


def test_passphrase_hashes_are_salted() -> None:
    assert hash_passphrase("same passphrase") != hash_passphrase("same passphrase")


def test_passphrase_is_unicode_normalised() -> None:
    composed, decomposed = "caf\u00e9-passphrase", "cafe\u0301-passphrase"
    assert verify_passphrase(decomposed, hash_passphrase(composed))
    # NFKC (NIST SP 800-63B): full-width forms from an East Asian input method match ASCII.
    assert verify_passphrase("\uff50\uff41ss-phrase", hash_passphrase("pass-phrase"))


@pytest.mark.parametrize(
    "encoded",
    [
        "",
        "garbage",
        "$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$AAAA",
        "$argon2id$v=19$m=1,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "$argon2id$v=19$m=19456,t=2,p=1$!!!$???",
    ],
)
def test_verify_passphrase_returns_false_on_malformed_encoding(encoded: str) -> None:
    assert verify_passphrase("anything", encoded) is False


def test_verify_passphrase_returns_false_on_truncated_hash() -> None:
    encoded = hash_passphrase("pass phrase")
    assert verify_passphrase("pass phrase", encoded[:-4]) is False


def test_derive_key_is_deterministic_per_salt() -> None:
    salt_a, salt_b = bytes(16), bytes([1]) * 16
    key = derive_key("member passphrase", salt_a)
    assert len(key) == 32
    assert derive_key("member passphrase", salt_a) == key
    assert derive_key("member passphrase", salt_b) != key
    assert derive_key("member passphrasf", salt_a) != key
    with pytest.raises(ValueError, match="salt"):
        derive_key("member passphrase", bytes(8))


# --- AES-GCM key wrapping -----------------------------------------------------------------------


@given(st.text(max_size=40), st.binary(max_size=100))
def test_wrap_unwrap_roundtrip(context: str, plaintext: bytes) -> None:
    kek = WrappingKey(bytes(range(32)))
    blob = kek.wrap(context, plaintext)
    assert len(blob) == 12 + len(plaintext) + 16
    assert kek.unwrap(context, blob) == plaintext


def test_wrap_uses_a_fresh_nonce_each_time() -> None:
    kek = WrappingKey.generate()
    first, second = kek.wrap("key-1", bytes(32)), kek.wrap("key-1", bytes(32))
    assert first[:12] != second[:12]
    assert bytes(32) not in first


@given(st.data())
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_any_tampered_bit_is_detected(data: st.DataObject) -> None:
    kek = WrappingKey(bytes(range(32)))
    blob = bytearray(kek.wrap("key-0001", bytes(range(32))))
    position = data.draw(st.integers(0, len(blob) - 1))
    blob[position] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(IntegrityError):
        kek.unwrap("key-0001", bytes(blob))


def test_blob_cannot_move_to_another_context_or_key() -> None:
    kek = WrappingKey.generate()
    blob = kek.wrap("key-0001", b"\x42" * 32)
    with pytest.raises(IntegrityError):
        kek.unwrap("key-0002", blob)
    with pytest.raises(IntegrityError):
        WrappingKey.generate().unwrap("key-0001", blob)
    with pytest.raises(IntegrityError):
        kek.unwrap("key-0001", blob[:27])
    with pytest.raises(IntegrityError):
        kek.unwrap("key-0001", b"")


def test_wrapping_key_hides_its_bytes_and_checks_its_size() -> None:
    key = bytes(range(32))
    kek = WrappingKey(key)
    assert kek.raw() == key
    text = repr(kek) + str(kek)
    assert key.hex() not in text and repr(key) not in text and "\\x" not in text
    for size in (0, 16, 31, 33):
        with pytest.raises(ValueError):
            WrappingKey(bytes(size))
    assert WrappingKey.generate().raw() != WrappingKey.generate().raw()


def test_wrapping_key_can_be_wrapped_under_another() -> None:
    master, inner = WrappingKey.generate(), WrappingKey.generate()
    restored = WrappingKey(master.unwrap("kek", master.wrap("kek", inner.raw())))
    assert restored.unwrap("k", inner.wrap("k", b"data")) == b"data"


def _hkdf_sha256(ikm: bytes, info: bytes) -> bytes:
    """RFC 5869 with an empty salt, one block: an independent reference for the derivation."""
    prk = hmac.new(bytes(32), ikm, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def test_derive_wrapping_key_is_hkdf_sha256_with_kma_info() -> None:
    root = bytes(range(32))
    kek = derive_wrapping_key(root, "master-key")
    assert kek.raw() == _hkdf_sha256(root, b"kma/master-key")
    assert derive_wrapping_key(root, "backup").raw() != kek.raw()
    assert derive_wrapping_key(bytes(32), "master-key").raw() != kek.raw()
    with pytest.raises(ValueError):
        derive_wrapping_key(bytes(16), "master-key")
    with pytest.raises(ValueError):
        derive_wrapping_key(root, "")


# --- Sealed key split shares --------------------------------------------------------------------


def test_sealed_share_opens_only_for_its_member_and_passphrase() -> None:
    share = split_secret(bytes(range(32)), 2, 3)[1]
    sealed = seal_share(share, "alice", "alice passphrase")
    assert sealed.isascii() and share[1].hex() not in sealed
    assert open_share(sealed, "alice", "alice passphrase") == share
    with pytest.raises(BadPassphrase):
        open_share(sealed, "alice", "bob passphrase")
    with pytest.raises(BadPassphrase):
        open_share(sealed, "bob", "alice passphrase")


def test_members_with_the_same_passphrase_cannot_swap_shares() -> None:
    shares = split_secret(bytes(range(32)), 2, 2)
    sealed_b = seal_share(shares[1], "bob", "shared passphrase")
    with pytest.raises(BadPassphrase):
        open_share(sealed_b, "alice", "shared passphrase")


def test_sealing_twice_gives_different_strings() -> None:
    share = (1, bytes(32))
    assert seal_share(share, "alice", "pw pw pw") != seal_share(share, "alice", "pw pw pw")


def test_relabelled_share_index_is_refused() -> None:
    sealed = seal_share((3, bytes(range(32))), "alice", "alice passphrase")
    text = sealed.split(":", 1)[1]
    body = bytearray(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    body[16] = 4  # the index byte follows the 16-byte salt
    forged = "kss1:" + base64.urlsafe_b64encode(bytes(body)).decode().rstrip("=")
    with pytest.raises(BadPassphrase):
        open_share(forged, "alice", "alice passphrase")


@pytest.mark.parametrize("sealed", ["", "garbage", "kss1:", "kss1:!!!!", "kss9:AAAA", "kss1:AAAA"])
def test_malformed_sealed_share_is_a_crypto_error_not_bad_passphrase(sealed: str) -> None:
    with pytest.raises(CryptoError) as caught:
        open_share(sealed, "alice", "alice passphrase")
    assert not isinstance(caught.value, BadPassphrase)


def test_seal_share_refuses_invalid_shares() -> None:
    with pytest.raises(ValueError):
        seal_share((0, bytes(32)), "alice", "pw")
    with pytest.raises(ValueError):
        seal_share((1, bytes(16)), "alice", "pw")
    with pytest.raises(ValueError):
        seal_share((1, bytes(32)), "", "pw")


def test_sealed_shares_reconstruct_the_root_secret() -> None:
    root = bytes(range(100, 132))
    members = ["alice", "bob", "carol"]
    sealed = [
        seal_share(share, name, f"{name} passphrase")
        for share, name in zip(split_secret(root, 2, 3), members, strict=True)
    ]
    opened = [open_share(sealed[i], members[i], f"{members[i]} passphrase") for i in (0, 2)]
    assert combine_shares(opened) == root


# --- Cluster CA ---------------------------------------------------------------------------------

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def ca() -> CertifiedKey:
    return create_cluster_ca("dallas", now=NOW)


@pytest.fixture(scope="module")
def server(ca: CertifiedKey) -> CertifiedKey:
    return issue_server_certificate(ca, "kma1.dallas", ["kma1.example.com", "10.0.0.5", "::1"], NOW)


def _csr(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey) -> bytes:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "i-am-root")])
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, algorithm)
    return csr.public_bytes(serialization.Encoding.PEM)


def _extension(cert: x509.Certificate, kind: type[x509.ExtensionType]) -> x509.Extension:  # type: ignore[type-arg]
    return cert.extensions.get_extension_for_class(kind)


def test_cluster_ca_is_a_self_signed_ca_for_twenty_years(ca: CertifiedKey) -> None:
    cert = load_certificate(ca.cert_pem)
    cert.verify_directly_issued_by(cert)
    assert "dallas" in cert.subject.rfc4514_string()
    constraints = _extension(cert, x509.BasicConstraints)
    assert constraints.critical and constraints.value.ca and constraints.value.path_length == 0
    usage = _extension(cert, x509.KeyUsage).value
    assert usage.key_cert_sign and usage.crl_sign and not usage.digital_signature
    public_key = cert.public_key()
    assert isinstance(public_key, ec.EllipticCurvePublicKey)
    assert public_key.curve.name == "secp256r1"
    assert isinstance(cert.signature_hash_algorithm, hashes.SHA256)
    assert cert.not_valid_before_utc <= NOW
    assert NOW + timedelta(days=365 * 20) <= cert.not_valid_after_utc <= NOW + timedelta(days=7310)
    key = serialization.load_pem_private_key(ca.key_pem, password=None)
    assert key.public_key() == cert.public_key()
    assert ca.key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")
    assert b"PRIVATE KEY" not in repr(ca).encode()


def test_server_certificate_is_signed_by_the_ca_with_all_names(
    ca: CertifiedKey, server: CertifiedKey
) -> None:
    ca_cert, cert = load_certificate(ca.cert_pem), load_certificate(server.cert_pem)
    cert.verify_directly_issued_by(ca_cert)
    with pytest.raises(Exception):  # noqa: B017 - any failure: another CA did not sign it
        cert.verify_directly_issued_by(load_certificate(create_cluster_ca("boston").cert_pem))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kma1.dallas"
    san = _extension(cert, x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == {"kma1.example.com", "localhost"}
    assert set(san.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("10.0.0.5"),
        ipaddress.ip_address("::1"),
        ipaddress.ip_address("127.0.0.1"),
    }
    eku = _extension(cert, x509.ExtendedKeyUsage).value
    assert set(eku) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert not _extension(cert, x509.BasicConstraints).value.ca
    assert NOW + timedelta(days=365 * 5) <= cert.not_valid_after_utc <= NOW + timedelta(days=1830)
    key = serialization.load_pem_private_key(server.key_pem, password=None)
    assert key.public_key() == cert.public_key()


def test_server_certificate_does_not_duplicate_loopback_names(ca: CertifiedKey) -> None:
    cert = load_certificate(issue_server_certificate(ca, "kma", ["localhost", "127.0.0.1"]).cert_pem)
    san = _extension(cert, x509.SubjectAlternativeName).value
    assert len(list(san)) == 2


def test_certificates_from_a_mismatched_ca_key_are_refused(ca: CertifiedKey) -> None:
    other = create_cluster_ca("boston")
    with pytest.raises(CryptoError):
        issue_server_certificate(CertifiedKey(ca.cert_pem, other.key_pem), "kma", [])


def test_a_server_certificate_cannot_act_as_a_ca(server: CertifiedKey) -> None:
    with pytest.raises(CryptoError, match="not a cluster CA"):
        issue_server_certificate(server, "rogue", ["rogue.example.com"])
    with pytest.raises(CryptoError, match="not a cluster CA"):
        sign_agent_csr(server, _csr(ec.generate_private_key(ec.SECP256R1())), "drive-0001")


def _handshake(
    tmp_path: Path,
    ca: CertifiedKey,
    server: CertifiedKey,
    client: CertifiedKey | None,
    tls12: bool,
) -> str | None:
    """A real TLS handshake in memory, server requiring a client certificate from the CA."""
    files = {}
    for name, data in [
        ("ca", ca.cert_pem),
        ("srv", server.cert_pem),
        ("srvkey", server.key_pem),
    ] + ([("cli", client.cert_pem), ("clikey", client.key_pem)] if client else []):
        files[name] = tmp_path / f"{name}.pem"
        files[name].write_bytes(data)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(files["srv"], files["srvkey"])
    server_ctx.load_verify_locations(files["ca"])
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    client_ctx = ssl.create_default_context(cafile=str(files["ca"]))
    if client:
        client_ctx.load_cert_chain(files["cli"], files["clikey"])
    if tls12:
        client_ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        client_ctx.set_ciphers("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256")
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    cli = client_ctx.wrap_bio(c_in, c_out, server_hostname="localhost")
    srv = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    done = {"cli": False, "srv": False}
    for _ in range(10):
        for name, end in (("cli", cli), ("srv", srv)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
            s_in.write(c_out.read())
            c_in.write(s_out.read())
        if all(done.values()):
            # TLS 1.3 sends the client certificate after the client considers itself done.
            cli.write(b"ping")
            s_in.write(c_out.read())
            assert srv.read(4) == b"ping"
            return cli.cipher()[0]  # type: ignore[index]
    return None


@pytest.fixture
def live_server(ca: CertifiedKey) -> CertifiedKey:
    """Issued at the real current time: TLS checks validity against the wall clock."""
    return issue_server_certificate(ca, "kma1", ["kma1.example.com"])


def _agent(ca: CertifiedKey) -> CertifiedKey:
    key = ec.generate_private_key(ec.SECP256R1())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return CertifiedKey(sign_agent_csr(ca, _csr(key), "drive-0001"), key_pem)


@pytest.mark.parametrize("tls12", [True, False])
def test_tls_handshake_with_server_and_agent_certificates(
    tmp_path: Path, ca: CertifiedKey, live_server: CertifiedKey, tls12: bool
) -> None:
    cipher = _handshake(tmp_path, ca, live_server, _agent(ca), tls12)
    assert cipher is not None
    if tls12:
        assert cipher.startswith("ECDHE-ECDSA-AES") and "GCM" in cipher


@pytest.mark.parametrize("tls12", [True, False])
def test_tls_refuses_an_agent_certified_by_another_cluster(
    tmp_path: Path, ca: CertifiedKey, live_server: CertifiedKey, tls12: bool
) -> None:
    with pytest.raises(ssl.SSLError):
        _handshake(tmp_path, ca, live_server, _agent(create_cluster_ca("boston")), tls12)


def test_agent_certificate_names_the_agent_not_the_csr_subject(ca: CertifiedKey) -> None:
    cert = load_certificate(
        sign_agent_csr(ca, _csr(ec.generate_private_key(ec.SECP256R1())), "drive-0001", NOW)
    )
    cert.verify_directly_issued_by(load_certificate(ca.cert_pem))
    assert cert.subject.rfc4514_string() == "CN=drive-0001"
    assert list(_extension(cert, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert not _extension(cert, x509.BasicConstraints).value.ca
    assert cert.not_valid_after_utc - NOW == timedelta(days=3650)


def test_agent_certificate_never_outlives_the_ca(ca: CertifiedKey) -> None:
    pem = sign_agent_csr(ca, _csr(ec.generate_private_key(ec.SECP256R1())), "d", NOW, days=99999)
    ca_cert = load_certificate(ca.cert_pem)
    assert load_certificate(pem).not_valid_after_utc == ca_cert.not_valid_after_utc


def test_rsa_2048_agent_csr_is_accepted(ca: CertifiedKey) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = load_certificate(sign_agent_csr(ca, _csr(key), "lto4-0007"))
    assert isinstance(cert.public_key(), rsa.RSAPublicKey)


def test_weak_or_foreign_agent_keys_are_refused(ca: CertifiedKey) -> None:
    for key in (
        rsa.generate_private_key(public_exponent=65537, key_size=1024),
        ec.generate_private_key(ec.SECP256K1()),
        ed25519.Ed25519PrivateKey.generate(),
    ):
        with pytest.raises(CryptoError):
            sign_agent_csr(ca, _csr(key), "drive-0001")


def test_csr_with_a_bad_signature_is_refused(ca: CertifiedKey) -> None:
    good = x509.load_pem_x509_csr(_csr(ec.generate_private_key(ec.SECP256R1())))
    der = bytearray(good.public_bytes(serialization.Encoding.DER))
    # Flip a bit inside the subject name: the signature no longer covers what is presented.
    position = der.index(b"i-am-root")
    der[position] ^= 0x01
    tampered = x509.load_der_x509_csr(bytes(der)).public_bytes(serialization.Encoding.PEM)
    with pytest.raises(CryptoError, match="signature"):
        sign_agent_csr(ca, tampered, "drive-0001")


def test_garbage_csr_is_refused(ca: CertifiedKey) -> None:
    with pytest.raises(CryptoError):
        sign_agent_csr(ca, b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n", "drive-0001")
    with pytest.raises(CryptoError):
        sign_agent_csr(ca, b"not a csr", "drive-0001")


def test_fingerprint_is_colon_separated_uppercase_sha256_of_der(ca: CertifiedKey) -> None:
    value = fingerprint(ca.cert_pem)
    assert re.fullmatch(r"SHA256:([0-9A-F]{2}:){31}[0-9A-F]{2}", value)
    der_digest = load_certificate(ca.cert_pem).fingerprint(hashes.SHA256())
    assert value == "SHA256:" + ":".join(f"{b:02X}" for b in der_digest)
    assert fingerprint(create_cluster_ca("dallas").cert_pem) != value


def test_load_certificate_refuses_garbage() -> None:
    with pytest.raises(CryptoError):
        load_certificate(b"garbage")
    with pytest.raises(CryptoError):
        fingerprint(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")


def test_a_renewed_cluster_ca_certificate_vouches_for_what_the_old_one_signed(ca: CertifiedKey) -> None:
    from kma.crypto import renew_cluster_ca, renews
    from kms_client.trust import renews as client_renews

    leaf = load_certificate(issue_server_certificate(ca, "kma-dal-1", ["kma1"], now=NOW).cert_pem)
    renewed_pem = renew_cluster_ca(ca, timedelta(days=7305), now=NOW + timedelta(days=5400))
    renewed = load_certificate(renewed_pem)
    assert renewed.not_valid_after_utc > load_certificate(ca.cert_pem).not_valid_after_utc
    leaf.verify_directly_issued_by(renewed)  # what the old certificate's key signed
    assert renews(ca.cert_pem, renewed_pem) and client_renews(ca.cert_pem.decode(), renewed_pem.decode())
    # A CA of the same name but another key is no renewal, nor is a certificate that is no CA's
    impostor = create_cluster_ca("dallas", now=NOW).cert_pem
    assert not renews(ca.cert_pem, impostor) and not client_renews(ca.cert_pem.decode(), impostor.decode())
    assert not renews(ca.cert_pem, issue_server_certificate(ca, "x", ["x"]).cert_pem)
