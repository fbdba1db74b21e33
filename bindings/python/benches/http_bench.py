"""The Python binding's benchmark (not a timed test): blocking SendMessage over HTTP at 1 and
32 keep-alive connections, side by side in one run under one load generator (wrk), for

    agentlog-py       agentlog.serve + a trivial Python async handler (one complete)
    agentlog-py-demo  agentlog.serve + a Python handler doing the Rust demo's work (4 reports)
    rust-demo         `agentlog serve --demo` (the Rust demo handler: 3 artifact chunks + complete)
    a2a-sdk           the official a2a-sdk 1.3 Python server with an echo executor (uvicorn)

and, in process, `await bridge.get_task(...)` calls per second against the Rust verb called in
a Rust loop on the same bridge (`Bridge._bench_get_task`).

Every server runs in its own process on memory:// (servers.py); each round runs every case
once, the servers in a rotating order; figures are medians over rounds with their range. Each
request has a fresh messageId (wrk script bindings/benches/send_message.lua, shared with the Node bench, which also checks that
every answer is a completed task).

Needs: wrk (`apt-get install wrk`), uvicorn (`pip install uvicorn==0.54.0` into the venv), the
module built in release (`maturin develop --release`) and the release binary
(`cargo build --release -p agentlog --bin agentlog`). Run from bindings/python:

    .venv/bin/python benches/http_bench.py [--rounds 3] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import agentlog

HERE = Path(__file__).resolve().parent
CONNECTIONS = (1, 32)


def agentlog_binary() -> str:
    given = os.environ.get("AGENTLOG_BIN")
    if given:
        return given
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=HERE, capture_output=True, text=True, check=True,
    )
    return str(Path(json.loads(meta.stdout)["target_directory"]) / "release" / "agentlog")


def start(command: list[str], pattern: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(command, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(pattern, line)
        if found:
            return proc, found.group(0)
    raise RuntimeError(f"{command} printed no URL")


def check(url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json", "A2A-Version": "1.0"})
    # uvicorn prints nothing once it listens: servers.py prints the URL first, so retry.
    for attempt in range(100):
        try:
            with urllib.request.urlopen(request, timeout=20) as reply:
                answer = json.loads(reply.read())
            break
        except urllib.error.URLError:
            if attempt == 99:
                raise
            time.sleep(0.1)
    state = answer["result"]["task"]["status"]["state"]
    assert state == "TASK_STATE_COMPLETED", answer


def wrk(url: str, connections: int, seconds: int) -> tuple[float, float]:
    """Requests per second and p50 latency (ms) of one wrk run."""
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(HERE.parent.parent / "benches" / "send_message.lua"),
         url, "--", uuid.uuid4().hex],
        capture_output=True, text=True, check=True,
    ).stdout
    if "Non-2xx" in out or "Socket errors" in out or "not completed: 0" not in out:
        raise RuntimeError(f"errors under load at {url}:\n{out}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    assert p50 is not None, out
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p50.group(2)]
    return rate, float(p50.group(1)) * scale


async def in_process(calls: int) -> tuple[float, float]:
    """get_task calls per second from Python, and of the Rust verb on the same bridge."""
    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "get")
    task = (await bridge.send_message({"message": {"messageId": "g-1", "role": "ROLE_USER", "parts": [{"text": "x"}]},
                                        "configuration": {"returnImmediately": True}}))["task"]
    request = {"id": task["id"]}
    for _ in range(200):
        await bridge.get_task(request)
    started = time.perf_counter()
    for _ in range(calls):
        await bridge.get_task(request)
    python_rate = calls / (time.perf_counter() - started)
    rust_seconds = await bridge._bench_get_task(request, calls)
    await log.close()
    return python_rate, calls / rust_seconds


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--get-calls", type=int, default=20000)
    args = parser.parse_args()
    url_pattern = r"http://127\.0\.0\.1:\d+/"
    servers: dict[str, tuple[subprocess.Popen[str], str]] = {}
    try:
        for name in ("agentlog-py", "agentlog-py-demo", "a2a-sdk"):
            servers[name] = start([sys.executable, "servers.py", name], url_pattern)
        servers["rust-demo"] = start(
            [agentlog_binary(), "serve", "--demo", "--listen", "127.0.0.1:0", "--log", "memory://"], url_pattern
        )
        for name, (_, url) in servers.items():
            check(url)
        names = list(servers)
        results: dict[tuple[str, int], list[tuple[float, float]]] = {}
        for round_no in range(args.rounds):
            order = names[round_no % len(names):] + names[: round_no % len(names)]
            for connections in CONNECTIONS:
                for name in order:
                    results.setdefault((name, connections), []).append(wrk(servers[name][1], connections, args.seconds))
            print(f"round {round_no + 1} of {args.rounds} done", file=sys.stderr)
        gets = [asyncio.run(in_process(args.get_calls)) for _ in range(args.rounds)]
    finally:
        for proc, _ in servers.values():
            proc.terminate()
        for proc, _ in servers.values():
            proc.wait(timeout=20)

    print(f"\nblocking SendMessage over HTTP, wrk -t1, {args.seconds} s per case, {args.rounds} rounds: req/s median (range), p50 ms median\n")
    print("| server | 1 conn req/s | p50 ms | 32 conn req/s | p50 ms |")
    print("|---|---|---|---|---|")
    median_rate: dict[tuple[str, int], float] = {}
    for name in servers:
        cells = []
        for connections in CONNECTIONS:
            runs = results[(name, connections)]
            rates = [r for r, _ in runs]
            median_rate[(name, connections)] = statistics.median(rates)
            cells += [spread(rates), f"{statistics.median(l for _, l in runs):.2f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    for connections in CONNECTIONS:
        r = {n: median_rate[(n, connections)] for n in servers}
        print(f"- {connections} conn: agentlog-py / a2a-sdk = {r['agentlog-py'] / r['a2a-sdk']:.1f}x; "
              f"agentlog-py / rust-demo = {r['agentlog-py'] / r['rust-demo']:.2f}; "
              f"agentlog-py-demo / rust-demo = {r['agentlog-py-demo'] / r['rust-demo']:.2f}")
    py = [p for p, _ in gets]
    rust = [r for _, r in gets]
    print(f"\nin process, {args.get_calls} sequential GetTask calls per round: "
          f"`await bridge.get_task` {spread(py)} calls/s; the Rust verb {spread(rust)} calls/s; "
          f"ratio {statistics.median(py) / statistics.median(rust):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
