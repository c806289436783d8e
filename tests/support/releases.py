"""Earlier releases, built from git history, to upgrade from (docs/upgrades.md names the same commits).

Releases are named by commit, not by tag: a CI clone may carry no tags. `RunningKma(source=tree)`
and `run_kma(..., source=tree)` run a release's `python -m kma` from the tree this unpacks.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASES = {"0.1.0": "5526d0dd8c2de2dd55d6426a1064d66d87a4eaa0"}  # tag v0.1.0


def release_tree(release: str, into: Path) -> Path:
    """Release `release`'s source tree, unpacked into `into` from this repository's history."""
    commit = RELEASES[release]
    known = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True, check=False
    )
    if known.returncode != 0:
        raise RuntimeError(
            f"Release {release} ({commit}) is not in this clone's history; "
            "fetch it (git fetch --unshallow) to run the upgrade tests."
        )
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into
