"""The key split of a new cluster, drafted in memory and proven before anything is committed.

A draft holds a fresh random root secret and its M-of-N shares, each sealed under its member's
passphrase. The proof opens the shares of M members (chosen at random, so nobody knows in advance
whose typing is checked) with passphrases typed again, and combines them: only a draft whose
proof reconstructed the very same secret can be committed. A mistyped or forgotten passphrase is
found here, while the installer can still do something about it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kma.crypto import BadPassphrase, CryptoError, combine_shares, open_share, seal_share, split_secret
from kma.domain.strength import check_strength
from kma.errors import ValidationFailed


@dataclass
class KeySplitDraft:
    threshold: int
    sealed: dict[str, str]  # member name -> their share, sealed under their passphrase
    proof_members: tuple[str, ...]  # the M members whose passphrases the proof asks for again
    _root_secret: bytes = field(repr=False)
    proven: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.sealed)

    @property
    def root_secret(self) -> bytes:
        if not self.proven:
            raise ValidationFailed(
                "The key split has not been proven: M members must first show "
                "that their passphrases reconstruct the secret."
            )
        return self._root_secret


def draft_key_split(threshold: int, members: Sequence[tuple[str, str]]) -> KeySplitDraft:
    """A new root secret split among `members` ((name, passphrase) each), nothing written. The
    threshold and names are checked first by the caller
    (kma.services.quorum.key_split.check_split_members)."""
    from kma.domain.validation import check_passphrase

    names = [name for name, _ in members]
    for name, passphrase in members:
        what = f"The passphrase of key split member '{name}'"
        check_passphrase(passphrase, what)
        check_strength(passphrase, what, [name])
    root = secrets.token_bytes(32)
    shares = split_secret(root, threshold, len(members))
    sealed = {
        name: seal_share(share, name, passphrase)
        for (name, passphrase), share in zip(members, shares, strict=True)
    }
    chosen = tuple(sorted(secrets.SystemRandom().sample(names, threshold), key=names.index))
    return KeySplitDraft(threshold, sealed, chosen, root)


def prove(draft: KeySplitDraft, typed: Mapping[str, str]) -> str:
    """Open the chosen members' shares with the passphrases they typed again and combine them.

    Returns a short check value of the reconstructed secret (shown to the installer; it reveals
    nothing of the secret). Raises ValidationFailed naming whose passphrase did not open.
    """
    missing = [name for name in draft.proof_members if not typed.get(name)]
    if missing:
        raise ValidationFailed("The proof needs the passphrases of " + ", ".join(missing) + ".")
    shares = []
    for name in draft.proof_members:
        try:
            shares.append(open_share(draft.sealed[name], name, typed[name]))
        except (BadPassphrase, CryptoError):
            raise ValidationFailed(
                f"The proof failed: the passphrase typed for '{name}' is not the one "
                f"'{name}' chose. Type it again, or go back and set the key split "
                "again."
            ) from None
    if not hmac.compare_digest(combine_shares(shares), draft._root_secret):
        raise ValidationFailed("The proof failed: the shares did not reconstruct the secret.")
    draft.proven = True
    return check_value(draft._root_secret)


def check_value(root_secret: bytes) -> str:
    """A one-way 8-hex-digit summary of the secret: equal values mean the same secret."""
    digest = hashlib.sha256(b"kma/keysplit/proof\x00" + root_secret).hexdigest()[:8].upper()
    return f"{digest[:4]}-{digest[4:]}"
