"""How people prove who they are: passphrases and sessions, lockout, directory accounts and two-step
sign-in (docs/directory.md)."""
