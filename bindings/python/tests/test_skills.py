"""Skills from Python: one worker, a handler per skill chosen by the message's metadata
(`agentlog.skill`, or `skillId`), the default handler for the rest, a tool answering the skill
of its name, and a skill's input schema (the card's `inputSchema`) refusing bad data before
anything is written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

import agentlog
from agentlog import TaskContext, ToolCall
from agentlog.types import CallToolResult

from conftest import agent_name, message

CARD = {
    "name": "Words",
    "skills": [
        {
            "id": "upper",
            "name": "Upper",
            "description": "Upper-cases text",
            "tags": ["text"],
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
        {"id": "count", "name": "Count", "description": "Counts words", "tags": ["text"]},
        {
            "id": "shout",
            "name": "Shout",
            "description": "A tool that is a skill too",
            "tags": ["text"],
            "inputSchema": {"type": "object", "required": ["text"]},
        },
    ],
}


async def upper(task: TaskContext) -> None:
    data = next(p["data"] for p in task.message["parts"] if "data" in p)
    await task.complete(f"{task.skill}: {data['text'].upper()}")


async def count(task: TaskContext) -> None:
    await task.complete(f"{task.skill}: {len(task.text.split())}")


async def shout(call: ToolCall) -> CallToolResult:
    return {"content": [{"type": "text", "text": f"{call.arguments['text']}!"}]}


async def default(task: TaskContext) -> None:
    await task.complete(f"default: {task.text} ({task.skill})")


def said(answer: Mapping[str, Any]) -> str:
    return str(answer["task"]["status"]["message"]["parts"][0]["text"])


async def test_each_skill_has_its_handler_and_its_schema_checks_first() -> None:
    log = await agentlog.open_log("memory://")
    agent = agent_name()
    bridge = await agentlog.Bridge.open(log, agent, card=CARD)
    assert [s["id"] for s in bridge.agent_card["skills"]] == ["upper", "count", "shout"]
    assert "inputSchema" not in json.dumps(bridge.agent_card)
    skills = {"upper": upper, "count": count}
    tools = {"shout": shout}
    async with agentlog.Worker(log, agent, default, skills=skills, tools=tools, bridge=bridge):
        by_metadata = message("", metadata={"agentlog.skill": "upper"})
        by_metadata["message"]["parts"] = [{"data": {"text": "hi"}}]
        assert said(await bridge.send_message(by_metadata)) == "upper: HI"
        by_skill_id = message("one two three", metadata={"skillId": "count"})
        assert said(await bridge.send_message(by_skill_id)) == "count: 3"
        assert said(await bridge.send_message(message("plain"))) == "default: plain (None)"
        # A tool answers the skill of its name: the data part is its arguments.
        by_tool = message("", metadata={"agentlog.skill": "shout"})
        by_tool["message"]["parts"] = [{"data": {"text": "hey"}}]
        shouted = (await bridge.send_message(by_tool))["task"]
        assert shouted["status"]["state"] == "TASK_STATE_COMPLETED", shouted
        assert shouted["artifacts"][0]["parts"][0]["text"] == "hey!"

        bad = message("", metadata={"agentlog.skill": "upper"})
        bad["message"]["parts"] = [{"data": {"text": 7}}]
        with pytest.raises(agentlog.InvalidParamsError) as refused:
            await bridge.send_message(bad)
        assert refused.value.details["field"] == "message.parts[0].data/text"
        with pytest.raises(agentlog.InvalidParamsError) as unknown:
            await bridge.send_message(message("x", metadata={"skillId": "nope"}))
        assert "upper, count, shout" in str(unknown.value)
        # Refused before anything was written: the agent has only the four tasks.
        listed = await bridge.list_tasks()
        assert len(listed["tasks"]) == 4
    await log.close()


async def test_skills_must_be_async_functions() -> None:
    log = await agentlog.open_log("memory://")

    def not_async(task: TaskContext) -> None: ...

    with pytest.raises(TypeError, match='skill "upper"'):
        agentlog.Worker(log, agent_name(), skills={"upper": not_async})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="skill id -> `async def`"):
        agentlog.Worker(log, agent_name(), skills=[upper])  # type: ignore[arg-type]
    await log.close()
