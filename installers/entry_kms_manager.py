"""Frozen entry point of the bundled ``kms-manager`` executable (same as the console script)."""

from manager.main import main

raise SystemExit(main())
