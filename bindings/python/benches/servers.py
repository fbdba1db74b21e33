"""The servers of the HTTP benchmark, one per process: `python servers.py NAME` listens on a
free loopback port and prints its base URL on one stdout line.

    agentlog-py       agentlog.serve with a trivial Python handler (one complete)
    agentlog-py-demo  agentlog.serve with a Python handler doing the Rust demo's echo work
                      (three artifact chunks, then complete: four reports)
    a2a-sdk           the official a2a-sdk (1.3) Python server: an echo AgentExecutor on its
                      Starlette JSON-RPC routes under uvicorn, in-memory task store

(The Rust demo handler is `agentlog serve --demo`, started by http_bench.py.)
"""

from __future__ import annotations

import asyncio
import socket
import sys

import agentlog


async def trivial(task: agentlog.TaskContext) -> None:
    await task.complete("ok")


async def demo_like(task: agentlog.TaskContext) -> None:
    # What the Rust DemoHandler does for a plain message: `echo: <text>` in three chunks.
    text = f"echo: {task.text}"
    third = max(1, len(text) // 3)
    chunks = [text[:third], text[third : 2 * third], text[2 * third :]]
    for i, chunk in enumerate(chunks):
        await task.artifact(
            {"artifactId": "echo", "name": "echo", "parts": [{"text": chunk}]},
            append=i > 0,
            last_chunk=i == len(chunks) - 1,
        )
    await task.complete()


async def agentlog_server(handler: agentlog.types.Handler) -> None:
    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "bench")
    async with agentlog.Worker(log, "bench", handler, bridge=bridge):
        async with await agentlog.serve(bridge, "127.0.0.1:0") as server:
            print(server.url, flush=True)
            await server.serve_forever()


def a2a_sdk_server() -> None:
    import uvicorn
    from a2a.helpers import new_task_from_user_message, new_text_message
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from starlette.applications import Starlette

    class Echo(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            assert context.task_id and context.context_id
            if context.current_task is None and context.message is not None:
                task = new_task_from_user_message(context.message)
                task.id, task.context_id = context.task_id, context.context_id
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            await updater.complete(new_text_message(f"echo: {context.get_user_input()}"))

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise NotImplementedError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="echo",
        description="a2a-sdk echo",
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        skills=[AgentSkill(id="echo", name="echo", description="echoes", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/"))
    print(url, flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    name = sys.argv[1]
    try:
        if name == "agentlog-py":
            asyncio.run(agentlog_server(trivial))
        elif name == "agentlog-py-demo":
            asyncio.run(agentlog_server(demo_like))
        elif name == "a2a-sdk":
            a2a_sdk_server()
        else:
            sys.exit(f"unknown server {name!r}")
    except KeyboardInterrupt:
        pass
