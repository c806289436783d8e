"""`kma init` with `mode = "join"`: a new machine becomes an approved KMA of an existing cluster.

    mode = "join"
    [join]
    kma = "10.0.1.5:8443"                  # management address of any KMA of the cluster
    ca_fingerprint = "SHA256:AB:CD:..."    # the cluster CA, as `kma serve` printed it
    kma_id = "kma-bos-1"                   # the entry the Security Officer created
    passphrase = "ABCDEF-GHIJKL-..."       # its one-time KMA passphrase
    rqlite_http_address = "127.0.0.1:4001" # optional: where this KMA's own rqlited listens (loopback)
    [hsm]                                  # optional: this KMA's master key in its own PKCS#11 token
    module = "/usr/lib/softhsm/libsofthsm2.so"
    token_label = "kma-boston"
    pin_file = "/etc/kma/hsm.pin"

It pins the CA fingerprint before anything else is sent (another cluster's CA is refused), makes
this KMA's two key pairs here (the Raft node's and the listeners'), sends only their CSRs with the
passphrase, and checks that the certificates it gets back are for those keys, from that CA. Only
then does it write the data directory (its rqlited to trust the members' node certificates and its
own, with the cluster's node credential: kma/cluster/trust.py), into a fresh folder renamed into
place at the end, so a refusal at any step leaves nothing behind. The new KMA has no unlock key
file: it starts locked until a quorum unlocks it; its store arrives through the cluster's
replication (cluster/node.toml).

With `[hsm]`, it first logs into the token, which makes an RSA key pair for this join (the private
key a session object, sensitive, never extractable, for unwrapping only); the public key goes with
the CSRs, and the cluster's master key comes back wrapped to it. The token unwraps it into a key
object as non-extractable as a generated master key (label `kma-master-<KMA ID>`): the master key is
never in clear here, in memory or on disk. A failure after that deletes the object again.
"""

from __future__ import annotations

import dataclasses
import shutil
import tomllib
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kma.cluster.node_config import ClusterFiles, NodeConfig
from kma.cluster.trust import bundle
from kma.crypto import CertifiedKey, fingerprint
from kma.crypto.hsm import Token
from kma.crypto.hsm_settings import CLUSTER_MASTER_KEY, HsmSettings, HsmUnavailable
from kma.datadir import DataDir, Identity, write_private
from kma.domain.validation import check_address, check_id, check_passphrase
from kma.errors import Conflict, KmaError, ValidationFailed

DEFAULT_RQLITE_HTTP = "127.0.0.1:4001"


@dataclass(frozen=True)
class JoinAnswers:
    kma: str
    ca_fingerprint: str
    kma_id: str
    passphrase: str
    rqlite_http_address: str = DEFAULT_RQLITE_HTTP
    hsm: HsmSettings | None = None  # the token to receive the cluster's master key; None: software


def parse_join_answers(text: str) -> JoinAnswers:
    data = tomllib.loads(text)
    table = data.get("join")
    if not isinstance(table, dict):
        raise ValidationFailed('An answers file with mode = "join" needs a [join] table.')
    return join_answers(table, data.get("hsm"))


def join_answers(table: dict[str, Any], hsm_table: Any = None) -> JoinAnswers:
    """The [join] table's fields (or the set-up API's), checked; `hsm_table`: the answers' [hsm]
    table (or the set-up API's `hsm`), the token that is to receive the cluster's master key."""
    from kma.setup.answers import read_hsm

    fields: dict[str, Any] = {}
    for key in ("kma", "ca_fingerprint", "kma_id", "passphrase", "rqlite_http_address"):
        value = table.get(key, DEFAULT_RQLITE_HTTP if key == "rqlite_http_address" else None)
        if not isinstance(value, str) or not value.strip():
            raise ValidationFailed(f"'{key}' in [join] must be a non-empty string.")
        fields[key] = value.strip()
    answers = JoinAnswers(**fields)
    check_address(answers.kma, "'kma' in [join] (an existing KMA's management address)")
    check_id(answers.kma_id, "'kma_id' in [join]")
    check_passphrase(answers.passphrase, "The KMA passphrase")
    host = check_address(answers.rqlite_http_address, "'rqlite_http_address' in [join]").rpartition(":")[0]
    if host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
        raise ValidationFailed("'rqlite_http_address' must be a loopback address: only this KMA talks to it.")
    if not answers.ca_fingerprint.upper().startswith("SHA256:"):
        raise ValidationFailed("'ca_fingerprint' in [join] must be the cluster CA's SHA256:... fingerprint.")
    hsm = read_hsm(hsm_table, answers.kma_id)
    if hsm is None:
        return answers
    return dataclasses.replace(answers, hsm=dataclasses.replace(hsm, holds=CLUSTER_MASTER_KEY))


def _key_and_csr(kma_id: str) -> tuple[bytes, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, kma_id)])
    csr = x509.CertificateSigningRequestBuilder().subject_name(name).sign(key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return key_pem, csr.public_bytes(serialization.Encoding.PEM).decode()


def _check_certificate(cert_pem: str, key_pem: bytes, ca_pem: str, what: str) -> None:
    try:
        cert = x509.load_pem_x509_certificate(cert_pem.encode())
        cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem.encode()))
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise Conflict(f"The cluster sent a {what} certificate that does not check out: {exc}.") from None
    if cert.public_key() != key.public_key():
        raise Conflict(f"The cluster sent a {what} certificate for another key; nothing was written.")


def _handshake(answers: JoinAnswers, join_key: bytes | None = None) -> tuple[Any, bytes, bytes]:
    """The grant and the two private keys; every refusal with its reason. `join_key`: the DER public
    key a token made for the join, to which the cluster's master key comes back wrapped."""
    from kms_client import KmaUnreachable, KmsClient, KmsError, LockedOut, TrustError, Unauthenticated

    node_key, node_csr = _key_and_csr(answers.kma_id)
    server_key, server_csr = _key_and_csr(answers.kma_id)
    try:
        with KmsClient(answers.kma, ca_fingerprint=answers.ca_fingerprint) as client:
            grant = client.join_cluster(
                answers.kma_id,
                answers.passphrase,
                node_csr,
                server_csr,
                None if join_key is None else _pem(join_key),
            )
    except TrustError as exc:
        raise Conflict(f"Refused to join: {exc}") from None
    except KmaUnreachable as exc:
        raise KmaError(f"Cannot reach the KMA at {answers.kma}: {exc}") from None
    except (Unauthenticated, LockedOut) as exc:
        raise ValidationFailed(f"The cluster refused the join: {exc.message}") from None
    except KmsError as exc:
        raise KmaError(f"The cluster refused the join: {exc}") from None
    if fingerprint(grant.ca_pem.encode()).upper() != answers.ca_fingerprint.upper():
        raise Conflict("The cluster answered with a CA other than the pinned one; nothing was written.")
    _check_certificate(grant.node_certificate_pem, node_key, grant.ca_pem, "node")
    _check_certificate(grant.server_certificate_pem, server_key, grant.ca_pem, "server")
    if join_key is not None and grant.master_key_wrapped is None:
        raise Conflict("The cluster sent no master key for this KMA's HSM; nothing was written.")
    return grant, node_key, server_key


def trusted_nodes(grant: Any) -> bytes | None:
    """The node certificates the new node's rqlited lets in: the members' and its own; None when a
    member has none on record (a cluster made before node pins: it trusts the cluster CA)."""
    pins = {m.id: m.node_certificate_pem for m in grant.members}
    if any(pem is None for pem in pins.values()):
        return None
    return bundle({**pins, grant.kma["id"]: grant.node_certificate_pem})


def _pem(der: bytes) -> str:
    public = serialization.load_der_public_key(der)
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    return public.public_bytes(serialization.Encoding.PEM, spki).decode()


def join(data_dir: DataDir, answers: JoinAnswers) -> Any:
    """Join the cluster and write `data_dir`; returns the grant (what the cluster said)."""
    if not data_dir.is_empty():
        raise Conflict(f"{data_dir.root} is not empty; a joining KMA needs a new, empty data directory.")
    if answers.hsm is None:
        grant, node_key, server_key = _handshake(answers)
        _write(data_dir, answers, grant, node_key, server_key)
        return grant
    try:
        token = Token(answers.hsm)
    except HsmUnavailable as exc:
        raise ValidationFailed(str(exc)) from None
    try:
        public, join_key = token.join_key_pair()
        grant, node_key, server_key = _handshake(answers, public)
        master = token.unwrap_cluster_master(join_key, grant.master_key_wrapped)
        try:
            _write(data_dir, answers, grant, node_key, server_key)
        except BaseException:
            token.destroy(master)  # the label is free again for the next attempt
            raise
        return grant
    except HsmUnavailable as exc:
        raise ValidationFailed(str(exc)) from None
    finally:
        token.close()  # the join key pair, a session object, goes with the session


def _write(data_dir: DataDir, answers: JoinAnswers, grant: Any, node_key: bytes, server_key: bytes) -> None:
    entry = grant.kma
    staging = DataDir(data_dir.staging("joining"))
    try:
        staging.create()
        staging.ca_cert.parent.mkdir(mode=0o700)
        staging.ca_cert.write_text(grant.ca_pem, encoding="ascii")
        staging.server_cert.write_text(grant.server_certificate_pem + grant.ca_pem, encoding="ascii")
        write_private(staging.server_key, server_key)
        identity = Identity(
            entry["id"], entry["site_id"], entry["management_address"], entry["service_address"]
        )
        hsm = answers.hsm.to_toml() if answers.hsm else ""
        staging.identity_file.write_text(identity.to_toml() + hsm, encoding="utf-8")
        config = NodeConfig(
            node_id=entry["id"],
            raft_address=entry["raft_address"],
            http_address=answers.rqlite_http_address,
            voter=bool(entry["voter"]),
            join=tuple(m.raft_address for m in grant.members),
            witness=bool(entry.get("witness", False)),
        )
        node = CertifiedKey(grant.node_certificate_pem.encode(), node_key)
        ClusterFiles.of(staging.root).write(
            config, grant.ca_pem.encode(), node, trusted_nodes(grant), grant.node_credential
        )
        data_dir.take_from(staging.root)
    except BaseException:
        shutil.rmtree(staging.root, ignore_errors=True)
        raise
