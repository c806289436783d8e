-- Floors for the audit retention classes, so no setting can make pruning erase what an audit
-- needs (long: a year, as compliance regimes ask at the least; medium: 90 days; short: 30 days).
-- Shortening a period is also quorum-protected (kma/services/audit_retention.py); the trigger
-- holds the floors whatever path writes the row.
UPDATE audit_retention SET long = max(long, 365 * 86400), medium = max(medium, 90 * 86400),
    short = max(short, 30 * 86400);
CREATE TRIGGER audit_retention_floors BEFORE UPDATE ON audit_retention
WHEN NEW.long < 365 * 86400 OR NEW.medium < 90 * 86400 OR NEW.short < 30 * 86400
BEGIN
    SELECT RAISE(ABORT, 'audit retention below its floor (long 365 d, medium 90 d, short 30 d)');
END;
