"""Every vector of the repository's fixtures/*.json through agentlog.wire: the same files the
Rust runner (wire/tests/fixtures.rs) reads, none skipped; a file without a runner fails."""

from __future__ import annotations

import email.message
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentlog
from agentlog import wire

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
Case = dict[str, Any]


def task_state(case: Case) -> None:
    given = case["input"]
    if "code" in given:
        if "error" in case:
            with pytest.raises(agentlog.WireError) as raised:
                wire.state(given["code"])
            assert raised.value.kind == case["error"]["kind"]
            return
        info = wire.state(given["code"])
        expected = case["expected"]
        assert (info["v1"], info["v03"]) == (expected["v1"], expected["v03"])
        assert (info["terminal"], info["interrupted"]) == (
            expected["terminal"],
            expected["interrupted"],
        )
        return
    if "name" in given:
        if "error" in case:
            with pytest.raises(agentlog.WireError) as raised:
                wire.state_code(given["name"])
            assert raised.value.kind == case["error"]["kind"]
            return
        assert wire.state_code(given["name"]) == case["expected"]["code"]
        return
    assert wire.can_transition(given["from"], given["to"]) is case["expected"]["legal"]


def record(case: Case) -> None:
    given = case["input"]
    if "error" in case:
        with pytest.raises(agentlog.WireError) as raised:
            wire.decode_record(bytes.fromhex(given["hex"]))
        assert raised.value.kind == case["error"]["kind"]
        return
    if "hex" in given:
        # An older format version decodes to the record.
        assert wire.decode_record(bytes.fromhex(given["hex"])) == case["expected"]["record"]
        return
    encoded = wire.encode_record(given["record"])
    assert encoded.hex() == case["expected"]["hex"]
    assert wire.decode_record(encoded) == given["record"]


def signed_record(case: Case, file: dict[str, Any]) -> None:
    data = bytes.fromhex(case["input"]["hex"])
    expected = case["expected"]
    assert wire.decode_record(data) == expected["record"]
    assert wire.encode_record(expected["record"]) == data
    assert wire.signing_payload(data).hex() == expected["signingPayloadHex"]
    assert wire.record_verdict(data, file["trust"]) == expected["verdict"]


def members_case(case: Case) -> None:
    given = case["input"]
    if "error" in case:
        with pytest.raises(agentlog.WireError) as raised:
            wire.decode_member_record(bytes.fromhex(given["hex"]))
        assert raised.value.kind == case["error"]["kind"]
        return
    if "records" in given:
        assert wire.fold_members(given["partitions"], given["records"]) == case["expected"]
        return
    encoded = wire.encode_member_record(given["record"])
    assert encoded.hex() == case["expected"]["hex"]
    assert wire.decode_member_record(encoded) == given["record"]
    assert wire.member_signing_payload(encoded).hex() == case["expected"]["signingPayloadHex"]


def jsonrpc(case: Case) -> None:
    given = case["input"]
    if "header" in given:
        version = wire.protocol_version(given["header"])
        if "error" in case:
            assert version is None
            assert case["error"]["code"] == agentlog.VersionNotSupportedError.code
        else:
            assert version == case["expected"]["version"]
        return
    if "render" in given:
        r = given["render"]
        body = wire.error_response(r["code"], r["metadata"], r["version"], json.dumps(r["id"]))
        assert json.loads(body) == case["expected"]
        return
    body = bytes.fromhex(given["body_hex"]) if "body_hex" in given else given["body"].encode()
    parsed = wire.parse_rpc_request(body)
    if "error" in case:
        assert "error" in parsed, parsed
        assert parsed["error"]["code"] == case["error"]["code"]
        assert parsed["id"] == case["error"]["id"]
        return
    assert "error" not in parsed, parsed
    expected = case["expected"]
    assert [parsed[k] for k in ("method", "operation", "version", "id")] == [
        expected[k] for k in ("method", "operation", "version", "id")
    ]


def fold_case(case: Case) -> None:
    folded = wire.fold(case["input"]["records"])
    for key in ("task", "answer", "expiresAtMs", "stats"):
        assert folded[key] == case["expected"][key], key


def ids_case(case: Case) -> None:
    given = case["input"]
    if "turn" in given:
        got = wire.record_id(given["taskId"], given["turn"], given["attempt"], given["sequence"])
        assert got == case["expected"]["recordId"]
        return
    args = (given["tenant"], given["principal"], given["messageId"])
    assert wire.task_id(*args) == case["expected"]["taskId"]
    assert wire.context_id(*args) == case["expected"]["contextId"]


def v03_case(case: Case) -> None:
    given = case["input"]
    if "sendParams" in given:
        if "error" in case:
            with pytest.raises(agentlog.WireError) as raised:
                wire.send_params_from_v03(given["sendParams"])
            assert raised.value.kind == case["error"]["kind"]
            return
        assert wire.send_params_from_v03(given["sendParams"]) == case["expected"]["v1"]
        return
    converted = wire.task_to_v03(given["task"])
    assert converted == case["expected"]["v03"]
    assert wire.task_to_v03(wire.task_from_v03(converted)) == converted


def card_signature_case(case: Case) -> None:
    given = case["input"]
    if "card" in given:
        payload = wire.card_payload(given["card"])
        expected = case["expected"]
        assert payload == expected["payload"]
        if "header" in expected:
            signature = given["card"]["signatures"][0]
            assert wire.decode_protected_header(signature["protected"]) == expected["header"]
            assert wire.signing_input(signature["protected"], payload) == expected["signingInput"]
        if "valid" in expected:
            if expected["valid"]:
                kid = wire.verify_card_signature(given["card"], given["publicKeyHex"], given["kid"])
                assert kid == given["kid"]
                # Ed25519 is deterministic: the seed re-makes the signature byte for byte.
                made = wire.card_signature(given["card"], given["seedHex"], given["kid"])
                assert made == given["card"]["signatures"][0]
            else:
                with pytest.raises(agentlog.UnauthenticatedError):
                    wire.verify_card_signature(given["card"], given["publicKeyHex"], given["kid"])
        return
    if "jcs" in given:
        assert wire.canonicalize(given["jcs"]) == case["expected"]["canonical"]
        return
    if "error" in case:
        with pytest.raises(agentlog.WireError) as raised:
            wire.decode_protected_header(given["protected"])
        assert raised.value.kind == case["error"]["kind"]
        return
    header = wire.decode_protected_header(given["protected"])
    assert header == case["expected"]["header"]
    assert wire.encode_protected_header(header) == given["protected"]


# The trace context vectors are read here without the binding, as a reader in any language
# would (wire/README.md, "Trace context"): a standard media-type parser for the parameters,
# then the W3C rules.
PARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
STATE_KEY = re.compile(r"[a-z0-9_\-*/@]{1,256}")


def w3c_context(parent: str | None, state: str | None) -> dict[str, str] | None:
    if parent is None:
        return None
    parent = parent.strip()
    found = PARENT.match(parent)
    if not found or not parent.isascii():
        return None
    version, trace_id, parent_id = found.group(1), found.group(2), found.group(3)
    rest = parent[55:]
    if version == "ff" or set(trace_id) == {"0"} or set(parent_id) == {"0"}:
        return None
    if (version == "00" and rest) or (rest and not rest.startswith("-")):
        return None
    return {"traceparent": parent[:55], "tracestate": w3c_state(state)}


def w3c_state(state: str | None) -> str:
    state = (state or "").strip()
    if not state or len(state) > 512:
        return ""
    members = [m.strip(" \t") for m in state.split(",")]
    members = [m for m in members if m]
    for member in members:
        key, eq, value = member.partition("=")
        printable = all(0x20 <= ord(c) <= 0x7E and c not in ",=" for c in value)
        if not (eq and STATE_KEY.fullmatch(key) and value and len(value) <= 256 and printable):
            return ""
        if value.endswith(" "):
            return ""
    return state if 1 <= len(members) <= 32 else ""


def media_type_params(content_type: str) -> dict[str, str]:
    message = email.message.Message()
    message["Content-Type"] = content_type
    params = message.get_params() or []
    return {name.lower(): value for name, value in params[1:]}


def trace_context_case(case: Case) -> None:
    given, expected = case["input"], case["expected"]
    if "traceparent" in given:
        context = w3c_context(given["traceparent"], given["tracestate"])
        assert context == expected["context"]
        if context is None:
            assert expected["contentType"] is None
            return
        # The writer's form: the parent as a token, the state as a quoted-string.
        content_type = f"application/json; traceparent={context['traceparent']}"
        if context["tracestate"]:
            quoted = context["tracestate"].replace("\\", "\\\\").replace('"', '\\"')
            content_type += f'; tracestate="{quoted}"'
        assert content_type == expected["contentType"]
        params = media_type_params(content_type)
        assert w3c_context(params.get("traceparent"), params.get("tracestate")) == context
        return
    params = media_type_params(given["contentType"])
    assert params == expected["parameters"]
    assert w3c_context(params.get("traceparent"), params.get("tracestate")) == expected["context"]


RUNNERS: dict[str, Callable[[Case, dict[str, Any]], None]] = {
    "task_states.json": lambda c, _: task_state(c),
    "records.json": lambda c, _: record(c),
    "signed_records.json": signed_record,
    "jsonrpc.json": lambda c, _: jsonrpc(c),
    "fold.json": lambda c, _: fold_case(c),
    "ids.json": lambda c, _: ids_case(c),
    "v03.json": lambda c, _: v03_case(c),
    "card_signatures.json": lambda c, _: card_signature_case(c),
    "trace_context.json": lambda c, _: trace_context_case(c),
    "members.json": lambda c, _: members_case(c),
}


def vectors() -> list[Any]:
    out = []
    for path in sorted(FIXTURES.glob("*.json")):
        file = json.loads(path.read_text())
        for i, case in enumerate(file["cases"]):
            out.append(pytest.param(path.name, case, file, id=f"{path.name}:{i}"))
    return out


def test_every_fixture_file_has_a_runner_and_there_are_enough_vectors() -> None:
    names = {p.name for p in FIXTURES.glob("*.json")}
    assert names == set(RUNNERS), f"no runner for {names - set(RUNNERS)}"
    cases = vectors()
    negative = sum(1 for p in cases if "error" in p.values[1])
    assert len(cases) >= 100 and negative >= 30


@pytest.mark.parametrize(("name", "case", "file"), vectors())
def test_vector(name: str, case: Case, file: dict[str, Any]) -> None:
    RUNNERS[name](case, file)
