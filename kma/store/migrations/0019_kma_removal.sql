-- Removing a KMA (issue 11, quorum-protected): its entry stays, marked removed, so its history,
-- audit events and pool keys keep their KMA; its certificates are revoked in kma_certificates.
ALTER TABLE kmas ADD COLUMN removed_at INTEGER;
