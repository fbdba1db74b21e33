"""Publish tasks onto a log first, answer them later: the log is the queue and the truth.

    python examples/publish.py [LOG_URL] [TEXT ...]

Publishes one task per TEXT (default three) with ``returnImmediately``, so each is only a
record on the log (state SUBMITTED: no worker exists yet); then starts a worker and follows
each task to its end with ``subscribe_to_task``. With a file:// log the tasks survive a
restart between the two steps.
"""

from __future__ import annotations

import asyncio
import sys
import uuid

import agentlog


async def shout(task: agentlog.TaskContext) -> None:
    await task.complete(task.text.upper())


async def final_status(bridge: agentlog.Bridge, task_id: str) -> agentlog.types.TaskStatus:
    """The task's status once it ended: followed live, or read if it has ended already."""
    try:
        async for event in bridge.subscribe_to_task({"id": task_id}):
            update = event["event"].get("statusUpdate")
            if event["last"] and update is not None:
                return update["status"]
    except agentlog.UnsupportedOperationError:
        pass  # it ended before we subscribed
    return (await bridge.get_task({"id": task_id}))["status"]


async def main(log_url: str, texts: list[str]) -> int:
    log = await agentlog.open_log(log_url)
    bridge = await agentlog.Bridge.open(log, "shouter")
    ids = []
    for text in texts:
        request = {
            "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]},
            "configuration": {"returnImmediately": True},
        }
        task = (await bridge.send_message(request))["task"]
        print(f"published {task['id']} {task['status']['state']}")
        ids.append(task["id"])
    async with agentlog.Worker(log, "shouter", shout, bridge=bridge):
        for task_id in ids:
            status = await final_status(bridge, task_id)
            message = status.get("message")
            answer = message["parts"][0].get("text", "") if message else ""
            print(f"answered {task_id} {status['state']} {answer}")
    await log.close()
    return 0


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else "memory://"
    sys.exit(asyncio.run(main(url, sys.argv[2:] or ["hello", "from", "python"])))
