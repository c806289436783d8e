-- Signed KMA routes (issue 39, item 1): the fields of a `kmas` row that route a user or tell what a
-- KMA is (its management address, where the manager fails over to with a bearer token or a
-- passphrase; its name, site, vote and key pool) carry a second signature by the cluster CA
-- (kma/crypto/entry_signature.py `ROUTED`). A column of its own, so that an older release, which
-- knows only `signature`, still signs and verifies what it knows during a rolling upgrade.
-- NULL on the rows of a store made before this version until the first unlock signs them.
ALTER TABLE kmas ADD COLUMN route_signature TEXT;
