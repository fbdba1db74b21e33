"""a2a-python's push sender (a2a-sdk 1.3.0: `BasePushNotificationSender` over an
`InMemoryPushNotificationConfigStore` and one `httpx.AsyncClient`), under the load the push
bench (tests/benches/push.rs) puts on agentlog's sender in the same run: TASKS tasks, each with
CONFIGS configs on the bench's receiver, each sending UPDATES artifact updates in order (one
`send_notification` awaited after another per task, as the SDK's server does), all tasks at once.
Each update's text is the Unix time in microseconds when it was made: the receiver's arrival
time minus it is the lag.

    python sender.py RECEIVER_BASE_URL TASKS UPDATES CONFIGS [INTERVAL_MS]

With INTERVAL_MS, each task waits that long after each update (a paced load, for the lag).
"""

import asyncio
import sys
import time

import httpx
from a2a.server.context import ServerCallContext
from a2a.server.tasks.base_push_notification_sender import BasePushNotificationSender
from a2a.server.tasks.inmemory_push_notification_config_store import (
    InMemoryPushNotificationConfigStore,
)
from a2a.types.a2a_pb2 import Artifact, Part, TaskArtifactUpdateEvent, TaskPushNotificationConfig


async def main() -> None:
    base, tasks, updates, configs = sys.argv[1], *map(int, sys.argv[2:5])
    interval = int(sys.argv[5]) / 1000 if len(sys.argv) > 5 else 0
    store = InMemoryPushNotificationConfigStore()
    context = ServerCallContext()
    for t in range(tasks):
        for c in range(configs):
            config = TaskPushNotificationConfig(id=f"c{c}", url=f"{base}/python/{c}")
            await store.set_info(f"t{t}", config, context)
    # httpx's defaults (at most 100 connections, a 5 s timeout), as a server built on the SDK
    # has them unless it says otherwise.
    async with httpx.AsyncClient() as client:
        sender = BasePushNotificationSender(client, store)

        async def task(t: int) -> None:
            for u in range(updates):
                event = TaskArtifactUpdateEvent(
                    task_id=f"t{t}",
                    context_id=f"c{t}",
                    artifact=Artifact(artifact_id=f"a{u}", parts=[Part(text=str(time.time_ns() // 1000))]),
                )
                await sender.send_notification(f"t{t}", event)
                if interval:
                    await asyncio.sleep(interval)

        await asyncio.gather(*(task(t) for t in range(tasks)))


asyncio.run(main())
