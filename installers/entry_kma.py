"""Frozen entry point of the bundled ``kma`` executable (same as ``python -m kma``)."""

from kma.cli import main

raise SystemExit(main())
