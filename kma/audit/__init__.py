"""The audit trail: every operation, allowed or refused, as a hash-chained event."""
