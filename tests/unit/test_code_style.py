"""The house style is the formatter's: `ruff format` (line length 110, [tool.ruff] in pyproject.toml)
leaves every Python file as it is, `ruff check` finds nothing, and no line is exempted with
`# fmt: skip` or `# fmt: off`: a line the formatter would break is rewritten, not exempted. The
formatter's version is pinned in the dev extra, since another version may lay the same code out
otherwise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXEMPTED = re.compile(r"#\s*fmt:\s*(skip|off)\b")


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def python_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode == 0 and listed.stdout.strip():
        return [ROOT / name for name in listed.stdout.split()]
    return [p for p in ROOT.rglob("*.py") if ".git" not in p.parts]


def test_the_formatter_leaves_every_file_as_it_is() -> None:
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, "run `ruff format .`:\n" + result.stdout + result.stderr


def test_the_linter_finds_nothing() -> None:
    result = ruff("check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_line_is_exempted_from_the_formatter() -> None:
    exempted = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in python_files()
        if path.name != Path(__file__).name
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if EXEMPTED.search(line)
    ]
    assert not exempted, "lines exempted from the formatter:\n" + "\n".join(exempted)
