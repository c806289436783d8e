"""PyKMIP's own integration suite (kmip/tests/integration/services), run against a real KMA.

The suite ships in PyKMIP's source release, not in its wheel: the set-up downloads the source of
the installed PyKMIP version from PyPI once (pip, cached beside rqlite in ~/.cache/kms-manager)
and runs its two client suites in a pytest subprocess whose PyKMIP configuration
(~/.pykmip/pykmip.conf, HOME set to a temporary folder) is the enrolled agent's. The outcome of
each test comes back as JUnit XML.
"""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

CACHE = Path.home() / ".cache" / "kms-manager"
SUITES = ("test_integration.py", "test_proxykmipclient.py")


def suite_folder() -> Path:
    """The installed PyKMIP version's integration suite, downloaded and unpacked once."""
    release = version("pykmip")
    home = CACHE / f"pykmip-{release}-suite"
    services = home / f"pykmip-{release}" / "kmip" / "tests" / "integration"
    if services.is_dir():
        return services
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", f"pykmip=={release}", "--no-deps", "--no-binary", ":all:"]
        + ["--quiet", "--dest", str(home)],
        check=True,
        timeout=300,
    )
    with tarfile.open(home / f"pykmip-{release}.tar.gz") as sdist:
        wanted = [m for m in sdist.getmembers() if "/kmip/tests/integration/" in m.name]
        sdist.extractall(home, members=wanted, filter="data")
    return services


def run_suite(agent_dir: Path, work: Path) -> dict[str, str]:
    """Each test of the suites -> "passed", or its failure's first line."""
    home = work / "home"
    (home / ".pykmip").mkdir(parents=True, exist_ok=True)
    config = configparser.ConfigParser()
    config.read(agent_dir / "pykmip.conf")
    with open(home / ".pykmip" / "pykmip.conf", "w") as f:
        config.write(f)
    folder = suite_folder()
    report = work / "suite.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", *(str(folder / "services" / s) for s in SUITES)]
        + ["--config", "client", "-p", "no:cacheprovider", "-p", "no:randomly", "-q"]
        + ["--rootdir", str(folder), "-c", os.devnull, f"--junitxml={report}"],
        cwd=folder,
        env={**os.environ, "HOME": str(home), "PYTHONPATH": ""},
        capture_output=True,
        timeout=600,
        check=False,
    )
    return outcomes(report)


def outcomes(report: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        failed = case.find("failure")
        failed = failed if failed is not None else case.find("error")
        said = "passed" if failed is None else _why(failed.text or failed.get("message") or "failed")
        out[f"{case.get('classname', '').rsplit('.', 1)[-1]}.{case.get('name')}"] = said
    return out


def _why(text: str) -> str:
    """A failure's telling line (the last exception or mismatch it shows) and where in the suite."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    telling = [line for line in lines if "Error" in line or "Failure" in line or "!=" in line]
    where = [m.group(0) for m in re.finditer(r"test_\w+\.py:\d+", text)]
    return (telling or lines or ["failed"])[-1][:300] + (f" ({where[-1]})" if where else "")
