"""The numbered migrations, and the rule both stores apply them by (docs/upgrades.md).

Release N+1 runs beside release N in a cluster, so each migration says which kind it is in its
first lines (`-- phase: contract`; without it, `expand`):
- expand: additive, safe under the older code (new tables, new nullable columns, new indexes);
  applied when the first KMA of the newer release starts.
- contract: a change the older code could not live with; applied only where no older code can be
  running: an embedded store (one KMA), or a cluster once its cluster version is raised.
A store that already holds a migration this code does not know was migrated by a newer release:
it is refused before anything is written.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Literal

from kma.errors import KmaError

Phase = Literal["expand", "contract"]
# Tests only: a folder of further migrations (e.g. one that fails midway, to see the store restored).
EXTRA_FOR_TESTS = "KMA_TEST_EXTRA_MIGRATIONS"


class StoreFromNewerRelease(KmaError):
    """Older code on a store a newer release migrated: refused, nothing written."""

    code, status = "store_from_newer_release", 503

    def __init__(self, store_schema: int, known: int) -> None:
        super().__init__(
            f"This store was migrated by a newer KMA release (schema {store_schema}; this release knows "
            f"up to {known}). Install that release or later."
        )


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    phase: Phase
    sql: str


def _read(script: Traversable | Path) -> Migration:
    sql = script.read_text(encoding="utf-8")
    header = [line.strip() for line in itertools.takewhile(lambda ln: ln.startswith("--"), sql.splitlines())]
    phase: Phase = "contract" if "-- phase: contract" in header else "expand"
    return Migration(int(script.name.split("_", 1)[0]), script.name, phase, sql)


def migrations() -> list[Migration]:
    """Every migration this code knows, in the order they are applied."""
    scripts: list[Traversable | Path] = [
        f for f in resources.files("kma.store").joinpath("migrations").iterdir() if f.name.endswith(".sql")
    ]
    if extra := os.environ.get(EXTRA_FOR_TESTS):
        scripts += sorted(Path(extra).glob("*.sql"))
    return sorted((_read(s) for s in scripts), key=lambda m: m.version)


def latest_schema_version() -> int:
    """The schema version this software migrates a store to (a backup from a later one is refused)."""
    return max(m.version for m in migrations())


def pending(applied: set[int], *, contract: bool, beside_newer: bool = False) -> list[Migration]:
    """The migrations to apply to a store that holds `applied`, in order: the expand ones, and the
    contract ones too when no older code can be running on the store (`contract`).

    `beside_newer`: a cluster's store, which a newer release's KMA migrates while this release's
    KMAs still serve it (one KMA is upgraded at a time). Its expand migrations leave this code
    working; its contract ones wait for a cluster version this release does not support, and
    which refuses this release itself (kma/store/cluster_version.py)."""
    known = migrations()
    unknown = applied - {m.version for m in known}
    if unknown and not beside_newer:
        raise StoreFromNewerRelease(max(unknown), known[-1].version)
    return [m for m in known if m.version not in applied and (contract or m.phase == "expand")]
