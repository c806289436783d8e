"""Worker-side steps of signing in (no Qt): first-contact trust, connect, resume a session.

These run inside background operations, so they only use ``kms_client``.
"""

from __future__ import annotations

from dataclasses import dataclass

import kms_client
from app.profiles import ConnectionProfile


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


def sign_in(profile: ConnectionProfile, passphrase: str) -> SignedIn:
    """Asks the KMA what it offers first: one of a release this manager cannot manage is named
    (`IncompatibleKma`) before the passphrase is sent."""
    client = make_client(profile)
    try:
        about = client.get_about()
        session = client.sign_in(profile.user_id, passphrase)
    except BaseException:
        client.close()
        raise
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
    return SignedIn(client, user, token, about)
