"""An A2A agent in Python: a worker with an async handler and the HTTP server, on one log.

    python examples/echo_agent.py [--listen 127.0.0.1:8080] [--log file:///tmp/echo-log]

Prints ``serving agent "echo" at http://.../`` once ready; any A2A client can call it (the
official a2a-sdk, `agentlog send URL hello`, curl). The handler answers ``echo: <text>`` as
an artifact; ``sleep N`` works N seconds (cancel it); ``input`` asks for input and echoes the
answer; ``fail`` fails; ``reply TEXT`` answers with a message, no task. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import asyncio

import agentlog


async def handle(task: agentlog.TaskContext) -> None:
    text = task.text
    if text.startswith("sleep "):
        seconds = float(text.split()[1])
        for i in range(int(seconds * 10)):
            if i % 10 == 0:
                await task.working(f"{i // 10} of {seconds:g} s")
            await asyncio.sleep(0.1)
        await task.complete(f"slept {seconds:g} s")
    elif text == "input" and len(task.history) == 1:
        await task.input_required("what should I echo?")
    elif text == "fail":
        raise RuntimeError("asked to fail")
    elif text.startswith("reply "):
        await task.reply_text(text.removeprefix("reply "))
    else:
        await task.artifact({"artifactId": "echo", "name": "echo", "parts": [{"text": f"echo: {text}"}]})
        await task.complete()


async def main(listen: str, log_url: str) -> None:
    log = await agentlog.open_log(log_url)
    card = {"name": "echo", "description": "Echoes messages, from a Python handler"}
    bridge = await agentlog.Bridge.open(log, "echo", card=card)
    async with agentlog.Worker(log, "echo", handle, bridge=bridge):
        async with await agentlog.serve(bridge, listen) as server:
            print(f'serving agent "echo" at {server.url} (log: {log_url})', flush=True)
            await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:8080", help="IP:PORT (port 0: a free one)")
    parser.add_argument("--log", default="memory://", help="the log URL (file://, memory://, iggy://)")
    args = parser.parse_args()
    try:
        asyncio.run(main(args.listen, args.log))
    except KeyboardInterrupt:
        print("stopped", flush=True)
