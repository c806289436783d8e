"""Media pools and the white paper's media rules (docs/media.md)."""
