"""Frozen entry point of the bundled ``kms-manager`` executable (same as the console script)."""

from app.main import main

raise SystemExit(main())
