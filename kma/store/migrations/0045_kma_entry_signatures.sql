-- Signed KMA entries (issue 26): the fields of a `kmas` row that grant trust (who is a member, its
-- node certificate that every node's rqlited pins, where agents are sent, its one-time KMA
-- passphrase) carry a signature by the cluster CA's key, which only an unlocked KMA can open; every
-- node checks it with the CA certificate in its data dir (kma/crypto/entry_signature.py). NULL on
-- the rows of a store made before this version until the first unlock signs them.
ALTER TABLE kmas ADD COLUMN signature TEXT;
