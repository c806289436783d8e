-- A witness renews its node certificate (issue 38, kma/cluster/witness_renewal.py): it holds no
-- cluster CA key, so it asks for one. It writes a certificate signing request for a key it made
-- into its own entry; an unlocked KMA of the cluster signs it and pins the new certificate beside
-- the current one; the witness moves to it once every node lets it in, and clears its request; the
-- KMA then pins the new certificate alone. Not a signed field: a request grants nothing until a
-- KMA, which checks it, signs the entry.
ALTER TABLE kmas ADD COLUMN node_csr_pem TEXT;
