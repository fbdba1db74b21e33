"""Skills from Python: one worker, a handler per skill chosen by the message's metadata
(`agentlog.skill`, or `skillId`), the default handler for the rest, and a skill's input schema
(the card's `inputSchema`) refusing bad data before anything is written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

import agentlog
from agentlog import TaskContext

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
    ],
}


async def upper(task: TaskContext) -> None:
    data = next(p["data"] for p in task.message["parts"] if "data" in p)
    await task.complete(f"{task.skill}: {data['text'].upper()}")


async def count(task: TaskContext) -> None:
    await task.complete(f"{task.skill}: {len(task.text.split())}")


async def default(task: TaskContext) -> None:
    await task.complete(f"default: {task.text} ({task.skill})")


def said(answer: Mapping[str, Any]) -> str:
    return str(answer["task"]["status"]["message"]["parts"][0]["text"])


async def test_each_skill_has_its_handler_and_its_schema_checks_first() -> None:
    log = await agentlog.open_log("memory://")
    agent = agent_name()
    bridge = await agentlog.Bridge.open(log, agent, card=CARD)
    assert [s["id"] for s in bridge.agent_card["skills"]] == ["upper", "count"]
    assert "inputSchema" not in json.dumps(bridge.agent_card)
    skills = {"upper": upper, "count": count}
    async with agentlog.Worker(log, agent, default, skills=skills, bridge=bridge):
        by_metadata = message("", metadata={"agentlog.skill": "upper"})
        by_metadata["message"]["parts"] = [{"data": {"text": "hi"}}]
        assert said(await bridge.send_message(by_metadata)) == "upper: HI"
        by_skill_id = message("one two three", metadata={"skillId": "count"})
        assert said(await bridge.send_message(by_skill_id)) == "count: 3"
        assert said(await bridge.send_message(message("plain"))) == "default: plain (None)"

        bad = message("", metadata={"agentlog.skill": "upper"})
        bad["message"]["parts"] = [{"data": {"text": 7}}]
        with pytest.raises(agentlog.InvalidParamsError) as refused:
            await bridge.send_message(bad)
        assert refused.value.details["field"] == "message.parts[0].data/text"
        with pytest.raises(agentlog.InvalidParamsError) as unknown:
            await bridge.send_message(message("x", metadata={"skillId": "nope"}))
        assert "upper, count" in str(unknown.value)
        # Refused before anything was written: the agent has only the three tasks.
        listed = await bridge.list_tasks()
        assert len(listed["tasks"]) == 3
    await log.close()


async def test_skills_must_be_async_functions() -> None:
    log = await agentlog.open_log("memory://")

    def not_async(task: TaskContext) -> None: ...

    with pytest.raises(TypeError, match='skill "upper"'):
        agentlog.Worker(log, agent_name(), skills={"upper": not_async})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="skill id -> `async def`"):
        agentlog.Worker(log, agent_name(), skills=[upper])  # type: ignore[arg-type]
    await log.close()
