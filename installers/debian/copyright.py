"""Print the Debian package's copyright file: this project, the Python runtime frozen into
/usr/lib/kma and every Python distribution the KMA runs on (read from their installed metadata, so
the list follows pyproject.toml), rqlited with rqlite's licence and the Go modules it links.

Usage: python copyright.py RQLITE_LICENSE RQLITED_BINARY > copyright   (run by build-deb.sh)
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tomllib
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def runtime_distributions() -> list[Distribution]:
    """pyproject.toml's dependencies without extras (the server's), and theirs, recursively, as
    installed in the environment the bundle was frozen from."""
    seen: dict[str, Distribution] = {}
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    todo = [Requirement(text).name for text in project["dependencies"]]
    while todo:
        name = todo.pop()
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue  # a requirement for another platform or Python
        key = dist.metadata["Name"].lower()
        if key in seen:
            continue
        seen[key] = dist
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return sorted(seen.values(), key=lambda d: d.metadata["Name"].lower())


def licence_of(dist: Distribution) -> str:
    meta = dist.metadata
    expression = meta.get("License-Expression")
    if expression:
        return expression
    classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License")]
    licence = (meta.get("License") or "").strip()
    if classifiers:
        return ", ".join(classifiers)
    return licence.splitlines()[0] if licence else "see the distribution's own files"


def indented(text: str) -> str:
    """A licence text as a Debian control-style continuation (blank lines as ' .')."""
    return "\n".join(f" {line}" if line.strip() else " ." for line in text.strip().splitlines())


def main(rqlite_licence: Path, rqlited: Path) -> None:
    python_licence = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    go = ["go", "version", "-m", str(rqlited)]
    modules = subprocess.run(go, capture_output=True, text=True, check=False)
    linked = [line.split()[1:3] for line in modules.stdout.splitlines() if line.strip().startswith("dep")]
    print("kma: the KMS Key Management Appliance, headless (Debian package)")
    print()
    print("Copyright: the KMS project <kms@kms.example>. The project has not published a licence for")
    print("its own code (kma, kms_client, tape_planning); until it does, no right to redistribute them")
    print("is granted beyond the terms under which you received this package.")
    print()
    print("This package also contains, frozen into /usr/lib/kma by PyInstaller, the following")
    print("components, each under its own licence (the common ones in /usr/share/common-licenses):")
    print()
    print(f"  Python {sys.version.split()[0]}: PSF-2.0 (the full text below)")
    for dist in runtime_distributions():
        print(f"  {dist.metadata['Name']} {dist.version}: {licence_of(dist)}")
    print("  Swagger UI 5 (in fastapi-offline's files): Apache-2.0")
    print("  PyInstaller's bootloader: GPL-2.0+ with the PyInstaller bootloader exception")
    print()
    print("/usr/lib/kma/rqlited is rqlite (https://rqlite.io), built from its pinned Go module, under")
    print("the MIT licence below. It statically links these Go modules, each under the licence in its")
    print("own source at the version listed (SQLite, through go-sqlite3, is in the public domain):")
    print()
    for path, version in linked:
        print(f"  {path} {version}")
    print()
    print("rqlite's licence:")
    print(indented(rqlite_licence.read_text()))
    print()
    print("Python's licence:")
    print(indented(python_licence.read_text()) if python_licence.exists() else " PSF-2.0")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
