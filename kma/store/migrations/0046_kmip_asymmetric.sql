-- KMIP Baseline Profile (issue 27): public keys, private keys and certificates a client registers
-- in a general key group. Their material is wrapped under the master key like every object's;
-- key_kmip says what they are: object_type 3 / 4 / 1, bits = the key's Cryptographic Length,
-- key_format = the Key Format Type it came in (Get answers in it), data_type = a certificate's
-- Certificate Type, and here the key's Cryptographic Algorithm (RSA, DSA, ECDSA; NULL: AES).
ALTER TABLE key_kmip ADD COLUMN algorithm INTEGER;
-- KMIP Sensitive, set with the object at Create or Register: its material never leaves the KMA
-- in the clear (Get and Export refuse it). 1 or NULL.
ALTER TABLE key_kmip ADD COLUMN sensitive INTEGER CHECK (sensitive IN (1));
