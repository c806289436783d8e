-- Pruning on a schedule: when on, the KMA itself prunes the audit trail once a day (the same
-- verified, checkpointed, audited prune a Security Officer runs by hand). Off until turned on.
ALTER TABLE audit_retention ADD COLUMN auto_prune INTEGER NOT NULL DEFAULT 0 CHECK (auto_prune IN (0, 1));
