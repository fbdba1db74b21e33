"""The error hierarchy: one agentlog.Error root, a subclass per kind with the kind's JSON-RPC
code and retryability from the SDK's one table, and the errors the binding reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentlog

# The SDK's table (sdk/src/error.rs, ErrorKind::info), as a client sees it on the wire.
EXPECTED = {
    "ParseError": ("parse", -32700, False),
    "InvalidRequestError": ("invalid_request", -32600, False),
    "MethodNotFoundError": ("method_not_found", -32601, False),
    "InvalidParamsError": ("invalid_params", -32602, False),
    "TaskNotFoundError": ("task_not_found", -32001, False),
    "TaskNotCancelableError": ("task_not_cancelable", -32002, False),
    "PushNotificationNotSupportedError": ("push_notification_not_supported", -32003, False),
    "UnsupportedOperationError": ("unsupported_operation", -32004, False),
    "ContentTypeNotSupportedError": ("content_type_not_supported", -32005, False),
    "VersionNotSupportedError": ("version_not_supported", -32009, False),
    "ExtendedAgentCardNotConfiguredError": ("extended_agent_card_not_configured", -32007, False),
    "ExtensionSupportRequiredError": ("extension_support_required", -32008, False),
    "DeadlineExceededError": ("timeout", -32603, True),
    "UnavailableError": ("unavailable", -32603, True),
    "OverloadedError": ("overloaded", -32603, True),
    "CorruptError": ("corrupt", -32603, False),
    "ConfigError": ("config", -32603, False),
    "InternalError": ("internal", -32603, False),
    "ToolFailedError": ("tool_failed", -32603, False),
    "LoopDetectedError": ("loop_detected", -32600, False),
    "HeaderMismatchError": ("header_mismatch", -32600, False),
}


def test_every_kind_has_a_subclass_with_the_tables_code_and_retryability() -> None:
    for name, (kind, code, retryable) in EXPECTED.items():
        cls = getattr(agentlog, name)
        assert issubclass(cls, agentlog.Error) and issubclass(cls, Exception), name
        assert (cls.kind, cls.code, cls.retryable) == (kind, code, retryable), name
    # Auth kinds exist too, and nothing shadows a builtin.
    assert agentlog.UnauthenticatedError.kind == "unauthenticated"
    assert agentlog.PermissionDeniedError.kind == "permission_denied"
    assert not hasattr(agentlog, "TimeoutError")
    assert issubclass(agentlog.WireError, agentlog.Error)
    # One subclass per kind, no more: a new kind shows up here (and in the stubs, by stubtest).
    kinds = {
        name
        for name in dir(agentlog)
        if isinstance(getattr(agentlog, name), type)
        and issubclass(getattr(agentlog, name), agentlog.Error)
        and name not in ("Error", "WireError")
    }
    assert kinds == set(EXPECTED) | {"UnauthenticatedError", "PermissionDeniedError"}


async def test_a_bad_log_url_lists_what_is_accepted() -> None:
    with pytest.raises(agentlog.ConfigError) as raised:
        await agentlog.open_log("ftp://nowhere")
    message = str(raised.value)
    for accepted in ("file://", "memory://", "iggy://"):
        assert accepted in message, message
    assert raised.value.kind == "config" and not raised.value.retryable


async def test_errors_carry_their_details_and_bad_params_name_the_field() -> None:
    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "errors")
    with pytest.raises(agentlog.TaskNotFoundError) as missing:
        await bridge.get_task({"id": "no-such-task"})
    assert missing.value.details == {"taskId": "no-such-task"}
    with pytest.raises(agentlog.InvalidParamsError, match="id") as bad:
        await bridge.get_task({"id": 5})
    assert bad.value.code == -32602
    with pytest.raises(agentlog.InvalidParamsError, match="not JSON data"):
        await bridge.get_task({"id": object()})
    with pytest.raises(agentlog.Error):
        await bridge.send_message({"message": {"role": "ROLE_USER"}})


async def test_a_card_comes_from_a_dict_or_a_file_and_bad_ones_say_why(tmp_path: Path) -> None:
    log = await agentlog.open_log("memory://")
    path = tmp_path / "card.json"
    path.write_text(json.dumps({"name": "From a file", "version": "2.0.0"}))
    bridge = await agentlog.Bridge.open(log, "carded", card=path)
    card = bridge.agent_card
    assert (card["name"], card["version"]) == ("From a file", "2.0.0")
    assert card["capabilities"]["streaming"] is True and card["skills"]
    bridge = await agentlog.Bridge.open(log, "carded2", card=str(path))
    assert bridge.agent_card["name"] == "From a file"
    with pytest.raises(agentlog.ConfigError, match="skills"):
        await agentlog.Bridge.open(log, "x", card={"skills": "none"})
    with pytest.raises(agentlog.ConfigError, match="auth"):
        await agentlog.Bridge.open(log, "x", card={"auth": {}})
    with pytest.raises(agentlog.ConfigError, match="cannot read"):
        await agentlog.Bridge.open(log, "x", card=tmp_path / "missing.json")
    with pytest.raises(agentlog.InvalidParamsError):
        await agentlog.Bridge.open(log, "x", blocking_timeout=-1)


def test_the_version_is_the_crates() -> None:
    cargo = (Path(__file__).resolve().parents[3] / "Cargo.toml").read_text()
    line = next(l for l in cargo.splitlines() if l.startswith("version = "))
    assert agentlog.__version__ == line.split('"')[1]
