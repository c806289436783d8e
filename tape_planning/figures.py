"""The four other papers' figures (and paper 000's TSM settings), as shipped in ``data/path-figures.csv``.

Each figure keeps its paper and lines of the text in ``shared/seeds`` so a reader can check it;
the planner computes only from these and from ``data/drives-today.csv`` (makers' figures, marked
so). Nothing here rounds or adjusts a figure.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cache
from importlib import resources

PAPERS = {
    "000": "Sun KMS 2.0 Management Practices white paper",
    "001": "DLT-S4 against LTO-3 benchmark article (openBench Labs, 2006)",
    "002": "HP Data Protector 6.0 backup and restore performance white paper",
    "003": "IBM LTO Ultrium Performance Considerations (2002)",
    "004": "IBM DR550 v4.5 SSAM API performance evaluation (2009)",
}
NO_FIGURE = "the papers give no figure for this"


@dataclass(frozen=True)
class Figure:
    key: str
    paper: str  # "000".."004"
    lines: str  # of the paper's text, e.g. "1193-1195" or "21, 52"
    value: float | None  # None: a statement, not a number
    unit: str
    what: str

    @property
    def source(self) -> str:
        """``paper 002, line 1218`` as the planner prints it; :data:`PAPERS` names the papers."""
        word = "lines" if ("-" in self.lines or "," in self.lines) else "line"
        return f"paper {self.paper}, {word} {self.lines}"

    @property
    def short(self) -> str:
        """``002:1218``: for tables, where the full name is in a legend."""
        return f"{self.paper}:{self.lines.replace(' ', '')}"


def _read(name: str) -> list[dict[str, str]]:
    text = resources.files("tape_planning").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


@cache
def figures() -> dict[str, Figure]:
    return {
        r["key"]: Figure(
            r["key"], r["paper"], r["lines"], float(r["value"]) if r["value"] else None, r["unit"], r["what"]
        )
        for r in _read("path-figures.csv")
    }


def figure(key: str) -> Figure:
    return figures()[key]


def value(key: str) -> float:
    """The number of a figure that has one (a KeyError or ValueError is a bug in the planner)."""
    number = figure(key).value
    if number is None:
        raise ValueError(f"{key} is a statement, not a number")
    return number


@dataclass(frozen=True)
class MakersDrive:
    """A drive of today from its maker's published specification, not a measurement."""

    drive: str
    name: str
    year: int
    native_mb_per_s: float
    cartridge_native_gb: float
    min_streaming_mb_per_s: float | None  # None: not recorded here; see the maker's data sheet
    source: str


@cache
def makers_drives() -> dict[str, MakersDrive]:
    return {
        r["drive"]: MakersDrive(
            r["drive"],
            r["name"],
            int(r["year"]),
            float(r["native_mb_per_s"]),
            float(r["cartridge_native_gb"]),
            float(r["min_streaming_mb_per_s"]) if r["min_streaming_mb_per_s"] else None,
            r["source"],
        )
        for r in _read("drives-today.csv")
    }
