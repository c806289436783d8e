-- KMIP Link attributes made by Re-Key (issue 38): the existing key's Replacement Object Link
-- names its successor, the new key's Replaced Object Link names the key it replaced. A key is
-- replaced once (a later Re-Key goes to its successor), so each is one column.
ALTER TABLE key_kmip ADD COLUMN replacement_id TEXT;
ALTER TABLE key_kmip ADD COLUMN replaced_id TEXT;
