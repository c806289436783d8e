"""This copy's release: pyproject.toml's version, the one source, read by `kma` and the manager alike."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def release() -> str:
    """The version of the code that is running. A source tree (a checkout on PYTHONPATH, an older
    release unpacked from git) answers from its own pyproject.toml, not from whatever copy the
    environment has installed; an installed or frozen copy answers from its metadata."""
    tree = Path(__file__).resolve().parents[1] / "pyproject.toml"
    if tree.is_file():
        project = tomllib.loads(tree.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == "kms-manager":
            return str(project["version"])
    try:
        return version("kms-manager")
    except PackageNotFoundError:  # a copy neither installed nor beside its pyproject.toml
        return "0+unknown"
