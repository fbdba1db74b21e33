"""A Python worker and a Python bridge over memory://, file:// (and iggy:// when an
iggy-server is found): the typed verbs, streams, handle_rpc, and every way a handler ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

import agentlog
from agentlog import TaskContext

from conftest import agent_name, message


async def echo(task: TaskContext) -> None:
    await task.working("thinking")
    await task.artifact({"artifactId": "echo", "parts": [{"text": "you "}]})
    await task.artifact(
        {"artifactId": "echo", "parts": [{"text": f"said {task.text}"}]},
        append=True,
        last_chunk=True,
    )
    await task.complete(f"done: {task.text}")


def text_of(task: Mapping[str, Any]) -> str:
    return "".join(p["text"] for a in task.get("artifacts", []) for p in a["parts"])


async def test_a_python_worker_answers_a_python_bridge(log_url: str) -> None:
    log = await agentlog.open_log(log_url)
    agent = agent_name()
    bridge = await agentlog.Bridge.open(log, agent, card={"name": "Echo", "description": "echoes"})
    assert bridge.agent_card["name"] == "Echo"
    async with agentlog.Worker(log, agent, echo, bridge=bridge) as worker:
        assert worker.running
        answer = await bridge.send_message(message("hello"))
        task = answer["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert task["status"]["message"]["parts"][0]["text"] == "done: hello"
        assert text_of(task) == "you said hello"
        again = await bridge.get_task({"id": task["id"]})
        assert again["status"] == task["status"]
        listed = await bridge.list_tasks()
        assert [t["id"] for t in listed["tasks"]] == [task["id"]]
        # A stream: the snapshot, then each report, each with its log position.
        events = [e async for e in bridge.send_streaming_message(message("streamed"))]
        assert events[-1]["last"] is True and not any(e["last"] for e in events[:-1])
        positions = [e["position"] for e in events]
        assert positions == sorted(positions)
        kinds = [next(iter(e["event"])) for e in events]
        assert kinds[0] == "task" and "artifactUpdate" in kinds and "statusUpdate" in kinds
        final = events[-1]["event"]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_COMPLETED"
    assert not worker.running
    await log.close()


async def test_a_file_log_keeps_the_tasks_across_a_reopen(tmp_path: Any) -> None:
    url = f"file://{tmp_path / 'log'}"
    log = await agentlog.open_log(url)
    bridge = await agentlog.Bridge.open(log, "keep")
    async with agentlog.Worker(log, "keep", echo, bridge=bridge):
        task = (await bridge.send_message(message("persist")))["task"]
    await log.close()
    log = await agentlog.open_log(url)
    bridge = await agentlog.Bridge.open(log, "keep")
    assert (await bridge.get_task({"id": task["id"]}))["status"]["state"] == "TASK_STATE_COMPLETED"
    await log.close()


async def test_a_handler_that_raises_fails_the_task_with_its_message() -> None:
    async def boom(task: TaskContext) -> None:
        raise ValueError(f"boom on {task.text}")

    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "boom")
    async with agentlog.Worker(log, "boom", boom, bridge=bridge):
        task = (await bridge.send_message(message("x")))["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["parts"][0]["text"] == "ValueError: boom on x"


async def test_cancel_reaches_a_handler_that_never_finishes() -> None:
    started = asyncio.Event()
    seen: list[str] = []

    async def forever(task: TaskContext) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen.append(f"cancelled, flag {task.cancelled}")
            raise

    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "forever")
    async with agentlog.Worker(log, "forever", forever, bridge=bridge):
        task = (await bridge.send_message({**message("wait"), "configuration": {"returnImmediately": True}}))["task"]
        await asyncio.wait_for(started.wait(), 10)
        canceled = await bridge.cancel_task({"id": task["id"]})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.05)
        assert seen == ["cancelled, flag True"]
        with pytest.raises(agentlog.TaskNotCancelableError) as raised:
            await bridge.cancel_task({"id": task["id"]})
        assert raised.value.code == -32002 and raised.value.retryable is False


async def test_a_handler_watching_the_flag_sees_the_cancel() -> None:
    async def watcher(task: TaskContext) -> None:
        await task.wait_cancelled()
        assert task.cancelled

    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "watch")
    async with agentlog.Worker(log, "watch", watcher, bridge=bridge):
        task = (await bridge.send_message({**message("w"), "configuration": {"returnImmediately": True}}))["task"]
        await asyncio.sleep(0.2)
        await bridge.cancel_task({"id": task["id"]})
        got = await bridge.get_task({"id": task["id"]})
        assert got["status"]["state"] == "TASK_STATE_CANCELED"


async def test_input_required_then_the_follow_up_completes_with_the_history() -> None:
    async def ask(task: TaskContext) -> None:
        if len(task.history) == 1:
            await task.input_required("which colour?")
            return
        assert task.history[0]["parts"][0]["text"] == "paint"
        await task.complete(f"painted {task.text}")

    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "ask")
    async with agentlog.Worker(log, "ask", ask, bridge=bridge):
        task = (await bridge.send_message(message("paint")))["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        follow = message("blue")
        follow["message"]["taskId"] = task["id"]
        done = (await bridge.send_message(follow))["task"]
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        assert done["status"]["message"]["parts"][0]["text"] == "painted blue"


async def test_a_reply_answers_with_a_message_and_there_is_no_task() -> None:
    async def replier(task: TaskContext) -> None:
        assert task.attempt == 1 and not task.is_retry
        assert task.idempotency_key == f"{task.task_id}/{task.message['messageId']}"
        await task.reply_text(f"hi {task.text}")

    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "reply")
    async with agentlog.Worker(log, "reply", replier, bridge=bridge):
        request = message("you")
        answer = await bridge.send_message(request)
        assert "task" not in answer
        assert answer["message"]["parts"] == [{"text": "hi you"}]
        assert answer["message"]["role"] == "ROLE_AGENT"
        tid = agentlog.wire.task_id("", "", request["message"]["messageId"])
        with pytest.raises(agentlog.TaskNotFoundError):
            await bridge.get_task({"id": tid})


async def test_handle_rpc_answers_bytes_and_streams_sse_frames() -> None:
    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "rpc")
    async with agentlog.Worker(log, "rpc", echo, bridge=bridge):
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("rpc")}
        reply = await bridge.handle_rpc(json.dumps(body), version="1.0")
        assert isinstance(reply, bytes)
        task = json.loads(reply)["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        bad = await bridge.handle_rpc(b'{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":7}}')
        assert isinstance(bad, bytes)
        assert json.loads(bad)["error"]["code"] == -32602
        body = {"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage", "params": message("sse")}
        frames = await bridge.handle_rpc(json.dumps(body).encode())
        assert isinstance(frames, agentlog.RpcFrames)
        got = [f async for f in frames]
        assert all(f.startswith(b"id: ") and f.endswith(b"\n\n") for f in got)
        last = json.loads(got[-1].split(b"data: ", 1)[1])
        assert last["id"] == "s"
        assert last["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        # Subscribing to a finished task is refused before any stream starts.
        with pytest.raises(agentlog.UnsupportedOperationError):
            async for _ in bridge.subscribe_to_task({"id": task["id"]}):
                pass


async def test_subscribe_follows_a_running_task_to_its_end() -> None:
    go = asyncio.Event()

    async def slow(task: TaskContext) -> None:
        await task.working("waiting")
        await go.wait()
        await task.complete("released")

    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "sub")
    async with agentlog.Worker(log, "sub", slow, bridge=bridge):
        task = (await bridge.send_message({**message("s"), "configuration": {"returnImmediately": True}}))["task"]
        events = bridge.subscribe_to_task({"id": task["id"]})
        first = await events.__anext__()
        assert first["event"]["task"]["id"] == task["id"]
        go.set()
        rest = [e async for e in events]
        assert rest[-1]["last"] and rest[-1]["event"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_handler_that_is_not_a_coroutine_function_is_refused() -> None:
    log = await agentlog.open_log("memory://")

    def plain(task: TaskContext) -> None:
        pass

    with pytest.raises(TypeError, match="async def"):
        agentlog.Worker(log, "plain", plain)  # type: ignore[arg-type]


async def test_queue_lag_counts_the_copies_a_busy_worker_has_not_read() -> None:
    go = asyncio.Event()

    async def held(task: TaskContext) -> None:
        await go.wait()
        await task.complete("done")

    # One partition: the queue is read in the order the sends were made.
    log = await agentlog.open_log("memory://?partitions=1")
    agent = agent_name()
    bridge = await agentlog.Bridge.open(log, agent)
    worker = agentlog.Worker(log, agent, held, concurrency=1)
    assert await worker.queue_lag() == 0
    async with worker:
        # One handler slot: four turns supervised at most, so the loop stops at the fifth
        # copy and those sent after it stay unread.
        for i in range(10):
            await bridge.send_message({**message(f"held {i}"), "configuration": {"returnImmediately": True}})
            await asyncio.sleep(0.02)
        lags = []
        for _ in range(200):
            lags.append(await worker.queue_lag())
            if lags[-1] > 0:
                break
            await asyncio.sleep(0.05)
        assert lags[-1] > 0, lags
        go.set()
        for _ in range(400):
            lags.append(await worker.queue_lag())
            if lags[-1] == 0:
                break
            await asyncio.sleep(0.05)
        assert lags[-1] == 0, lags
    await log.close()
