"""Worker-side steps of signing in (no Qt): first-contact trust, connect, resume a session.

These run inside background operations, so they only use ``kms_client``.
"""

from __future__ import annotations

from dataclasses import dataclass

import kms_client
from app.session.profiles import ConnectionProfile


@dataclass
class SignedIn:
    client: kms_client.KmsClient
    user: kms_client.User
    token: str
    about: kms_client.About | None = None  # what the KMA offers; None when signing in again to a session


def fetch_trust(address: str) -> kms_client.Trust:
    """First contact: the KMA's CA over unverified TLS, fingerprint recomputed locally."""
    return kms_client.Trust.fetch(address)


def make_client(profile: ConnectionProfile) -> kms_client.KmsClient:
    """A client that trusts only the profile's pinned CA."""
    return kms_client.KmsClient(
        profile.address,
        ca_pem=profile.ca_pem or None,
        ca_fingerprint=profile.ca_fingerprint,
        cluster=profile.kmas,  # the profile's address down: sign in through another KMA
    )


def take_renewed_ca(profile: ConnectionProfile, client: kms_client.KmsClient) -> None:
    """The cluster renewed its CA certificate (the same name and key) since the profile pinned it:
    the profile pins the renewal from now on (saved with it), so it works after the old one ends."""
    renewed = client.ca_renewal()
    if renewed is not None:
        profile.ca_pem, profile.ca_fingerprint = renewed.ca_pem, renewed.fingerprint


def sign_in(profile: ConnectionProfile, passphrase: str, code: str | None = None) -> SignedIn:
    """Asks the KMA what it offers first: one of a release this manager cannot manage is named
    (`IncompatibleKma`) before the passphrase is sent. `code`: the authenticator's (or a recovery
    code) for a user whose two-step sign-in is on (`SecondFactorRequired` without it)."""
    client = make_client(profile)
    try:
        about = client.get_about()
        session = client.sign_in(profile.user_id, passphrase, code)
    except BaseException:
        client.close()
        raise
    take_renewed_ca(profile, client)
    return SignedIn(client, session.user, session.token, about)


def resume(profile: ConnectionProfile, token: str) -> SignedIn:
    """Use a remembered token; raises ``Unauthenticated`` if it expired."""
    client = make_client(profile)
    client.use_token(token)
    try:
        about = client.get_about()  # the KMA may have been upgraded since
        user = client.get_me()
    except BaseException:
        client.close()
        raise
    take_renewed_ca(profile, client)
    return SignedIn(client, user, token, about)
