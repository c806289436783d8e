"""Where in the white paper a recommendation comes from, in words a reader can look up.

The recommendations keep the line numbers of the paper's text dump (``data/README.md``) so the
figures can be checked against it; a reader holds the paper, not the dump, so plans cite its
chapter and section (and a figure where the passage is about one).
"""

from __future__ import annotations

import re

PAPER = "Sun KMS 2.0 Management Practices white paper"

CHAPTERS = (  # (first line in the dump, number, title)
    (929, 6, "T10000 Tape Drive Characterization"),
    (1342, 7, "T9840D Tape Drive Characterization"),
    (1683, 8, "HP LTO4 Tape Drive Characterization"),
    (2232, 9, "T10000B Tape Drive Characterization"),
)
SECTIONS = (  # (first line in the dump, section heading), chapters 6-9 in order
    (933, "Characterization Overview"),
    (950, "Data Buffer Transfers"),
    (984, "Lab Performance Data"),
    (1022, "Small Data Buffers"),
    (1057, "Large Data Buffers"),
    (1090, "Characterization Data Charts"),
    (1286, "The Benefit of Multiplexing"),
    (1325, "Using Multiple Write Drives"),
    (1346, "Characterization Overview"),
    (1363, "Data Buffer Transfers"),
    (1380, "Lab Performance Data"),
    (1412, "Default Size Data Buffers"),
    (1442, "Maximum Size Data Buffers"),
    (1474, "Characterization Data Charts"),
    (1656, "The Benefit of Multiplexing"),
    (1665, "Using Multiple Write Drives"),
    (1687, "Characterization Overview"),
    (1698, "Data Buffer Transfers"),
    (1724, "Lab Performance Data"),
    (1737, "Small Data Buffers"),
    (1768, "Large Data Buffers"),
    (1806, "Characterization Data Charts"),
    (2181, "The Benefit of Multiplexing"),
    (2215, "Using Multiple Write Drives"),
    (2236, "Characterization Overview"),
    (2253, "Data Buffer Transfers"),
    (2271, "Lab Performance Data"),
    (2316, "Small Data Buffers"),
    (2342, "Large Data Buffers"),
    (2375, "Characterization Data Charts"),
    (2565, "The Benefit of Multiplexing"),
    (2601, "Using Multiple Write Drives"),
)
FIGURES = ((980, "Figure 10: NetBackup Settings"),)
NEAR_FIGURE = 6  # lines: a passage this close to a figure is about it


def cite(lines: str) -> str:
    """``"958-964"`` -> ``Chapter 6, T10000 Tape Drive Characterization: "Data Buffer Transfers"``;
    several ranges (``"1456-1470, 1661"``, ``"T10000 1308-1313, LTO4 2200-2205"``) cite each place once."""
    places: list[str] = []
    for first_text, last_text in re.findall(r"(?<![A-Za-z0-9])(\d+)(?:-(\d+))?", lines):
        first, last = int(first_text), int(last_text or first_text)
        chapter = next((c for c in reversed(CHAPTERS) if c[0] <= first), None)
        if chapter is None:
            places.append(f"{PAPER}, line {first}")
            continue
        section = next((s for line, s in reversed(SECTIONS) if line <= first), "")
        place = f"Chapter {chapter[1]}, {chapter[2]}: \u201c{section}\u201d"
        figure = next((f for line, f in FIGURES if first - NEAR_FIGURE <= line <= last + NEAR_FIGURE), "")
        place += f", {figure}" if figure else ""
        if place not in places:
            places.append(place)
    return "; ".join(places)
