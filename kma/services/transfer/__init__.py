"""Transfer partners and the files that move keys between clusters (docs/transfer.md)."""
