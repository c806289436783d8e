"""The master key in a hardware security module, through PKCS#11 (python-pkcs11).

With an HSM the master key is two keys, and both are needed for anything it wraps:

- the **token key**: an AES-256 key object generated inside the token, sensitive and never
  extractable (CKA_SENSITIVE true, CKA_EXTRACTABLE false), usable for AES-GCM only. Every wrap and
  unwrap of key material runs through it inside the token;
- the **unlock key**: a 256-bit key, what the key split and autonomous unlock protect (exactly the
  bytes they protect for a software master key). It is in memory only while the KMA is unlocked, and
  it is the outer AES-GCM layer of every blob.

A blob is ``unlock_key.wrap(context, token_gcm(context, plaintext))``: the token's layer is
``nonce (12) || ciphertext || tag (16)`` with the context as associated data, inside the same
format as the software backend's. So someone holding the token and its PIN but no quorum cannot
open a stored key, and someone holding a copy of the data directory, or of the KMA's memory, cannot
either without the token. The PIN is read from a file only the KMA's user can read, or from the OS
keyring, when the KMA unlocks; it is never written to kma.toml or to a log.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kma.crypto.envelope import KEY_SIZE, NONCE_SIZE, TAG_SIZE, WrappingKey
from kma.crypto.errors import IntegrityError
from kma.crypto.hsm_settings import HsmSettings, HsmUnavailable

__all__ = [
    "HsmMasterKey",
    "Token",
    "TokenHeldKey",
    "wrap_for_join",
]

JOIN_KEY_BITS = 3072


class Token:
    """A logged-in session with the token that holds the master key's token key.

    One session, used under a lock: a PKCS#11 session runs one operation at a time.
    """

    def __init__(self, settings: HsmSettings) -> None:
        from pkcs11 import exceptions as p11

        self.settings = settings
        self.failure: str | None = None  # the last operation's failure, until one succeeds
        self._mutex = threading.Lock()
        try:
            lib = _load(settings.module)
        except (RuntimeError, OSError) as exc:  # python-pkcs11 raises RuntimeError for a bad library
            raise HsmUnavailable(f"Cannot load the PKCS#11 module {settings.module}: {exc}") from None
        try:
            if settings.token_label:
                token = lib.get_token(token_label=settings.token_label)
            else:
                token = lib.get_token(token_serial=settings.token_serial.encode())
        except p11.NoSuchToken:
            raise HsmUnavailable(
                f"The HSM {settings.token_name} is not in {settings.module}; {_tokens_said(lib)}"
            ) from None
        except p11.PKCS11Error as exc:
            raise HsmUnavailable(f"The HSM {settings.token_name} cannot be found: {_name(exc)}.") from None
        pin = settings.read_pin()
        try:
            self._session = token.open(user_pin=pin, rw=True, attribute_mapper=_mapper())
        except (p11.PinIncorrect, p11.PinLenRange):
            raise HsmUnavailable(f"The HSM {settings.token_name} refused the PIN (wrong PIN).") from None
        except p11.PinLocked:
            raise HsmUnavailable(f"The HSM {settings.token_name} has locked its user PIN.") from None
        except p11.PKCS11Error as exc:
            raise HsmUnavailable(f"The HSM {settings.token_name} cannot be opened: {_name(exc)}.") from None

    def check_key_label_free(self) -> None:
        """Refuses, before anything is made, a token that already has a key under the label."""
        self._free_label()

    def _call(self, what: str, operation: Any) -> Any:
        from pkcs11 import exceptions as p11

        with self._mutex:
            try:
                result = operation()
            except p11.PKCS11Error as exc:
                self.failure = f"The HSM {self.settings.token_name} failed to {what}: {_name(exc)}."
                raise HsmUnavailable(self.failure) from None
            self.failure = None
            return result

    def generate_master(self) -> Any:
        """A new token key under the settings' label; refuses a label that is taken."""
        from pkcs11 import KeyType

        label = self._free_label()
        return self._call(
            "generate the master key",
            lambda: self._session.generate_key(
                KeyType.AES, KEY_SIZE * 8, label=label, template=_master_template(), store=True
            ),
        )

    def _free_label(self, label: str = "") -> str:
        label = label or self.settings.key_label
        if self.find(label) is not None:
            raise HsmUnavailable(f"The HSM {self.settings.token_name} already has a key labelled '{label}'.")
        return label

    def join_key_pair(self, label: str = "") -> tuple[bytes, Any]:
        """An RSA key pair made by the token for one join (or one key put in the token under `label`,
        by default the settings'): the public key (DER) to send, and the private key's handle, a
        session object (gone with the session) that can only unwrap."""
        from pkcs11 import Attribute, KeyType
        from pkcs11.util.rsa import encode_rsa_public_key

        self._free_label(label)
        private = {
            Attribute.SENSITIVE: True,
            Attribute.EXTRACTABLE: False,
            Attribute.UNWRAP: True,
            Attribute.DECRYPT: False,
            Attribute.SIGN: False,
        }
        public = {Attribute.WRAP: True, Attribute.ENCRYPT: False, Attribute.VERIFY: False}
        pub, priv = self._call(
            "generate the join key pair",
            lambda: self._session.generate_keypair(
                KeyType.RSA, JOIN_KEY_BITS, store=False, public_template=public, private_template=private
            ),
        )
        public_der = bytes(encode_rsa_public_key(pub))
        self._call("destroy the key pair", pub.destroy)  # the DER is what is sent
        return public_der, priv

    def unwrap_cluster_master(self, join_key: Any, wrapped: bytes, label: str = "") -> Any:
        """The cluster's master key, unwrapped by `join_key` (RSA-OAEP) into a token key object
        under `label` (by default the settings'), as sensitive and non-extractable as a generated one."""
        from pkcs11 import KeyType, Mechanism, ObjectClass
        from pkcs11.mechanisms import MGF

        label = self._free_label(label)
        return self._call(
            "unwrap the cluster's master key",
            lambda: join_key.unwrap_key(
                ObjectClass.SECRET_KEY,
                KeyType.AES,
                wrapped,
                label=label,
                store=True,
                mechanism=Mechanism.RSA_PKCS_OAEP,
                mechanism_param=(Mechanism.SHA_1, MGF.SHA1, None),
                template=_master_template(),
            ),
        )

    def put_cluster_master(self, label: str, master: WrappingKey) -> Any:
        """The cluster's master key `master` (bytes a quorum opened, or a generation a rotation made)
        put into the token under `label` as a join does: wrapped to an RSA key pair the token makes for
        it, unwrapped inside into a non-extractable key object. The key pair (session objects) is
        destroyed at once, so a session that lives on (an unlocked KMA's) keeps none of it."""
        public, join_key = self.join_key_pair(label)
        try:
            return self.unwrap_cluster_master(join_key, wrap_for_join(public, master), label)
        finally:
            self._call("destroy the key pair", join_key.destroy)

    def find(self, label: str) -> Any:
        """The key object under `label`, or None."""
        from pkcs11 import KeyType, ObjectClass
        from pkcs11 import exceptions as p11

        with self._mutex:
            try:
                return self._session.get_key(ObjectClass.SECRET_KEY, KeyType.AES, label=label)
            except p11.NoSuchKey:
                return None
            except p11.PKCS11Error as exc:
                raise HsmUnavailable(
                    f"The HSM {self.settings.token_name} failed to find the master key: {_name(exc)}."
                ) from None

    def master_key(self) -> Any:
        key = self.find(self.settings.key_label)
        if key is None:
            raise HsmUnavailable(
                f"The HSM {self.settings.token_name} has no master key labelled '{self.settings.key_label}'."
            )
        return key

    def random(self, size: int) -> bytes:
        """`size` bytes from the token's generator."""
        return bytes(self._call("generate random bytes", lambda: self._session.generate_random(size * 8)))

    def encrypt(self, key: Any, context: str, plaintext: bytes) -> bytes:
        from pkcs11 import GCMParams, Mechanism

        nonce = self.random(NONCE_SIZE)
        params = GCMParams(nonce, context.encode("utf-8"), TAG_SIZE * 8)
        sealed = self._call(
            "wrap", lambda: key.encrypt(plaintext, mechanism=Mechanism.AES_GCM, mechanism_param=params)
        )
        return nonce + bytes(sealed)

    def decrypt(self, key: Any, context: str, blob: bytes) -> bytes:
        from pkcs11 import GCMParams, Mechanism
        from pkcs11 import exceptions as p11

        if len(blob) < NONCE_SIZE + TAG_SIZE:
            raise IntegrityError("wrapped blob is too short")
        params = GCMParams(blob[:NONCE_SIZE], context.encode("utf-8"), TAG_SIZE * 8)
        with self._mutex:
            try:
                plaintext = key.decrypt(
                    blob[NONCE_SIZE:], mechanism=Mechanism.AES_GCM, mechanism_param=params
                )
            except (p11.EncryptedDataInvalid, p11.EncryptedDataLenRange):
                raise IntegrityError("wrapped blob failed authentication") from None
            except p11.PKCS11Error as exc:
                # SoftHSM2 reports a failed GCM tag as a general error: the outer layer already
                # authenticated this blob, so a failure here is the token's, not the blob's.
                self.failure = f"The HSM {self.settings.token_name} failed to unwrap: {_name(exc)}."
                raise HsmUnavailable(self.failure) from None
            self.failure = None
            return bytes(plaintext)

    def destroy(self, key: Any) -> None:
        self._call("delete the master key", key.destroy)

    def close(self) -> None:
        """Log out and close the session."""
        from pkcs11 import exceptions as p11

        with self._mutex:
            try:
                self._session.close()
            except p11.PKCS11Error:
                pass  # a token already gone has no session left to close


def _load(module: str) -> Any:
    """The PKCS#11 module, loaded (C_Initialize) in a thread of its own that then ends. SoftHSM2's
    initialisation leaves an error (an OpenSSL engine it did not find) in the calling thread's OpenSSL
    error queue, which Python's ssl, on the same libcrypto, later reads as its own TLS failure in that
    thread ("NO_SUCH_ENGINE": a database backup streamed from rqlite failed so); the queue ends with
    the thread."""
    import pkcs11

    with ThreadPoolExecutor(1, thread_name_prefix="pkcs11-load") as loader:
        return loader.submit(pkcs11.lib, module).result()


def token_labels(module: str) -> list[str]:
    """The labels of the initialised tokens a PKCS#11 module offers (what a typo is checked
    against); refuses a module that cannot be loaded."""
    try:
        lib = _load(module)
    except (RuntimeError, OSError) as exc:
        raise HsmUnavailable(f"Cannot load the PKCS#11 module {module}: {exc}") from None
    return _labels(lib)


def _labels(lib: Any) -> list[str]:
    from pkcs11 import exceptions as p11

    try:
        return sorted(token.label for token in lib.get_tokens(token_flags=None) if token.label)
    except p11.PKCS11Error:
        return []


def _tokens_said(lib: Any) -> str:
    labels = _labels(lib)
    if not labels:
        return "it has no initialised token."
    return "its tokens: " + ", ".join(f"'{label}'" for label in labels) + "."


def _mapper() -> Any:
    """python-pkcs11's attributes plus CKA_ALLOWED_MECHANISMS: an array of CK_ULONG (C's
    unsigned long, which struct's native "L" is)."""
    from pkcs11 import Attribute, Mechanism
    from pkcs11.attributes import AttributeMapper

    mapper = AttributeMapper()
    size = struct.calcsize("@L")
    mapper.register_handler(
        Attribute.ALLOWED_MECHANISMS,
        lambda mechanisms: struct.pack(f"@{len(mechanisms)}L", *mechanisms),
        lambda packed: [Mechanism(m) for m in struct.unpack(f"@{len(packed) // size}L", packed)],
    )
    return mapper


def _master_template() -> dict[Any, Any]:
    """A master key object: in the token, sensitive, never extractable, AES-GCM only."""
    from pkcs11 import Attribute, Mechanism

    return {
        Attribute.EXTRACTABLE: False,
        Attribute.SENSITIVE: True,
        Attribute.TOKEN: True,
        Attribute.PRIVATE: True,
        Attribute.ENCRYPT: True,
        Attribute.DECRYPT: True,
        Attribute.WRAP: False,
        Attribute.UNWRAP: False,
        Attribute.SIGN: False,
        Attribute.VERIFY: False,
        Attribute.DERIVE: False,
        Attribute.ALLOWED_MECHANISMS: [Mechanism.AES_GCM],
    }


def _name(exc: Exception) -> str:
    return type(exc).__name__


class HsmMasterKey(WrappingKey):
    """The master key with an HSM: the token key inside, the unlock key outside (see the module).

    ``raw()`` is the unlock key's bytes: what the key split and autonomous unlock wrap.
    """

    __slots__ = ("_token", "_token_key")

    def __init__(self, unlock_key: bytes, token: Token, token_key: Any) -> None:
        super().__init__(unlock_key)
        self._token = token
        self._token_key = token_key

    def wrap(self, context: str, plaintext: bytes) -> bytes:
        return super().wrap(context, self._token.encrypt(self._token_key, context, plaintext))

    def unwrap(self, context: str, blob: bytes) -> bytes:
        return self._token.decrypt(self._token_key, context, super().unwrap(context, blob))

    def random(self, size: int) -> bytes:
        return self._token.random(size)

    def destroy(self) -> None:
        """Delete the token key: only for a set-up that failed before anything used it."""
        self._token.destroy(self._token_key)

    def __repr__(self) -> str:
        return f"HsmMasterKey(<secret>, {self._token.settings.token_name})"


class TokenHeldKey(WrappingKey):
    """The cluster's master key on a KMA whose token holds it (``holds = "cluster-master-key"``):
    the same AES-GCM blobs as a software KMA's master key makes, every one sealed and opened inside
    the token, so other KMAs of the cluster (software or not) open what this one wraps.

    The token cannot derive from the key (it is AES-GCM only), so the keys derived from it that this
    KMA needs (`derived`: the row MAC key, the backups' keys) are derived by the unlock, from the bytes
    the quorum opened, before those are dropped: the same keys every other KMA of the cluster derives.
    """

    __slots__ = ("_derived", "_token", "_token_key", "label")

    def __init__(self, token: Token, token_key: Any, label: str, derived: Mapping[str, WrappingKey]) -> None:
        self._token = token  # no bytes: they are only in the token
        self._token_key = token_key
        self.label = label  # of the key object: each master key generation has its own
        self._derived = dict(derived)

    def held_by(self, token: Token) -> bool:
        """Whether this key is in `token`'s session (a lock closes the session it was found in)."""
        return self._token is token

    def wrap(self, context: str, plaintext: bytes) -> bytes:
        return self._token.encrypt(self._token_key, context, plaintext)

    def unwrap(self, context: str, blob: bytes) -> bytes:
        return self._token.decrypt(self._token_key, context, blob)

    def random(self, size: int) -> bytes:
        return self._token.random(size)

    def raw(self) -> bytes:
        from kma.errors import Conflict  # what an API caller sees (kma.crypto itself knows no HTTP)

        raise Conflict(
            f"The cluster's master key is in this KMA's HSM {self._token.settings.token_name} and never "
            "leaves it: do this on a KMA of the cluster whose master key is in software."
        )

    def derive(self, purpose: str) -> WrappingKey:
        derived = self._derived.get(purpose)
        return derived if derived is not None else super().derive(purpose)  # raw() says why not

    def __repr__(self) -> str:
        return f"TokenHeldKey({self._token.settings.token_name}, '{self.label}')"


def wrap_for_join(public_der: bytes, master: WrappingKey) -> bytes:
    """The cluster's master key wrapped to a joining KMA's token: RSA-OAEP (SHA-1 and MGF1-SHA-1,
    the OAEP every PKCS#11 token unwraps with; SoftHSM2 has no other) to the public key that token
    made for the join. Refuses a key shorter than 3072 bits."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    try:
        public = serialization.load_der_public_key(public_der)
    except ValueError as exc:
        raise ValueError(f"the join key is not a public key: {exc}") from None
    if not isinstance(public, rsa.RSAPublicKey) or public.key_size < JOIN_KEY_BITS:
        raise ValueError(f"the join key must be an RSA public key of at least {JOIN_KEY_BITS} bits")
    oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)  # noqa: S303
    return public.encrypt(master.raw(), oaep)
