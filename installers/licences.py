"""What the bundles ship under whose licence, read from the installed distributions' metadata so the
list follows pyproject.toml: the Debian package's copyright file (debian/copyright.py) and the
desktop bundle's THIRD_PARTY_NOTICES.txt (this file, run by build.sh) both come from here.

Usage: python licences.py [EXTRA ...] > THIRD_PARTY_NOTICES.txt   (EXTRA: gui for the manager)
"""

from __future__ import annotations

import sys
import tomllib
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PROJECT_LICENCE = "Apache-2.0"

# LGPL components are dynamically loaded shared libraries in every bundle; the LGPL asks that a
# user can replace them with their own build (and has the source). How, said once for both.
LGPL_REPLACEMENT = """\
PySide6, shiboken6 and the Qt 6 libraries they load are under the GNU Lesser General Public
License v3 (LGPL-3.0-only; the text is in /usr/share/common-licenses/LGPL-3 on Debian and at
https://www.gnu.org/licenses/lgpl-3.0.txt). They are shipped unmodified, as the separate shared
libraries PyPI's PySide6 wheels contain: in the bundle's _internal/PySide6 folder (Linux and
Windows) or Contents/Frameworks/PySide6 (macOS). To use your own build, put your PySide6, shiboken6
and Qt libraries of the same major version (6.7 to 6.11) in place of that folder, or install the
manager from source (`pip install 'kms-manager[gui]'`, or `pip install '.[gui]'` in its source tree)
into a Python environment holding the PySide6 of your choice. Their source is published by the Qt
project (https://download.qt.io/official_releases/QtForPython/ and https://code.qt.io); on request
the KMS project sends a copy of the exact source of the versions it shipped."""


def shipped_distributions(*extras: str) -> list[Distribution]:
    """pyproject.toml's dependencies plus those of `extras`, and theirs, recursively, as installed
    in the environment the bundle was frozen from."""
    seen: dict[str, Distribution] = {}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += [text for text in project["optional-dependencies"][extra] if "kms-manager" not in text]
    todo = [Requirement(text).name for text in wanted]
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


def is_lgpl(dist: Distribution) -> bool:
    return "LGPL" in licence_of(dist) or "Lesser General Public" in licence_of(dist)


def notices(*extras: str) -> str:
    """THIRD_PARTY_NOTICES.txt: this project's licence, then every shipped component's."""
    dists = shipped_distributions(*extras)
    lines = [
        "KMS manager and reference KMA: third-party notices",
        "",
        "This project's own code (kma, kms_client, tape_planning, app, ui) is under the Apache License,",
        f"Version 2.0 ({PROJECT_LICENCE}; LICENSE beside this file). It is built on the components below,",
        "each under its own licence, at the versions this bundle was frozen with:",
        "",
        f"  Python {sys.version.split()[0]}: PSF-2.0",
        *(f"  {d.metadata['Name']} {d.version}: {licence_of(d)}" for d in dists),
        "  Swagger UI 5 (in fastapi-offline's files): Apache-2.0",
        "  PyInstaller's bootloader: GPL-2.0+ with the PyInstaller bootloader exception",
        "  rqlite (rqlited, in the Debian package only): MIT",
    ]
    if any(is_lgpl(d) for d in dists):
        lines += ["", LGPL_REPLACEMENT]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(notices(*sys.argv[1:]))
