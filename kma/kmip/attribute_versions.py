"""Which KMIP version defines each attribute this KMA answers with.

A client decodes an answer with the tables of the version it negotiated: an attribute its
version does not have is one it cannot read (PyKMIP 0.11 speaking 1.2 fails a whole Get
Attributes on a Random Number Generator, a 1.3 attribute). So "all attributes" and Get Attribute
List hold only the attributes of the request's version, and an attribute asked for by name that
the version does not have is left out, as one the KMA does not keep. The table follows the KMIP
specifications' attribute chapters (1.0 to 2.1), as PyKMIP's `is_attribute` has them; docs/api.md
shows it. A client's own `x-` attributes exist in every version (1.x custom attributes, 2.x vendor
attributes of vendor "x").
"""

from __future__ import annotations

FIRST = (1, 0)
# Attribute -> the first KMIP version that defines it; every other standard attribute this KMA
# answers with is in KMIP 1.0.
SINCE: dict[str, tuple[int, int]] = {
    "Certificate Length": (1, 1),
    "Fresh": (1, 1),
    "Alternative Name": (1, 2),
    "Key Value Present": (1, 2),
    "Original Creation Date": (1, 2),
    "Random Number Generator": (1, 3),
    "Sensitive": (1, 4),
    "Always Sensitive": (1, 4),
    "Extractable": (1, 4),
    "Never Extractable": (1, 4),
    "Description": (1, 4),
    "Comment": (1, 4),
    "Key Format Type": (2, 0),
    "Certificate Subject CN": (2, 0),
    "Protection Level": (2, 0),
    "Protection Period": (2, 0),
    "Quantum Safe": (2, 0),
    "Short Unique Identifier": (2, 0),
    "Protection Storage Mask": (2, 0),
}


def defined(name: str, version: tuple[int, int]) -> bool:
    """Whether a client speaking `version` has attribute `name`."""
    return version >= SINCE.get(name, FIRST)


def since(name: str) -> str:
    major, minor = SINCE.get(name, FIRST)
    return f"{major}.{minor}"
