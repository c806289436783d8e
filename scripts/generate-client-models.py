#!/usr/bin/env python3
"""Write kms_client/wire.py, the client's models of the KMA's answers, from the OpenAPI document the
KMA's FastAPI app serves: a field added to a response schema in kma/api reaches the client by
running this script (CI runs it with --check: tests/unit/test_client_wire.py).

  python scripts/generate-client-models.py          # rewrite kms_client/wire.py
  python scripts/generate-client-models.py --check  # exit 1 when the checked-in file is stale

Every schema a 2xx answer refers to becomes a frozen, keyword-only dataclass, read by
kms_client/reader.py: `format: date-time` strings become datetimes, arrays tuples, objects
Mappings. `Page_X_` schemas are the one generic `Page[X]` of reader.py. Behaviour the GUI uses
(helper properties) lives in kms_client/behaviour.py, a base class named below.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "kms_client" / "wire.py"

# The client's names for schemas whose server name is too general in kms_client's namespace.
CLIENT_NAME = {"Checkpoint": "AuditCheckpoint", "Facets": "AuditFacets", "Report": "AuditReport"}
# Answers the client reads into its own composition (a pending operation plus what is shown once;
# a join grant with decoded bytes): hand-written beside the methods that receive them.
COMPOSED = {"KeySplitChangePending", "KmaAdmission", "JoinGrant"}
# Helper properties the GUI uses, by client class name (kms_client/behaviour.py).
BEHAVIOUR = {
    "AuditReport": "AuditReportFiles",
    "User": "UserPermissions",
    "KmaNode": "KmaNodeText",
    "TopologySite": 'TopologySiteKmas["KmaNode"]',
    "MemberEnrolment": "MemberEnrolmentState",
    "PendingQuorumOp": "PendingQuorumOpState",
    "Topology": 'TopologyKmas["KmaNode"]',
}
# Secrets: left out of `repr`, so a logged object never shows them.
SECRETS = {("Session", "token"), ("EnrollmentPassphrase", "passphrase")}

HEADER = '''"""The KMA management API's answers as frozen dataclasses, GENERATED from the OpenAPI document
the KMA serves by scripts/generate-client-models.py: do not edit; change kma/api's schemas and run
the script.

Read them with `kms_client.reader.read`; helper properties come from kms_client/behaviour.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import behaviour
'''


def served_document() -> dict[str, Any]:
    """The document `kma serve` answers GET /api/v1/openapi.json with (no KMA needed to build it:
    only the metrics route reads the data directory's settings, here none)."""
    from kma.api.app import create_app  # noqa: PLC0415  the script runs with the repository on the path

    settings = SimpleNamespace(root=Path("."), settings=lambda _name: {})
    document: dict[str, Any] = create_app(SimpleNamespace(data_dir=settings)).openapi()  # type: ignore[arg-type]
    return document


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {_ref_name(node["$ref"])} if "$ref" in node else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def answered(document: dict[str, Any]) -> list[str]:
    """The schemas 2xx answers refer to, directly or inside another, sorted by name."""
    schemas = document["components"]["schemas"]
    todo: set[str] = set()
    for item in document["paths"].values():
        for operation in item.values():
            for status, response in operation["responses"].items():
                if status.startswith("2"):
                    todo |= _refs(response.get("content", {}))
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name in COMPOSED:
            continue
        seen.add(name)
        todo |= _refs(schemas[name])
    return sorted(n for n in seen if not n.startswith("Page_"))


def python_type(schema: dict[str, Any]) -> str:  # noqa: PLR0911  one case per JSON type
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        return CLIENT_NAME.get(name, name)
    if "anyOf" in schema:
        options = [python_type(s) for s in schema["anyOf"]]
        return " | ".join(options)
    kind = schema.get("type")
    if kind == "null":
        return "None"
    if kind == "string":
        return "datetime" if schema.get("format") == "date-time" else "str"
    if kind in ("integer", "number", "boolean"):
        return {"integer": "int", "number": "float", "boolean": "bool"}[kind]
    if kind == "array":
        return f"tuple[{python_type(schema.get('items', {}))}, ...]"
    if kind == "object":
        values = schema.get("additionalProperties")
        return f"Mapping[str, {python_type(values) if isinstance(values, dict) else 'Any'}]"
    return "Any"


def default(schema: dict[str, Any], required: bool, secret: bool) -> str:
    options = ["repr=False"] if secret else []
    if "default" in schema:
        value = schema["default"]
        if isinstance(value, list | dict):
            options.append(f"default_factory={'tuple' if isinstance(value, list) else 'dict'}")
        else:
            # A string as the formatter writes it (double quotes), so the module stays as generated.
            literal = json.dumps(value) if isinstance(value, str) else repr(value)
            options.append(f"default={literal}")
    elif not required:
        options.append("default=None")
    if not options:
        return ""
    if options == [o for o in options if o.startswith("default=")]:
        return f" = {options[0].removeprefix('default=')}"
    return f" = field({', '.join(options)})"


def model(name: str, schema: dict[str, Any]) -> str:
    client = CLIENT_NAME.get(name, name)
    base = f"(behaviour.{BEHAVIOUR[client]})" if client in BEHAVIOUR else ""
    lines = ["", "", "@dataclass(frozen=True, kw_only=True)", f"class {client}{base}:"]
    if schema.get("description"):
        text = schema["description"].strip().replace("\n", "\n    ")
        lines += [f'    """{text}"""', ""]
    required = set(schema.get("required", ()))
    for field_name, prop in schema.get("properties", {}).items():
        secret = (client, field_name) in SECRETS
        lines.append(f"    {field_name}: {python_type(prop)}{default(prop, field_name in required, secret)}")
    return "\n".join(lines) + "\n"


def render(document: dict[str, Any]) -> str:
    schemas = document["components"]["schemas"]
    return HEADER + "".join(model(name, schemas[name]) for name in answered(document))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when kms_client/wire.py is stale")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    text = render(served_document())
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            diff = difflib.unified_diff(
                current.splitlines(), text.splitlines(), "checked in", "generated", lineterm=""
            )
            print("kms_client/wire.py is stale: run scripts/generate-client-models.py", *diff, sep="\n")
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
