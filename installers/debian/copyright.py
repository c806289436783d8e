"""Print the Debian package's copyright file: this project, the Python runtime frozen into
/usr/lib/kma and every Python distribution the KMA runs on (read from their installed metadata by
installers/licences.py, so the list follows pyproject.toml), rqlited with rqlite's licence and the
Go modules it links.

Usage: python copyright.py RQLITE_LICENSE RQLITED_BINARY > copyright   (run by build-deb.sh)
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # installers/licences.py
from licences import PROJECT_LICENCE, licence_of, shipped_distributions  # noqa: E402


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
    print("Copyright: the KMS project <kms@kms.example>. Its own code (kma, kms_client, tape_planning)")
    print(f"is under the Apache License, Version 2.0 ({PROJECT_LICENCE}): the full text is in")
    print("/usr/share/common-licenses/Apache-2.0.")
    print()
    print("This package also contains, frozen into /usr/lib/kma by PyInstaller, the following")
    print("components, each under its own licence (the common ones in /usr/share/common-licenses):")
    print()
    print(f"  Python {sys.version.split()[0]}: PSF-2.0 (the full text below)")
    for dist in shipped_distributions():
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
