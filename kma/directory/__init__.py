"""Signing in with a directory account (LDAP, Active Directory): `ldap.authenticate` binds as the
user over TLS and reads their groups; `kma.services.sign_in.directory` maps them to roles."""
