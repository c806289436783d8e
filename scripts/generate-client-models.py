#!/usr/bin/env python3
"""Write kms_client/wire.py, the client's models of the KMA's answers, and kms_client/calls.py, its
calls (one method per operation, named by the operationId: the route function's name), from the
OpenAPI document the KMA's FastAPI app serves: a field added to a response schema, or a new route,
reaches the client by running this script (CI runs it with --check: tests/unit/test_client_wire.py).

  python scripts/generate-client-models.py          # rewrite kms_client/wire.py and calls.py
  python scripts/generate-client-models.py --check  # exit 1 when a checked-in module is stale

Every schema a 2xx answer refers to becomes a frozen, keyword-only dataclass, read by
kms_client/reader.py: `format: date-time` strings become datetimes, arrays tuples, objects
Mappings. `Page_X_` schemas are the one generic `Page[X]` of reader.py. Behaviour the GUI uses
(helper properties) lives in kms_client/behaviour.py, a base class named below.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "kms_client" / "wire.py"
CALLS = ROOT / "kms_client" / "calls.py"
PREFIX = "/api/v1"

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
    "UpgradeStep": "KmaVersions",
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


# -- the calls: one method per operation, named by its operationId (the route function's name) --

# Operations the client does not call through the generated module (the Prometheus scrape, outside
# the API). Answers composed on the client, or saved as a file, are skipped as such (see `_answer`):
# their methods are hand-written in kms_client (client.py and its parts), under the route's name.
HAND_WRITTEN = {"get_metrics", "upload_transfer_file"}  # the upload: a file streamed as the body
# The query parameters every list takes, after its filters.
LIST_PARAMETERS = ("limit", "cursor", "search", "sort", "order")

CALLS_HEADER = '''"""The KMA management API's calls, one method per operation, named as the route's function;
GENERATED from the OpenAPI document the KMA serves by scripts/generate-client-models.py: do not
edit; change kma/api's routes and run the script.

`KmsClient` (client.py) is a `Calls` with a connection; it adds only what the document cannot say
(failover, paging iterators, downloads with progress, answers composed on the client).
Threading: as `KmsClient`'s (one thread at a time, never the GUI thread).
"""

from __future__ import annotations

'''
# What the generated module may import, and from where; it imports those its methods use.
CALLS_IMPORTS = {
    "collections.abc": ("Iterable", "Mapping"),
    "datetime": ("datetime",),
    "typing": ("Any",),
    "._http": ("Credentials", "Order", "credentials_body", "present", "query", "segment"),
    ".reader": ("Page", "reader"),
}
CALLS_CLASS = '''
from .connection import Connection

class Calls:
    """The generated calls; a subclass gives `_connection`."""

    _connection: Connection
'''


def _schema_of(content: dict[str, Any]) -> dict[str, Any] | None:
    json_body = content.get("application/json")
    return None if json_body is None else json_body.get("schema", {})


def _answer(operation: dict[str, Any]) -> tuple[str, str, bool] | None:
    """(return type, how the answer is read, quorum-protected) for an operation the generator can
    call; None for one whose answer is hand-read (a file, a composed answer)."""
    ok = {s: r for s, r in operation["responses"].items() if s.startswith("2")}
    pending = "202" in ok and len(ok) > 1
    status = next(s for s in sorted(ok) if s != "202" or not pending)
    if status == "204":
        return "None", "none", pending
    schema = _schema_of(ok[status].get("content", {}))
    if schema is None and pending:  # ran at once: the answer is the (executed) operation
        schema = _schema_of(ok["202"].get("content", {}))
    if schema is None:
        return None
    every = schema.get("anyOf", [schema])
    options = [s for s in every if _ref_name(s.get("$ref", "")) != "PendingQuorumOp"] or every
    (answer,) = options
    names = _refs(answer)
    if names & COMPOSED:
        return None
    page = next((n for n in names if n.startswith("Page_")), None)
    if page is not None:
        item = page.removeprefix("Page_").removesuffix("_")
        return f"Page[{CLIENT_NAME.get(item, item)}]", f"page:{CLIENT_NAME.get(item, item)}", False
    kind = python_type(answer).replace("tuple[", "list[").replace(", ...]", "]")
    return kind, f"reader({kind})", pending and kind != "PendingQuorumOp"


def _argument_type(name: str, schema: dict[str, Any]) -> tuple[str, str]:
    """(the argument's type, the expression that puts it in the request)."""
    if name == "credentials":
        return "Credentials | None", "credentials_body(credentials)"
    if name == "order":
        return "Order | None", name
    every = schema.get("anyOf", [schema])
    options = [s for s in every if s.get("type") != "null"]
    nullable = len(options) < len(every)
    (one,) = options
    if one.get("type") == "array":
        items = one.get("items", {})
        # a body's list of objects (a request-only schema, no wire class): mappings, as a body's object
        each = "Mapping[str, Any]" if "$ref" in items or items.get("type") == "object" else python_type(items)
        kind, made = (
            f"Iterable[{each}]",
            f"[dict(x) for x in {name}]" if each.startswith("Mapping") else f"list({name})",
        )
    elif "$ref" in one or one.get("type") == "object":
        kind, made = "Mapping[str, Any]", f"dict({name})"
    else:
        return (f"{python_type(one)} | None" if nullable else python_type(one)), name
    value = f"None if {name} is None else {made}" if nullable else made
    return (f"{kind} | None" if nullable else kind), value


class _Signature:
    """An operation's arguments: path ones first, then the required, then those with defaults, then
    the keyword-only (a list's filters and paging; key split credentials)."""

    def __init__(self) -> None:
        self.positional: list[str] = []
        self.optional: list[str] = []
        self.keyword: list[str] = []

    def add(
        self, name: str, schema: dict[str, Any], required: bool, keyword: bool = False, body: bool = False
    ) -> str:
        kind, value = _argument_type(name, schema)
        if required:
            self.positional.append(f"{name}: {kind.removesuffix(' | None')}")
            return value
        # A body's field left out takes the server's default (a list's, an object's, any other),
        # so a caller may pass None for "as the KMA decides"; a query parameter shows its own.
        given = None if body else schema.get("default")
        if given is None and not kind.endswith("| None"):
            kind += " | None"
            if value != name and not value.startswith("None if"):
                value = f"None if {name} is None else {value}"
        literal = json.dumps(given) if isinstance(given, str) else repr(given)
        where = self.keyword if keyword or name == "credentials" else self.optional
        where.append(f"{name}: {kind} = {literal}")
        return value

    def render(self) -> str:
        star = ["*"] if self.keyword else []
        return ", ".join(["self", *self.positional, *self.optional, *star, *self.keyword])


def _call(document: dict[str, Any], path: str, verb: str, operation: dict[str, Any]) -> str | None:  # noqa: PLR0912  one case per kind of answer
    answer = _answer(operation)
    name = operation["operationId"]
    if answer is None or name in HAND_WRITTEN or not path.startswith(PREFIX + "/"):
        return None
    kind, read, pending = answer
    listing = read.startswith("page:")
    signature = _Signature()
    query_values: list[str] = []
    parameters = sorted(
        operation.get("parameters", ()),
        key=lambda p: (p["in"] != "path", p["name"] in LIST_PARAMETERS),
    )
    for parameter in parameters:
        required = parameter.get("required", False)
        value = signature.add(parameter["name"], parameter["schema"], required, listing)
        if parameter["in"] == "query":
            query_values.append(f'"{parameter["name"]}": {value}')
    body_values: list[str] = []
    body = operation.get("requestBody")
    if body is not None:
        schema = document["components"]["schemas"][_ref_name(_schema_of(body["content"])["$ref"])]
        required = set(schema.get("required", ()))
        fields = sorted(schema.get("properties", {}).items(), key=lambda f: f[0] not in required)
        for field_name, prop in fields:
            value = signature.add(field_name, prop, field_name in required, body=True)
            body_values.append(f"{field_name}={value}")
    route = path.removeprefix(PREFIX)
    for parameter in operation.get("parameters", ()):
        if parameter["in"] == "path":
            key = parameter["name"]
            route = route.replace(f"{{{key}}}", f"{{segment({key})}}")
    target = f'f"{route}"' if "{" in route else f'"{route}"'
    params = f"query({{{', '.join(query_values)}}})"
    sent = f"present({', '.join(body_values)})"
    options = [f"params={params}"] if query_values else []
    options += [f"body={sent}"] if body_values else []
    options += [] if "security" in operation else ["auth=False"]
    method = f'"{verb.upper()}"'
    if listing:
        call = f"self._connection.list({target}, {read.removeprefix('page:')}, {params})"
    elif pending:
        parse = "lambda _: None" if kind == "None" else read
        sent = sent if body_values else "{}"
        call = f"self._connection.call_or_pending({method}, {target}, {parse}, {sent})"
        kind = "PendingQuorumOp | None" if kind == "None" else f"{kind} | PendingQuorumOp"
    elif kind == "None":
        call = f"self._connection.request({', '.join([method, target, *options])})"
    else:
        call = f"self._connection.call({', '.join([method, target, read, *options])})"
    said = (operation.get("description") or "").split("\n\n")[0]
    doc = " ".join(said.split()).replace('"""', "'''").replace("\\", "\\\\") or f"`{verb.upper()} {path}`."
    doc = textwrap.fill(doc, 100, initial_indent=" " * 8, subsequent_indent=" " * 8).strip()
    returned = "" if kind == "None" else "return "
    head = f"\n    def {name}({signature.render()}) -> {kind}:\n"
    return f'{head}        """{doc}"""\n        {returned}{call}\n'


def _wire_names(document: dict[str, Any]) -> tuple[str, ...]:
    return tuple(CLIENT_NAME.get(n, n) for n in answered(document))


def render_calls(document: dict[str, Any]) -> str:
    """kms_client/calls.py, formatted as ruff formats it (so the check compares like with like)."""
    methods = [
        method
        for path, item in document["paths"].items()
        for verb, operation in item.items()
        if (method := _call(document, path, verb, operation)) is not None
    ]
    body = "".join(methods)
    imports = []
    for module, names in [*CALLS_IMPORTS.items(), (".wire", _wire_names(document))]:
        used = [n for n in names if re.search(rf"\b{n}\b", body)]
        if used:
            imports.append(f"from {module} import {', '.join(used)}")
    text = CALLS_HEADER + "\n".join(imports) + "\n" + CALLS_CLASS + body
    # The imports sorted, then the module formatted, as ruff (pinned) does: the check compares like
    # with like, and the checked-in module passes the house checks as generated.
    for ruff in (["check", "--select", "I", "--fix"], ["format"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *ruff, "--stdin-filename", str(CALLS), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        text = done.stdout
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a checked-in module is stale")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    document = served_document()
    stale = 0
    for target, text in ((TARGET, render(document)), (CALLS, render_calls(document))):
        if not args.check:
            target.write_text(text, encoding="utf-8")
            continue
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            diff = difflib.unified_diff(
                current.splitlines(), text.splitlines(), "checked in", "generated", lineterm=""
            )
            name = f"kms_client/{target.name}"
            print(f"{name} is stale: run scripts/generate-client-models.py", *diff, sep="\n")
            stale = 1
    return stale


if __name__ == "__main__":
    raise SystemExit(main())
