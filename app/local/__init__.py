"""Local mode: the bundled demo KMA run on the user's machine, and its credentials."""
