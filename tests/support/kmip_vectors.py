"""The OASIS KMIP Profiles test cases (XML) against a real KMA: read, send, compare.

Each test case file is a sequence of RequestMessage / ResponseMessage pairs in KMIP's XML
encoding (KMIP Profiles 1.4 and 2.1, /work/shared/kmip-vectors). `Vector.run` sends each request
as TTLV over the client's TLS connection and compares the answer with the expected response
under the profiles' "Permitted Test Case Variations" (section 5 of each Profiles document):

- identifiers, `$UNIQUE_IDENTIFIER_n`: whatever the server chose, the same one everywhere after;
- times (`$NOW`, `$NOW-3600`, the response Time Stamp): any date-time;
- what the server generates: key material and digests of keys it made (same type and length);
- Result Message text; Server Information and Vendor Identification in a Query answer; the
  Random Number Generator a server made its keys with (the cases show one server's);
- the server may return more attributes than the case lists, in any order (Get Attributes,
  Get Attribute List), and leaves out those it does not keep (`NOT_KEPT`, said in docs/api.md);
- a Query answer lists what this server serves: each expected operation and object type must be
  in it, except those the profile lets a server leave out (`QUERY_OPTIONAL`).

Names of tags and enumerations come from PyKMIP's tables (the test suite's KMIP reference).
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kmip.core import enums as pykmip

from kma.kmip import ttlv
from kma.kmip.client import KmipClient
from kma.kmip.enums import ItemType
from kma.kmip.ttlv import Item

# OASIS's test cases live in the project's shared/ folder, beside the checkout (as CI lays it out).
_BESIDE = Path(__file__).resolve().parents[2].parent / "shared" / "kmip-vectors"
VECTORS = next((p for p in (_BESIDE, Path("/work/shared/kmip-vectors")) if p.is_dir()), _BESIDE)
# Attributes this KMA does not keep, and why (KMIP: a server need not support every attribute);
# a Get Attributes or Get Attribute List answer may leave them out. docs/api.md says the same.
NOT_KEPT: dict[str, str] = {
    "Lease Time": "the KMA grants no leases: an agent may use a key it sees for its key policy's "
    "periods, and Check says so without a lease",
}
# A Query answer lists what the server serves; Template (deprecated in KMIP 1.3, gone in 2.0) is
# not served here.
QUERY_OPTIONAL = frozenset({"Template"})

_TYPES = {
    "Structure": ItemType.STRUCTURE,
    "Integer": ItemType.INTEGER,
    "LongInteger": ItemType.LONG_INTEGER,
    "BigInteger": ItemType.BIG_INTEGER,
    "Enumeration": ItemType.ENUMERATION,
    "Boolean": ItemType.BOOLEAN,
    "TextString": ItemType.TEXT_STRING,
    "ByteString": ItemType.BYTE_STRING,
    "DateTime": ItemType.DATE_TIME,
    "Interval": ItemType.INTERVAL,
}
_TAG_NAMES = {
    "UniqueBatchItemID": "UNIQUE_BATCH_ITEM_ID",
    "RNGAlgorithm": "RNG_ALGORITHM",
    "CRTCoefficient": "CRT_COEFFICIENT",
    "CertificateSubjectCN": "CERTIFICATE_SUBJECT_CN",
}
# Enumerations whose class is not named like their tag.
_ENUM_OF_TAG = {
    "AttributeReference": pykmip.Tags,
    "BatchErrorContinuationOption": pykmip.BatchErrorContinuationOption,
}
# XML enumeration names PyKMIP spells otherwise.
_ENUM_NAMES = {"OPAQUE_OBJECT": "OPAQUE_DATA", "DES3": "TRIPLE_DES"}
_SERVER_MADE = frozenset({"KeyMaterial", "DigestValue", "Key"})  # compared by type and length


def snake(name: str) -> str:
    return (
        _TAG_NAMES.get(name) or re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).upper()
    )


def tag_of(name: str) -> int:
    if name.startswith("0x"):
        return int(name, 16)
    return int(pykmip.Tags[snake(name)].value)


def _enum_value(tag: str, text: str, attribute: str | None) -> int:
    if text.startswith("0x"):
        return int(text, 16)
    if tag == "AttributeValue" and attribute:
        tag = attribute.replace(" ", "")
    cls: Any = _ENUM_OF_TAG.get(tag) or getattr(pykmip, tag, None)
    if tag == "AttributeReference":
        return int(pykmip.Tags[snake(text)].value)
    if cls is None:
        raise KeyError(f"no enumeration for {tag}")
    return int(cls[_ENUM_NAMES.get(snake(text), snake(text))].value)


def _mask(text: str) -> int:
    value = 0
    for flag in text.split():
        cls = pykmip.ProtectionStorageMask if flag == "Software" else pykmip.CryptographicUsageMask
        value |= int(cls[snake(flag)].value)
    return value


def _date(text: str, now: int) -> int:
    match = re.fullmatch(r"\$NOW([+-]\d+)?", text)
    if match:
        return now + int(match.group(1) or 0)
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


@dataclass
class Bindings:
    """What the server chose, by placeholder: unique identifiers, and which keys it made."""

    ids: dict[str, Any] = field(default_factory=dict)
    now: int = field(default_factory=lambda: int(time.time()))
    attribute: list[str | None] = field(default_factory=list)

    def resolve(self, text: str) -> str:
        return re.sub(r"\$UNIQUE_IDENTIFIER_\d+", lambda m: self.ids.get(m.group(0), m.group(0)), text)


def to_item(el: ET.Element, b: Bindings, attribute: str | None = None) -> Item:
    """An XML element of a request as a TTLV item (placeholders resolved)."""
    tag = tag_of(el.tag)
    typ = el.get("type", "Structure")
    if typ == "Structure":
        children, name = [], attribute
        for child in el:
            if child.tag == "AttributeName":
                name = child.get("value")
            children.append(to_item(child, b, name))
        return Item(tag, ItemType.STRUCTURE, children)
    text = b.resolve(el.get("value", ""))
    return Item(tag, _TYPES[typ], _value(el.tag, _TYPES[typ], text, b, attribute))


def _value(name: str, typ: int, text: str, b: Bindings, attribute: str | None) -> Any:
    if typ in (ItemType.INTEGER, ItemType.LONG_INTEGER, ItemType.INTERVAL):
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        return int(text, 16) if text.startswith("0x") else _mask(text)
    if typ == ItemType.BIG_INTEGER:
        return int.from_bytes(bytes.fromhex(text.removeprefix("0x")), "big", signed=True) if text else 0
    if typ == ItemType.ENUMERATION:
        return _enum_value(name, text, attribute)
    if typ == ItemType.BOOLEAN:
        return text.lower() == "true"
    if typ == ItemType.BYTE_STRING:
        return bytes.fromhex(text)
    if typ == ItemType.DATE_TIME:
        return _date(text, b.now)
    return text


@dataclass
class Step:
    request: ET.Element
    response: ET.Element


def steps(path: Path) -> list[Step]:
    root = ET.parse(path).getroot()
    messages = [el for el in root if el.tag in ("RequestMessage", "ResponseMessage")]
    return [Step(messages[i], messages[i + 1]) for i in range(0, len(messages), 2)]


class Mismatch(AssertionError):
    pass


@dataclass
class Comparison:
    b: Bindings
    server_made: set[str]  # IDs of objects the server generated (their key material varies)
    uid: str | None = None
    operation: str | None = None  # of the batch item being compared

    def item(self, want: ET.Element, got: Item, path: str, attribute: str | None = None) -> None:
        where = f"{path}/{want.tag}"
        if tag_of(want.tag) != got.tag:
            raise Mismatch(f"{where}: got tag 0x{got.tag:06X}")
        typ = _TYPES[want.get("type", "Structure")]
        if got.type != typ:
            raise Mismatch(f"{where}: got type {ItemType(got.type).name}, want {ItemType(typ).name}")
        if typ == ItemType.STRUCTURE:
            self.structure(want, got, where, attribute)
            return
        text = want.get("value", "")
        if text.startswith("$SHORT_UNIQUE_IDENTIFIER"):  # the server's digest of an identifier
            self.b.ids.setdefault(text, got.value)
            if self.b.ids[text] != got.value:
                raise Mismatch(f"{where}: got {bytes(got.value).hex()}, want {text}")
        elif want.tag == "UniqueIdentifier" or "$UNIQUE_IDENTIFIER" in text:
            self.identifier(text, got.value, where)
        elif typ == ItemType.DATE_TIME and text.startswith("$"):
            pass  # a time the server chose
        elif want.tag in ("ResultMessage", "VendorIdentification", "DigestValue"):
            pass
        elif want.tag in _SERVER_MADE and self.uid in self.server_made:
            if len(got.value) != len(bytes.fromhex(text)):
                raise Mismatch(f"{where}: {len(got.value)} bytes, want {len(bytes.fromhex(text))}")
        else:
            expected = _value(want.tag, typ, self.b.resolve(text), self.b, attribute)
            if got.value != expected:
                raise Mismatch(f"{where}: got {got.value!r}, want {expected!r}")

    def identifier(self, text: str, got: Any, where: str) -> None:
        if text.startswith("$UNIQUE_IDENTIFIER"):
            bound = self.b.ids.setdefault(text, got)
            if bound != got:
                raise Mismatch(f"{where}: got {got!r}, want {text} = {bound!r}")
        elif text != got:
            raise Mismatch(f"{where}: got {got!r}, want {text!r}")
        self.uid = got
        if self.operation in ("Create", "CreateKeyPair"):
            self.server_made.add(got)

    def structure(self, want: ET.Element, got: Item, where: str, attribute: str | None) -> None:
        if want.tag in ("ServerInformation", "RandomNumberGenerator") or (
            want.tag == "AttributeValue" and attribute == "Random Number Generator"
        ):
            return  # the server's own: its information, how it made its keys
        if want.tag == "ResponseHeader":  # times and correlation values are the server's
            for w in want:
                if w.tag == "BatchCount":
                    self.item(w, _only(got, w.tag, where), where)
            return
        children = list(want)
        names = [c.get("value") for c in children if c.tag == "AttributeName"]
        if want.tag == "ResponsePayload" and any(c.tag == "Attribute" for c in children):
            self.attributes(children, got, where)
            return
        listing = ("UniqueIdentifier", "AttributeName", "AttributeReference")
        if (
            want.tag == "ResponsePayload"
            and len(children) > 1
            and all(c.tag in listing for c in children)
            and (any(c.tag != "UniqueIdentifier" for c in children))
        ):
            self.attribute_list(children, got, where)
            return
        if want.tag == "ResponsePayload" and any(c.tag == "Operation" for c in children):
            self.query(children, got, where)
            return
        if want.tag == "ResponsePayload" and any(c.tag == "Attributes" for c in children):
            self.attributes(children, got, where)  # KMIP 2.x Get Attributes
            return
        name = names[0] if names else attribute
        have = list(got)
        if len(have) != len(children):
            shown = ", ".join(f"0x{i.tag:06X}" for i in have)
            raise Mismatch(f"{where}: {len(have)} items ({shown}), want {[c.tag for c in children]}")
        for w, g in zip(children, have, strict=True):
            self.item(w, g, where, name)

    def attributes(self, children: list[ET.Element], got: Item, where: str) -> None:
        """Get Attributes: each expected attribute present (unless not kept), extra ones allowed."""
        have = list(got)
        for want in children:
            if want.tag in ("Attribute",) and (want.find("AttributeName") is not None):
                name = want.find("AttributeName").get("value")  # type: ignore[union-attr]
                found = [
                    g
                    for g in have
                    if g.tag == got_tag("Attribute") and g.get(tag_of("AttributeName")) == name
                ]
                self.one_of(want, found, name or "", where)
            elif want.tag == "Attributes":
                holder = got.find(tag_of("Attributes"))
                if holder is None:
                    raise Mismatch(f"{where}: no Attributes")
                for w in want:
                    found = [g for g in holder if g.tag == tag_of(w.tag)]
                    self.one_of(w, found, w.tag, where + "/Attributes")
            else:
                found = [g for g in have if g.tag == tag_of(want.tag)]
                if not found:
                    raise Mismatch(f"{where}: no {want.tag}")
                self.item(want, found[0], where)

    def one_of(self, want: ET.Element, found: list[Item], name: str, where: str) -> None:
        if not found:
            if _plain(name) in {_plain(n) for n in NOT_KEPT}:
                return
            raise Mismatch(f"{where}: attribute '{name}' is missing")
        errors = []
        for candidate in found:
            try:
                self.item(want, candidate, where)
                return
            except Mismatch as error:
                errors.append(str(error))
        raise Mismatch("; ".join(errors))

    def attribute_list(self, children: list[ET.Element], got: Item, where: str) -> None:
        names = {g.value for g in got if g.tag == tag_of("AttributeName")}
        names |= {_reference_name(g) for g in got if g.tag == tag_of("AttributeReference")}
        for want in children:
            if want.tag == "UniqueIdentifier":
                found = got.find(tag_of("UniqueIdentifier"))
                if found is None:
                    raise Mismatch(f"{where}: no Unique Identifier")
                self.item(want, found, where)
                continue
            name = _listed_name(want)
            if _plain(name) not in {_plain(n) for n in names} and _plain(name) not in {
                _plain(n) for n in NOT_KEPT
            }:
                raise Mismatch(f"{where}: attribute '{name}' not listed")

    def query(self, children: list[ET.Element], got: Item, where: str) -> None:
        listed = {(g.tag, g.value) for g in got if g.type != ItemType.STRUCTURE}
        for want in children:
            if want.tag in ("Operation", "ObjectType") and want.get("value") not in QUERY_OPTIONAL:
                value = _enum_value(want.tag, want.get("value", ""), None)
                if (tag_of(want.tag), value) not in listed:
                    raise Mismatch(f"{where}: Query does not list {want.tag} {want.get('value')}")


def _plain(name: str) -> str:
    """A name as 1.x spells it ("Always Sensitive") or as a tag ("ALWAYS_SENSITIVE"), comparable."""
    return name.replace(" ", "").replace("_", "").upper()


def _listed_name(want: ET.Element) -> str:
    if want.tag == "AttributeReference" and want.get("type") == "Enumeration":
        return snake(want.get("value", ""))
    if want.tag == "AttributeReference":
        named = want.find("AttributeName")
        return "x-" + ("" if named is None else named.get("value", ""))
    return want.get("value", "")


def _reference_name(item: Item) -> str:
    """An Attribute Reference (KMIP 2.x) as a name: a tag's PyKMIP name, or x-<vendor attribute>."""
    if item.type == ItemType.ENUMERATION:
        try:
            return pykmip.Tags(item.value).name
        except ValueError:
            return f"0x{item.value:06X}"
    return "x-" + str(item.get(tag_of("AttributeName")))


def got_tag(name: str) -> int:
    return tag_of(name)


def _only(got: Item, name: str, where: str) -> Item:
    found = got.find(tag_of(name))
    if found is None:
        raise Mismatch(f"{where}: no {name}")
    return found


@dataclass
class Vector:
    path: Path

    @property
    def name(self) -> str:
        return self.path.stem

    def run(self, client: KmipClient, b: Bindings, server_made: set[str]) -> None:
        for number, step in enumerate(steps(self.path)):
            request = to_item(step.request, b)
            answer = ttlv.decode(client.send_raw(request.encode()))
            stamp = answer.find(tag_of("ResponseHeader"))
            if stamp is not None and isinstance(stamp.get(tag_of("TimeStamp")), int):
                b.now = stamp.get(tag_of("TimeStamp"))
            compare = Comparison(b, server_made)
            try:
                # KMIP: the answer is in the request's version (OMOS-O-1-14's last step says 1.3)
                self.compare(compare, step.request.find("RequestHeader/ProtocolVersion"), _version(answer))
                self.compare(compare, step.response, answer)
            except Mismatch as error:
                said = [i.get(tag_of("ResultMessage")) for i in answer.all(tag_of("BatchItem"))]
                said = [m for m in said if m]
                raise Mismatch(
                    f"{self.name} step {number}: {error} (server: {said})\n{_show(answer)}"
                ) from None

    def first_answer(self, client: KmipClient) -> Item:
        """The answer to the first request alone (for a case whose request is refused)."""
        return ttlv.decode(client.send_raw(to_item(steps(self.path)[0].request, Bindings()).encode()))

    def compare(self, compare: Comparison, want: ET.Element | None, got: Item) -> None:
        if want is None or want.tag == "ProtocolVersion":
            if want is not None:
                compare.item(want, got, "/ResponseHeader")
            return
        header, *items = list(want)
        got_header, *got_items = list(got)
        compare.item(header, got_header, "")
        if len(items) != len(got_items):
            raise Mismatch(f"{len(got_items)} batch items, want {len(items)}")
        for w, g in zip(items, got_items, strict=True):
            operation = w.find("Operation")
            compare.uid, compare.operation = None, None if operation is None else operation.get("value")
            compare.item(w, g, "")


def _version(answer: Item) -> Item:
    header = answer.find(tag_of("ResponseHeader"))
    found = header.find(tag_of("ProtocolVersion")) if header is not None else None
    if found is None:
        raise Mismatch("the response has no protocol version")
    return found


def _show(item: Item, depth: int = 0) -> str:
    try:
        name = pykmip.Tags(item.tag).name
    except ValueError:
        name = f"0x{item.tag:06X}"
    if item.type == ItemType.STRUCTURE:
        return "  " * depth + name + "\n" + "".join(_show(c, depth + 1) for c in item)
    return "  " * depth + f"{name} = {item.value!r}\n"


def vectors(*prefixes: str) -> list[Vector]:
    """The test cases of these profiles, 1.4 then 2.1, in their numbered order."""

    def order(path: Path) -> tuple[str, str, int]:
        numbers = re.findall(r"\d+", path.stem)
        return (path.parent.parent.name, re.sub(r"-\d+-\d+$", "", path.stem), int(numbers[-2]))

    found = [
        p
        for p in VECTORS.glob("*/*/*.xml")
        if any(re.match(rf"{re.escape(x)}-[MO]-\d", p.stem) for x in prefixes)
    ]
    if not found:  # never a silently empty profile: the runner would pass having run nothing
        raise FileNotFoundError(f"no KMIP test cases for {', '.join(prefixes)} in {VECTORS}")
    return [Vector(p) for p in sorted(found, key=order)]
