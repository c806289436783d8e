"""The master key while the KMA is unlocked, and nothing at all while it is locked.

The master key wraps every stored key and the CA's private key. It is itself stored only
wrapped: under a key derived from the cluster's root secret (which exists only as M-of-N
Shamir shares sealed by the key split members' passphrases), and, with autonomous unlock on,
under this KMA's local unlock key file.

With an HSM (`[hsm]` in kma.toml, kma/crypto/hsm.py) what the key split and the local unlock key
open is the master key's unlock key; unlocking also logs into the token and finds the master key's
token key there, and locking logs out. Both are needed to wrap or unwrap anything.

On a cluster KMA whose token holds the cluster's master key (``holds = "cluster-master-key"``, made by
the join), an unlock checks that the token's key is the master key the quorum opened, and from then on
every wrap and unwrap runs in the token (TokenHeldKey): the bytes the quorum opened are dropped, once
the keys derived from them (`DERIVED`) are made. Each master key generation is a key object of its own
in the token (`hold_in_token`): while a rotation runs the vault holds two, and the new generation is
put into the token when this KMA takes it up, under a label of its generation (`generation_label`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import NoReturn

from kma.backup.fileformat import CORE_SEAL, DATABASE_BACKUP
from kma.crypto import CryptoError, WrappingKey, derive_wrapping_key
from kma.crypto.generations import FIRST, MasterKeys
from kma.crypto.hsm import HsmMasterKey, Token, TokenHeldKey
from kma.crypto.hsm_settings import HsmSettings, HsmUnavailable
from kma.errors import KmaError, KmaLocked

log = logging.getLogger(__name__)

MASTER_CONTEXT = "cluster-master-key"
ROW_MAC = "row-mac"
# Every key derived from the master key's bytes: a token holding the cluster's master key cannot derive
# them, so its unlock does, from the bytes the quorum opened.
DERIVED = (ROW_MAC, DATABASE_BACKUP, CORE_SEAL)


def wrap_master_for_root(root_secret: bytes, master: WrappingKey) -> bytes:
    return derive_wrapping_key(root_secret, "master-key").wrap(MASTER_CONTEXT, master.raw())


def row_mac_key(master: WrappingKey) -> bytes:
    """The key of the MACs on the rows that grant power (kma/services/integrity/row_macs.py), derived from the
    master key's bytes (with an HSM: the unlock key's, which only the key split and autonomous unlock
    open), so a store, a replica file or a node credential alone cannot make a valid MAC."""
    return master.derive(ROW_MAC).raw()


def unwrap_master_with_root(root_secret: bytes, blob: bytes) -> WrappingKey:
    return WrappingKey(derive_wrapping_key(root_secret, "master-key").unwrap(MASTER_CONTEXT, blob))


class Vault:
    def __init__(self, hsm: HsmSettings | None = None) -> None:
        self.hsm = hsm
        self._master: MasterKeys | None = None
        self._token: Token | None = None
        self._token_key: object = None
        self._problem: str | None = None  # why the token could not be opened at the last unlock
        self._row_mac_key: tuple[WrappingKey, bytes] | None = None  # (from which master key, the key)
        self._lock = threading.Lock()
        # Takes up the generations the store names (kma/services/master_key/master_keys.py
        # `take_up`, set at each unlock): asked when a blob or a row MAC of a newer generation is met
        # before the re-wrap worker's next round.
        self.take_up: Callable[[], object] | None = None

    @property
    def locked(self) -> bool:
        return self._master is None

    @property
    def backend(self) -> str:
        return "pkcs11" if self.hsm else "software"

    @property
    def hsm_problem(self) -> str | None:
        """Why the HSM serves nothing now (missing token, wrong PIN, failed operation), or None."""
        token = self._token
        return self._problem or (token.failure if token is not None else None)

    def master(self) -> MasterKeys:
        """The master key's generations this KMA holds (the current one wraps); raises KmaLocked."""
        master = self._master
        if master is None:
            raise KmaLocked()
        return master

    def row_mac_key(self) -> bytes:
        """The row MAC key (`row_mac_key`), derived once per unlock; raises KmaLocked while locked."""
        master = self.master()
        derived = self._row_mac_key
        if derived is None or derived[0] is not master:
            derived = self._row_mac_key = (master, row_mac_key(master))
        return derived[1]

    def row_mac_keys(self) -> list[bytes]:
        """The row MAC key of every generation held, the current first: a row sealed before a
        rotation verifies until the rotation seals it again."""
        master = self.master()
        return [self.row_mac_key(), *(row_mac_key(k) for k in master.keys()[1:])]

    @property
    def generation(self) -> int:
        """The master key generation this KMA wraps under; raises KmaLocked."""
        return self.master().generation

    def new_key_material(self, size: int = 32) -> bytes:
        """Fresh key material from the master key's generator (the token's with an HSM)."""
        return self.master().random(size)

    def unlock(
        self, master: WrappingKey, generation: int = FIRST, older: dict[int, WrappingKey] | None = None
    ) -> None:
        """Open the vault with what the key split or autonomous unlock opened: the master key of
        `generation`, and during a rotation the `older` generations still needed
        (kma/services/master_key/master_keys.py says which).

        With an HSM this logs into the token first; raises HsmUnavailable (and stays locked) when
        the token is missing, refuses the PIN or lacks the master key: never a software fallback.
        """
        if isinstance(master, MasterKeys):
            master = master.current
        with self._lock:
            if self.hsm is None:
                self._master = MasterKeys(master, generation, older, self._caught_up)
                return
            if self._token is None:
                self._token, self._token_key = self._open(self.hsm)
            if self.hsm.holds_cluster_key:
                held = hold_in_token(self._token, self.hsm, {**(older or {}), generation: master})
                self._master = MasterKeys(held.pop(generation), generation, held, self._caught_up)
            else:
                token, token_key = self._token, self._token_key
                self._master = MasterKeys(
                    HsmMasterKey(master.raw(), token, token_key),
                    generation,
                    {g: HsmMasterKey(k.raw(), token, token_key) for g, k in (older or {}).items()},
                    self._caught_up,
                )

    def token_labels(self) -> dict[int, str]:
        """With a token that holds the cluster's master key: the label of the key object of each
        generation held ({} while locked, or without such a token)."""
        master = self._master
        if master is None:
            return {}
        keys = {**master.older, master.generation: master.current}
        return {g: key.label for g, key in keys.items() if isinstance(key, TokenHeldKey)}

    def destroy_token_key(self, label: str) -> bool:
        """Destroy the token's key object under `label`, of a master key generation no longer needed;
        False if there is none. Refuses the label of a generation held; raises KmaLocked."""
        with self._lock:
            token = self._token
            if token is None or self._master is None:
                raise KmaLocked()
            if label in self.token_labels().values():
                raise ValueError(f"The key object '{label}' holds a master key generation still in use.")
            key = token.find(label)
            if key is None:
                return False
            token.destroy(key)
            return True

    def caught_up(self) -> bool:
        """Take up the generations the store names now, for a row sealed again under a generation
        this KMA has not taken up yet (kma/services/integrity/row_macs.py); True when what the vault
        holds changed."""
        before = self._master
        if before is None:
            return False
        after = self._caught_up(before.generation + 1)
        return after is not None and after is not before

    def _caught_up(self, generation: int) -> MasterKeys | None:
        """The generations held once those the store names are taken up, for a blob of
        `generation` (MasterKeys.catch_up); None if that failed (the blob then fails to open)."""
        take_up = self.take_up
        if take_up is None:
            return None
        try:
            take_up()
        except (KmaError, CryptoError) as exc:
            log.error("master key generation %d could not be taken up: %s", generation, exc)
            return None
        return self._master

    def check_hsm(self) -> None:
        """With an HSM: log into the token and find the master key there, then log out; raises
        HsmUnavailable with the reason (an unlock checks this before it commits)."""
        if self.hsm is None:
            return
        token, _ = self._open(self.hsm)
        token.close()

    def _open(self, hsm: HsmSettings) -> tuple[Token, object]:
        try:
            token = Token(hsm)
        except HsmUnavailable as exc:
            self._problem = str(exc)
            raise
        try:
            token_key = token.master_key()
        except HsmUnavailable as exc:
            token.close()
            self._problem = str(exc)
            raise
        self._problem = None
        return token, token_key

    def lock(self) -> None:
        with self._lock:
            self._master = None
            self._row_mac_key = None
            if self._token is not None:
                self._token.close()
                self._token = None


def generation_label(settings: HsmSettings, generation: int) -> str:
    """The label under which a token KMA puts master key `generation` into its token when it takes
    it up: kma.toml's `key_label` without a generation suffix, then ``-g<generation>``."""
    return f"{re.sub(r'-g[0-9]+$', '', settings.key_label)}-g{generation}"


def hold_in_token(
    token: Token, settings: HsmSettings, keys: Mapping[int, WrappingKey]
) -> dict[int, TokenHeldKey]:
    """Each master key generation of `keys` (bytes a quorum or the store opened, or a key the vault
    already holds) as a key object in `token`: the one there under a label kma.toml names or the
    generation's own label, or else, for a generation made since the token last took one (a rotation),
    put there now under its own label (`Token.put_cluster_master`), the bytes then dropped. A token that
    holds none of them (another cluster's key, or none) is refused (HsmUnavailable), and nothing is put."""
    held: dict[int, TokenHeldKey] = {}
    missing: dict[int, WrappingKey] = {}
    for generation, key in keys.items():
        if isinstance(key, TokenHeldKey):
            if not key.held_by(token):
                raise KmaLocked()  # locked meanwhile: its session is gone
            held[generation] = key
        elif (found := _find_generation(token, settings, generation, key)) is not None:
            held[generation] = found
        else:
            missing[generation] = key
    if missing and not held:
        raise HsmUnavailable(
            f"The key labelled '{settings.key_label}' in the HSM {settings.token_name} is not this "
            "cluster's master key."
        )
    for generation, key in sorted(missing.items()):
        held[generation] = _put(token, settings, generation, key)
    return held


def _put(token: Token, settings: HsmSettings, generation: int, key: WrappingKey) -> TokenHeldKey:
    """Master key `generation` (its bytes, `key`) put into the token under its own label; an object
    that then fails the check is destroyed again, so the label is free for the next try."""
    label = generation_label(settings, generation)
    token_key = token.put_cluster_master(label, key)
    held = _holding(token, token_key, label, key)
    if held is None:
        token.destroy(token_key)
        _not_held(settings, label)
    return held


def _find_generation(
    token: Token, settings: HsmSettings, generation: int, key: WrappingKey
) -> TokenHeldKey | None:
    labels = (settings.key_label, settings.previous_key_label, generation_label(settings, generation))
    for label in dict.fromkeys(label for label in labels if label):
        token_key = token.find(label)
        if token_key is not None and (held := _holding(token, token_key, label, key)) is not None:
            return held
    return None


def _holding(token: Token, token_key: object, label: str, master: WrappingKey) -> TokenHeldKey | None:
    """The cluster's master key in the token, if `token_key` opens what `master` (its bytes) wraps."""
    held = TokenHeldKey(token, token_key, label, {purpose: master.derive(purpose) for purpose in DERIVED})
    probe = master.random(32)
    try:
        if held.unwrap(MASTER_CONTEXT, master.wrap(MASTER_CONTEXT, probe)) == probe:
            return held
    except (HsmUnavailable, CryptoError):
        pass
    return None


def _not_held(settings: HsmSettings, label: str) -> NoReturn:
    raise HsmUnavailable(
        f"The key labelled '{label}' in the HSM {settings.token_name} is not this cluster's master key."
    )


def check_token_holds(token: Token, token_key: object, master: WrappingKey, hsm: HsmSettings) -> TokenHeldKey:
    """The cluster's master key in the token, if `token_key` (under `hsm.key_label`) opens what
    `master` (the bytes a quorum opened) wraps; else HsmUnavailable: the token holds another key."""
    return _holding(token, token_key, hsm.key_label, master) or _not_held(hsm, hsm.key_label)


def put_in_token(settings: HsmSettings, master: WrappingKey) -> None:
    """The cluster's master key `master` (bytes a quorum opened) into the token under
    `settings.key_label`: RSA-OAEP to a key pair the token makes for it, unwrapped inside into a
    non-extractable key object. A key already under the label is kept if it is this same key (a
    failed earlier attempt put it there), refused (HsmUnavailable) if it is another."""
    token = Token(settings)
    try:
        try:
            held = token.master_key()
        except HsmUnavailable:
            token.put_cluster_master(settings.key_label, master)
            return
        check_token_holds(token, held, master, settings)
    finally:
        token.close()
