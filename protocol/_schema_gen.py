"""Developer tool: turn Kafka's JSON message specs into our schema modules and their typed shapes.

Run once when a spec changes::

    python -m protocol._schema_gen ../shared/reference/kafka-message-specs/trunk-2025-02-14 \
        ../shared/reference/kafka-message-specs/kafka-4.2

An API's spec comes from the first directory whose spec has every version generated (the Kafka 4.2
set adds the APIs and versions the trunk snapshot predates; the others stay as generated from it).
Share groups' records (:data:`SHARE_RECORDS`) come from the last directory that has them.

One run writes, for every API, ``protocol/schemas/<api>.py`` (the declarative schema the codecs
are compiled from) and beside it ``protocol/messages/<api>.py`` (the same messages as
``TypedDict`` s for type checkers and IDEs, each key documented with the spec's ``about`` text
and versions); ``misc.py`` of both holds the headers, the consumer embedded protocol and the
coordinators' records, ``share_records.py`` share groups' records.  The output is ordinary source that is reviewed and committed;
``tests/protocol/test_generated.py`` fails when it is not what this tool makes from the specs.
Nothing at run time reads JSON.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
from pathlib import Path

#: API name -> (first version we serve, last version we serve).  The floors are
#: the Kafka 4.x broker floors; the ceilings are the newest stable versions.
SERVED: dict[str, tuple[int, int]] = {
    "Produce": (3, 12),
    "Fetch": (4, 17),
    "ListOffsets": (1, 10),
    "Metadata": (0, 13),
    "OffsetCommit": (2, 9),
    "OffsetFetch": (1, 9),
    "FindCoordinator": (0, 6),
    "JoinGroup": (2, 9),
    "Heartbeat": (0, 4),
    "LeaveGroup": (0, 5),
    "SyncGroup": (0, 5),
    "DescribeGroups": (0, 6),
    "ListGroups": (0, 5),
    "SaslHandshake": (0, 1),
    "ApiVersions": (0, 4),
    "CreateTopics": (2, 7),
    "DeleteTopics": (1, 6),
    "DeleteRecords": (0, 2),
    "InitProducerId": (0, 6),
    "DescribeConfigs": (1, 4),
    "SaslAuthenticate": (0, 2),
    "CreatePartitions": (0, 3),
    "DeleteGroups": (0, 2),
    "OffsetDelete": (0, 0),
    "DescribeCluster": (0, 2),
    "ConsumerGroupHeartbeat": (0, 1),
    "ConsumerGroupDescribe": (0, 1),
    "OffsetForLeaderEpoch": (2, 4),
    "AddPartitionsToTxn": (0, 5),
    "AddOffsetsToTxn": (0, 4),
    "EndTxn": (0, 5),
    "WriteTxnMarkers": (1, 1),
    "TxnOffsetCommit": (0, 5),
    "DescribeAcls": (1, 3),
    "CreateAcls": (1, 3),
    "DeleteAcls": (1, 3),
    "AlterConfigs": (0, 2),
    "DescribeLogDirs": (1, 4),
    "ElectLeaders": (0, 2),
    "IncrementalAlterConfigs": (0, 1),
    "DescribeUserScramCredentials": (0, 0),
    "AlterUserScramCredentials": (0, 0),
    "DescribeProducers": (0, 0),
    "DescribeTransactions": (0, 0),
    "ListTransactions": (0, 1),
    "AlterPartitionReassignments": (0, 1),
    "ListPartitionReassignments": (0, 0),
    "ShareGroupHeartbeat": (1, 1),
    "ShareGroupDescribe": (1, 1),
    "ShareFetch": (1, 2),
    "ShareAcknowledge": (1, 2),
    "InitializeShareGroupState": (0, 0),
    "ReadShareGroupState": (0, 0),
    "WriteShareGroupState": (0, 1),
    "DeleteShareGroupState": (0, 0),
    "ReadShareGroupStateSummary": (0, 1),
    "DescribeShareGroupOffsets": (0, 1),
    "AlterShareGroupOffsets": (0, 0),
    "DeleteShareGroupOffsets": (0, 0),
}

STANDALONE = [
    "RequestHeader",
    "ResponseHeader",
    "ConsumerProtocolSubscription",
    "ConsumerProtocolAssignment",
    "group-coordinator/OffsetCommitKey",
    "group-coordinator/OffsetCommitValue",
    "group-coordinator/GroupMetadataKey",
    "group-coordinator/GroupMetadataValue",
    "group-coordinator/ConsumerGroupMetadataKey",
    "group-coordinator/ConsumerGroupMetadataValue",
    "group-coordinator/ConsumerGroupMemberMetadataKey",
    "group-coordinator/ConsumerGroupMemberMetadataValue",
    "group-coordinator/ConsumerGroupTargetAssignmentMetadataKey",
    "group-coordinator/ConsumerGroupTargetAssignmentMetadataValue",
    "group-coordinator/ConsumerGroupTargetAssignmentMemberKey",
    "group-coordinator/ConsumerGroupTargetAssignmentMemberValue",
    "group-coordinator/ConsumerGroupCurrentMemberAssignmentKey",
    "group-coordinator/ConsumerGroupCurrentMemberAssignmentValue",
    "group-coordinator/ConsumerGroupPartitionMetadataKey",
    "group-coordinator/ConsumerGroupPartitionMetadataValue",
    "group-coordinator/ConsumerGroupRegularExpressionKey",
    "group-coordinator/ConsumerGroupRegularExpressionValue",
    "transaction-coordinator/TransactionLogKey",
    "transaction-coordinator/TransactionLogValue",
]

#: share groups' records: the group coordinator's (``__consumer_offsets`` types 10-15) and the share
#: coordinator's (``__share_group_state``), taken from the newest spec set that has them (older
#: trunk snapshots hold pre-release variants) into ``protocol/schemas/share_records.py``
SHARE_RECORDS = [
    "group-coordinator/ShareGroupMemberMetadataKey",
    "group-coordinator/ShareGroupMemberMetadataValue",
    "group-coordinator/ShareGroupMetadataKey",
    "group-coordinator/ShareGroupMetadataValue",
    "group-coordinator/ShareGroupTargetAssignmentMetadataKey",
    "group-coordinator/ShareGroupTargetAssignmentMetadataValue",
    "group-coordinator/ShareGroupTargetAssignmentMemberKey",
    "group-coordinator/ShareGroupTargetAssignmentMemberValue",
    "group-coordinator/ShareGroupCurrentMemberAssignmentKey",
    "group-coordinator/ShareGroupCurrentMemberAssignmentValue",
    "group-coordinator/ShareGroupStatePartitionMetadataKey",
    "group-coordinator/ShareGroupStatePartitionMetadataValue",
    "share-coordinator/ShareSnapshotKey",
    "share-coordinator/ShareSnapshotValue",
    "share-coordinator/ShareUpdateKey",
    "share-coordinator/ShareUpdateValue",
]

PRIMS = {"int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "string",
         "bytes", "records", "uuid"}


def snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def load(path: Path) -> dict:
    text = "\n".join(line for line in path.read_text().splitlines() if not line.strip().startswith("//"))
    return json.loads(text)


def vrange(spec: str | None) -> str:
    if spec is None or spec == "none":
        return "None"
    if spec.endswith("+"):
        return f"({int(spec[:-1])}, None)"
    if "-" in spec:
        lo, hi = spec.split("-")
        return f"({int(lo)}, {int(hi)})"
    return f"({int(spec)}, {int(spec)})"


def default_literal(ftype: str, value: object) -> str | None:
    if value is None:
        return None
    if value == "null":
        return "None"
    if ftype == "bool":
        return "True" if str(value).lower() == "true" else "False"
    if ftype in {"int8", "int16", "int32", "int64", "uint16", "uint32"}:
        text = str(value)
        return str(int(text, 16) if text.lower().startswith("0x") else int(text))
    if ftype == "float64":
        return repr(float(value))
    if ftype == "string":
        return repr(str(value))
    return None


def emit_fields(fields: list[dict], common: dict[str, dict], indent: str) -> list[str]:
    out: list[str] = []
    for f in fields:
        ftype = f["type"]
        base = ftype[2:] if ftype.startswith("[]") else ftype
        # a tagged-only field (no "versions") exists in its tagged versions, as Kafka's generator reads it
        args = [repr(snake(f["name"])), repr(ftype if base in PRIMS else ("[]" if ftype.startswith("[]") else "") + "struct"),
                vrange(f.get("versions", f.get("taggedVersions")))]
        kw: list[str] = []
        if f.get("nullableVersions"):
            kw.append(f"nullable={vrange(f['nullableVersions'])}")
        if "tag" in f:
            kw.append(f"tag={int(f['tag'])}")
            kw.append(f"tagged={vrange(f.get('taggedVersions', f.get('versions')))}")
        if f.get("flexibleVersions") == "none":
            kw.append("flexible=False")
        lit = default_literal(base if not ftype.startswith("[]") else "", f.get("default"))
        if lit is not None:
            kw.append(f"default={lit}")
        sub = f.get("fields")
        if base not in PRIMS and sub is None:
            sub = common[base]["fields"]
        if base not in PRIMS:
            inner = emit_fields(sub, common, indent + "    ")
            kw.append("fields=(\n" + "\n".join(inner) + f"\n{indent})")
        out.append(f"{indent}F({', '.join(args + kw)}),")
    return out


def emit_message(spec: dict, versions: tuple[int, int] | None, var: str) -> str:
    common = {c["name"]: c for c in spec.get("commonStructs", [])}
    valid = spec.get("validVersions", "0")
    vmin, vmax = (versions if versions else eval(vrange(valid).replace("None", "0")))
    flexible = spec.get("flexibleVersions", "none")
    flex_from = "None" if flexible == "none" else str(int(flexible[:-1]))
    head = [f"{var} = Message("]
    head.append(f"    {spec['name']!r},")
    if "apiKey" in spec:
        head.append(f"    api_key={spec['apiKey']},")
    head.append(f"    versions=({vmin}, {vmax}),")
    head.append(f"    flexible_from={flex_from},")
    body = emit_fields(spec["fields"], common, "        ")
    head.append("    fields=(\n" + "\n".join(body) + "\n    ),")
    head.append(")")
    return "\n".join(head)


HEADER = '"""{doc}\n\nDeclarative schema generated from Apache Kafka\'s message specs by\n``protocol/_schema_gen.py``; field names are snake_case of the spec names.\n"""\n\nfrom protocol.schema import Field as F\nfrom protocol.schema import Message\n'


# ---------------------------------------------------------------------------------------------
# typed shapes: protocol/messages/<api>.py
# ---------------------------------------------------------------------------------------------

#: the Python type a value of each primitive takes (what the decoder returns, what the encoder takes)
PY_TYPES = {"int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint16": "int",
            "uint32": "int", "float64": "float", "bool": "bool", "string": "str", "bytes": "Bytes",
            "records": "Records", "uuid": "UUID"}

TYPED_HEADER = '''"""{doc}: the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/{module}.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: {example} = {{...}}
"""

from __future__ import annotations

from typing import TypedDict
'''


def _doc(text: str) -> str:
    """A one-line docstring literal for ``text``."""
    text = " ".join(text.split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""{text}"""'


def _version_note(f: dict) -> str:
    notes = [f"versions {f.get('versions', f.get('taggedVersions'))}"]
    if f.get("nullableVersions"):
        notes.append(f"nullable {f['nullableVersions']}")
    if "tag" in f:
        notes.append(f"tagged {f.get('taggedVersions', f.get('versions'))} as tag {f['tag']}")
    if "default" in f:
        value = f["default"]
        shown = str(value).lower() if isinstance(value, bool) else '""' if value == "" else str(value)
        notes.append(f"default {shown}")
    return "; ".join(notes)


class _Structs:
    """The struct classes of one module: Kafka's struct names, unless two different structs share
    a name (then each takes its message's name in front)."""

    def __init__(self, specs: list[dict]) -> None:
        self.bodies: dict[str, set[str]] = {}
        for spec in specs:
            common = {c["name"]: c for c in spec.get("commonStructs", [])}
            self._collect(spec["fields"], common)

    def _collect(self, fields: list[dict], common: dict[str, dict]) -> None:
        for f in fields:
            base = f["type"][2:] if f["type"].startswith("[]") else f["type"]
            if base not in PRIMS:
                sub = f.get("fields") or common[base]["fields"]
                self.bodies.setdefault(base, set()).add(json.dumps(sub, sort_keys=True))
                self._collect(sub, common)

    def name(self, message: str, base: str) -> str:
        return base if len(self.bodies[base]) == 1 else message + base


def _struct_doc(where: str, about: str) -> str:
    return f"{where}: {about}" if about else where


def emit_typed_module(doc: str, module: str, specs: list[dict]) -> str:
    """``protocol/messages/<module>.py``: a ``TypedDict`` per message (``<Name>Data``, as Kafka names
    its generated classes) and per struct (the spec's struct name)."""
    structs = _Structs(specs)
    classes: list[str] = []
    emitted: set[str] = set()
    uses: set[str] = set()
    for spec in specs:
        common = {c["name"]: c for c in spec.get("commonStructs", [])}
        flexible = spec.get("flexibleVersions", "none")
        head = spec["name"]
        if "apiKey" in spec:
            kind = "API key" if spec.get("type") in ("request", "response") else "record type"
            head += f" ({kind} {spec['apiKey']})"
        head += f": versions {spec.get('validVersions', '0')}"
        head += ", not flexible." if flexible == "none" else f", flexible from {flexible[:-1]}."
        pending = [(f"{spec['name']}Data", head, spec["fields"])]
        while pending:
            cls, cdoc, fields = pending.pop(0)
            if cls in emitted:
                continue
            emitted.add(cls)
            lines = [f"class {cls}(TypedDict, total=False):", f"    {_doc(cdoc)}"]
            for f in fields:
                name = snake(f["name"])
                if keyword.iskeyword(name) or name in {"int", "float", "bool", "str", "list"}:
                    raise ValueError(f"{spec['name']}: field {name!r} cannot be a TypedDict key")
                ftype = f["type"]
                is_array = ftype.startswith("[]")
                base = ftype[2:] if is_array else ftype
                about = f.get("about", "").strip()
                if base in PRIMS:
                    py = PY_TYPES[base]
                    uses.add(py)
                else:
                    py = structs.name(spec["name"], base)
                    where = f"An element of ``{cls}.{name}``" if is_array else f"``{cls}.{name}``"
                    pending.append((py, _struct_doc(where, about), f.get("fields") or common[base]["fields"]))
                if is_array:
                    py = f"list[{py}]"
                if f.get("nullableVersions"):
                    py += " | None"
                note = _version_note(f)
                lines += ["", f"    {name}: {py}", f"    {_doc(f'{about} ({note})' if about else f'({note})')}"]
            classes.append("\n".join(lines) + "\n")
    text = TYPED_HEADER.format(doc=doc, module=module, example=f"{specs[0]['name']}Data")
    if "UUID" in uses:
        text += "from uuid import UUID\n"
    aliases = sorted(u for u in uses if u in ("Bytes", "Records"))
    if aliases:
        text += f"\nfrom protocol.messages import {', '.join(aliases)}\n"
    return text + "\n\n" + "\n\n".join(classes)


def render(spec_dir: str | Path, *overlays: str | Path) -> dict[str, str]:
    """Every generated file: its path under ``protocol/`` -> its text.  A spec is taken from the first
    of ``spec_dir`` and ``overlays`` whose spec has the versions generated."""
    roots = [Path(d) for d in (spec_dir, *overlays)]

    def spec(name: str, newest: int | None = None, *, latest_set: bool = False) -> dict:
        found = [load(r / f"{name}.json") for r in roots if (r / f"{name}.json").exists()]
        if not found:
            raise FileNotFoundError(f"no spec {name}.json in {', '.join(map(str, roots))}")
        if latest_set:
            return found[-1]
        if newest is not None:
            for candidate in found:
                if int(str(candidate["validVersions"]).split("-")[-1]) >= newest:
                    return candidate
        return found[0]

    files: dict[str, str] = {}
    for api, versions in SERVED.items():
        req = spec(f"{api}Request", versions[1])
        resp = spec(f"{api}Response", versions[1])
        module = snake(api)
        text = HEADER.format(doc=f"{api} (API key {req['apiKey']}): request and response, v{versions[0]}-v{versions[1]}.")
        text += "\n" + emit_message(req, versions, f"{api}Request") + "\n\n" + emit_message(resp, versions, f"{api}Response") + "\n"
        files[f"schemas/{module}.py"] = text
        files[f"messages/{module}.py"] = emit_typed_module(f"{api} (API key {req['apiKey']})", module, [req, resp])
    misc = HEADER.format(doc="Headers, the consumer embedded protocol and `__consumer_offsets` records.")
    specs = [spec(name) for name in STANDALONE]
    for standalone in specs:
        misc += "\n" + emit_message(standalone, None, standalone["name"]) + "\n"
    files["schemas/misc.py"] = misc
    files["messages/misc.py"] = emit_typed_module(
        "Headers, the consumer embedded protocol and the coordinators' records", "misc", specs)
    share = HEADER.format(doc="Share groups' records: ``__consumer_offsets`` types 10-15 and ``__share_group_state``.")
    share_specs = [spec(name, latest_set=True) for name in SHARE_RECORDS]
    for standalone in share_specs:
        share += "\n" + emit_message(standalone, None, standalone["name"]) + "\n"
    files["schemas/share_records.py"] = share
    files["messages/share_records.py"] = emit_typed_module(
        "Share groups' records (``__consumer_offsets`` types 10-15 and ``__share_group_state``)",
        "share_records", share_specs)
    return files


def main(spec_dir: str, *overlays: str) -> None:
    out_root = Path(__file__).parent
    files = render(spec_dir, *overlays)
    for rel, text in files.items():
        path = out_root / rel
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    print(f"wrote {len(files)} modules under {out_root}")


if __name__ == "__main__":
    main(sys.argv[1], *sys.argv[2:])
