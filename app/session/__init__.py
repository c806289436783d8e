"""Signing in and staying signed in: profiles, secrets in the keyring, the session, the quorum watch."""
