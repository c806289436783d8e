"""Every operation the KMA serves says which request fields it takes, in each KMIP version it is
served in (kma/kmip/fields.py): a field not listed is refused, so a missing entry would let
stray fields through unseen."""

from __future__ import annotations

from kma.kmip import fields, ops_server, v2
from kma.kmip.enums import Operation
from kma.kmip.operations import HANDLERS


def test_every_served_operation_lists_its_fields_in_every_version_it_is_served_in() -> None:
    missing = []
    for operation in HANDLERS:
        for family, table in (((1, 4), fields.V1), ((2, 0), fields.V2)):
            served = family >= ops_server.since(operation)
            if served and operation not in fields.COMMON and operation not in table:
                missing.append((Operation(operation).name, family))
    assert missing == []


def test_a_2x_payload_is_read_by_its_attributes_structure() -> None:
    assert v2.ATTRIBUTES in fields.V2[Operation.LOCATE]
    assert v2.ATTRIBUTES not in fields.V1[Operation.LOCATE]
