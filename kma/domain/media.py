"""Media rules without I/O: volser patterns of media pools and drive generations (docs/media.md).

The white paper the product comes from (chapters 3-4): drive generations of one type share
cartridges but not density. A newer drive reads what an older one wrote and cannot append to it;
an older drive can neither read nor append what a newer one wrote; any drive may write from the
beginning of tape (BOT), which gives the whole tape its generation. An LTO barcode's media suffix
(`ABC123L8`) names the cartridge itself: no drive writes a cartridge newer than itself, even
from BOT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase

# Each family's generations, oldest first: a drive of one family never mounts another's media.
FAMILIES: dict[str, tuple[str, ...]] = {
    "LTO": ("LTO-5", "LTO-6", "LTO-7", "LTO-8", "LTO-9"),
    "T10000": ("T10000A", "T10000B", "T10000C", "T10000D"),
    "T9840": ("T9840A", "T9840B", "T9840C", "T9840D"),
}
GENERATIONS: tuple[str, ...] = tuple(g for family in FAMILIES.values() for g in family)
_FAMILY_OF = {g: family for family, gens in FAMILIES.items() for g in gens}
# An LTO barcode's last two characters: L5..L9 are the cartridges of that generation; M8 is an
# LTO-7 cartridge that LTO-8 drives format at their own density (Type M), so LTO-8's.
_LTO_SUFFIX = {f"L{n}": f"LTO-{n}" for n in range(5, 10)} | {"M8": "LTO-8"}
_VOLSER = re.compile(r"[A-Z0-9]{1,32}")
_GLOB = re.compile(r"[A-Z0-9*?]{1,32}")


class Unmatched(StrEnum):
    """What the KMA does with a write key for a volser of no media pool (a cluster setting)."""

    SERVE = "serve"
    WARN = "warn"  # served, and the audit event is a warning
    REFUSE = "refuse"


class GenerationRule(StrEnum):
    """What the KMA does with a write a drive's generation cannot make (a cluster setting)."""

    WARN = "warn"
    REFUSE = "refuse"


def family(generation: str) -> str:
    return _FAMILY_OF[generation]


def rank(generation: str) -> int:
    return FAMILIES[family(generation)].index(generation)


def check_generation(generation: str) -> str:
    """A known generation, or ValueError naming the known ones."""
    if generation not in _FAMILY_OF:
        raise ValueError(f"'{generation[:20]}' is not a drive generation; known: {', '.join(GENERATIONS)}")
    return generation


def cartridge_generation(volser: str) -> str | None:
    """The generation an 8-character LTO barcode's media suffix names, else None."""
    return _LTO_SUFFIX.get(volser[6:]) if len(volser) == 8 else None


def can_append(drive: str, written: str) -> bool:
    """Only a drive of the generation that wrote the tape appends to it."""
    return drive == written


def can_read(drive: str, written: str) -> bool:
    return family(drive) == family(written) and rank(drive) >= rank(written)


def append_refusal(drive: str, written: str) -> str | None:
    """Why a drive of `drive` generation cannot append to a tape `written` by another, or None."""
    if can_append(drive, written):
        return None
    if family(drive) != family(written):
        return f"a {drive} drive cannot mount a {written} tape (another drive type)"
    if can_read(drive, written):
        return f"a {drive} drive reads a tape written by a {written} drive but cannot append to it"
    return f"a {drive} drive can neither read nor append to a tape written by a newer {written} drive"


def bot_refusal(drive: str, volser: str) -> str | None:
    """Why a drive cannot write this cartridge even from BOT (a newer or foreign LTO cartridge)."""
    cartridge = cartridge_generation(volser)
    if cartridge is None:
        return None
    if family(drive) != "LTO":
        return f"a {drive} drive cannot write the {cartridge} cartridge '{volser}'"
    if rank(drive) < rank(cartridge):
        return f"a {drive} drive cannot write the {cartridge} cartridge '{volser}' (a newer cartridge)"
    return None


@dataclass(frozen=True)
class VolserPattern:
    """A media pool's volsers: a pattern with * and ? (`E*`), or an inclusive range of volsers of
    one length (`E00000-E49999`, `ABC000L8-ABC999L8`). Letters are upper case."""

    text: str
    low: str | None = None
    high: str | None = None

    @staticmethod
    def parse(text: str) -> VolserPattern:
        text = text.strip().upper()
        if "-" in text:
            low, _, high = text.partition("-")
            if not (_VOLSER.fullmatch(low) and _VOLSER.fullmatch(high)):
                raise ValueError(f"'{text[:70]}': a range is two volsers (letters and digits) joined by '-'")
            if len(low) != len(high) or low > high:
                raise ValueError(f"'{text}': a range's two volsers have one length, the lower first")
            return VolserPattern(text, low, high)
        if not _GLOB.fullmatch(text):
            raise ValueError(
                f"'{text[:70]}' is not a volser pattern: letters, digits, * (any characters) and ? (one)"
            )
        return VolserPattern(text)

    def matches(self, volser: str) -> bool:
        if self.low is not None and self.high is not None:
            return len(volser) == len(self.low) and self.low <= volser <= self.high
        return fnmatchcase(volser, self.text)

    def sql(self) -> tuple[str, dict[str, str]]:
        """A WHERE condition on `id` (a data unit's volser) selecting this pattern's units."""
        if self.low is not None and self.high is not None:
            return "(length(id) = length(:low) AND id BETWEEN :low AND :high)", {
                "low": self.low,
                "high": self.high,
            }
        return "id GLOB :glob", {"glob": self.text}
