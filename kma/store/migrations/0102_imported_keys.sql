-- When a key came in from a transfer partner (issue 40, kma/services/transfer_import.py); NULL for a
-- key made here. An imported key's material is sent to no agent until it is held beyond this KMA's
-- own store: by another KMA of the cluster, or by a database backup that began after its import
-- (its `backup_mark`, the same rule as a pool key's before it is Ready; docs/transfer.md).
ALTER TABLE keys ADD COLUMN imported_at INTEGER;
CREATE INDEX keys_imported ON keys (imported_at) WHERE imported_at IS NOT NULL;
