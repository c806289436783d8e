-- KMIP profiles (issue 27): attributes a client sets are kept as it sent them.
-- key_custom_attributes holds, besides the client's own x- attributes, the standard attributes a
-- client may set (Name when it is not the key's data unit, Alternative Name, Application Specific
-- Information, Contact Information). `value` is their text (what the manager shows and Locate
-- compares for text); `item` is the TTLV encoding of an Attribute Value that is not a text string
-- (an Integer or Date-Time custom attribute, a Name or Application Specific Information
-- structure), NULL for text.
ALTER TABLE key_custom_attributes ADD COLUMN item BLOB;

-- When an agent last changed a key's attributes (KMIP Last Change Date is the latest of this and
-- the key's own times), and the Compromise Occurrence Date a Revoke named.
ALTER TABLE key_kmip ADD COLUMN changed_at INTEGER;
ALTER TABLE key_kmip ADD COLUMN compromise_occurrence_at INTEGER;

-- The SHA-256 Digest of a key's material, kept when the material is destroyed (KMIP: a Digest
-- stays with the object); a live key's Digest is computed from its material when asked for.
ALTER TABLE key_kmip ADD COLUMN digest BLOB;

-- A key policy's keys are tape keys (the default: Name is the data unit's volser, AES-256 only)
-- or general keys for generic KMIP clients (Name is free text; AES-128/192/256; Secret Data and
-- Opaque Objects may be registered).
ALTER TABLE key_policies ADD COLUMN general_keys INTEGER NOT NULL DEFAULT 0 CHECK (general_keys IN (0, 1));

-- What a key is, when it is not an AES-256 symmetric key from a KMA's pool: its KMIP Object Type
-- (7 Secret Data, 8 Opaque Object), its length in bits, and the Secret Data Type or Opaque Data
-- Type the client gave.
ALTER TABLE key_kmip ADD COLUMN object_type INTEGER;
ALTER TABLE key_kmip ADD COLUMN bits INTEGER;
ALTER TABLE key_kmip ADD COLUMN data_type INTEGER;
