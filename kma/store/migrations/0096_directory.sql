-- Directory sign-in (issue 43, docs/directory.md): where the LDAP directory or Active Directory is,
-- how its people are found, and which of its groups grant which roles. One row, set by a Security
-- Officer under quorum; `settings` is JSON and holds no password (the KMA binds as the person
-- signing in). Its MAC (kma/services/row_macs.py DIRECTORY): a row written without the KMA could map
-- anybody's group to Security Officer.
--
-- A directory account that has signed in is a row of `users` whose passphrase_hash is
-- 'directory:' followed by its entry's DN (covered by the user row's MAC), so no passphrase of its
-- is kept and the local passphrase check never accepts it.
CREATE TABLE directory_settings (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    settings    TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    mac         TEXT
);
