-- KMIP Baseline Profile (issue 27): the Key Format Type a client registered an object in (Raw,
-- Opaque, Transparent Symmetric Key); Get without a Key Format Type answers in it. NULL: the
-- KMA made the key (Raw) or it was registered before this column (Secret Data: Opaque).
ALTER TABLE key_kmip ADD COLUMN key_format INTEGER;
