"""The audit trail: reading it, its signing key, its hash chains verified, exports, forwarding,
retention and pruning (docs/audit.md)."""
