"""What makes a row written straight into a store grant nothing: row MACs, key MACs, entry
signatures (docs/security.md)."""
