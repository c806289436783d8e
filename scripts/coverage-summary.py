#!/usr/bin/env python3
"""What scripts/test.sh prints after its coverage run: line and branch coverage of each product
package and of the whole, then the least-covered modules (the ones with something to cover).

Reads coverage.py's JSON report: `python3 scripts/coverage-summary.py coverage.json [how-many]`.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

PACKAGES = ("kma", "kms_client", "app", "ui", "tape_planning")
SMALLEST = 40  # statements: below this a module's percentage says little


def percent(covered: int, total: int) -> str:
    return f"{100 * covered / total:5.1f}%" if total else "    -"


def main() -> int:
    report = json.loads(Path(sys.argv[1]).read_text())
    shown = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    files = report["files"]
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for path, data in files.items():
        package = Path(path).parts[0]
        s = data["summary"]
        for key in (package if package in PACKAGES else "other", "total"):
            row = sums[key]
            row[0] += s["covered_lines"]
            row[1] += s["num_statements"]
            row[2] += s["covered_branches"]
            row[3] += s["num_branches"]
    print(f"{'package':<16}{'lines':>8}{'of':>8}{'branches':>10}{'of':>8}")
    for name in (*PACKAGES, "total"):
        lines, of_lines, branches, of_branches = sums[name]
        line_part = f"{percent(lines, of_lines):>8}{of_lines:>8}"
        print(f"{name:<16}{line_part}{percent(branches, of_branches):>10}{of_branches:>8}")
    ranked = sorted(
        (data["summary"]["percent_covered"], path, data["summary"]["num_statements"])
        for path, data in files.items()
        if data["summary"]["num_statements"] >= SMALLEST
    )
    print(f"\nleast covered (lines and branches together; modules of {SMALLEST}+ statements):")
    for covered, path, statements in ranked[:shown]:
        print(f"  {covered:5.1f}%  {path} ({statements} statements)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
