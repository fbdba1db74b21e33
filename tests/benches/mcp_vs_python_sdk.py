#!/usr/bin/env python3
"""MCP `tools/call` calls per second: `agentlog serve --demo` beside the official MCP Python SDK's
own server with the same trivial tool, side by side in one run under one load generator (issue
16, item 7: target at least 10x the SDK's calls per second at 32 connections).

    agentlog          `agentlog serve --demo --log memory://` (release build): the demo `greet`
                      tool, each call a command record on the log answered by the demo tools'
                      worker in the same process
    python-sdk        mcp 2.3.0 (the version tests/interop/mcp/python pins) low-level `Server`
                      with the same `greet` tool (mcp_python/server.py): Streamable HTTP,
                      stateless, JSON responses, under uvicorn with its default single worker
    python-sdk-wN     the same app under uvicorn with N workers (N = cores; an extra row, not
                      the comparison the target is about)
    agentlog-t1       agentlog as above with `--threads 1`: one runtime thread, as the SDK's
                      single worker has one event loop (an extra row, like-for-like in threads)
    floor             not a tool call: `agentlog serve --log memory://` with no worker, each
                      request an A2A `SendMessage` with `returnImmediately` (the Lua's floor shape):
                      one command on the log and the answer, the least any durable call through
                      agentlog costs (a tool call is that plus a worker's claim and result). An
                      extra row: its ratio to the SDK bounds what the tools/call row can reach

Load: wrk -t1, keep-alive, at 1 and 32 connections (mcp_tools_call.lua: every request a complete
`tools/call` without a session, 2026-07-28 shape by default; every answer checked, a bad one
fails the run). Each round runs every case once, servers in a rotating order; figures are
medians over rounds with min-max. CPU per call is the server's process tree's CPU time (from
/proc) over the calls of the run. The load generator shares the machine's cores with the
server under test.

Needs wrk (`apt-get install wrk`), Python >= 3.10, PyPI on the first run (the script creates
mcp_python/.venv itself, pinned by mcp_python/requirements.txt and the interop constraints), and
cargo unless AGENTLOG_BIN names a release binary. From the repository root:

    python3 tests/benches/mcp_vs_python_sdk.py [--rounds 5] [--seconds 5] [--era modern|legacy]
        [--workers N] [--agentlog-threads N] [--no-floor]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PY_DIR = HERE / "mcp_python"
VENV = PY_DIR / ".venv"
REQUIREMENTS = PY_DIR / "requirements.txt"
# The interop tests' pins: the bench's SDK is the version those tests run.
CONSTRAINTS = ROOT / "tests" / "interop" / "mcp" / "python" / "constraints.txt"
LUA = HERE / "mcp_tools_call.lua"
MODERN = "2026-07-28"
GREET_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}
TARGET = 10.0


def die(message: str) -> None:
    sys.exit(f"mcp_vs_python_sdk: FAILED: {message}")


def ensure_venv() -> Path:
    """The bench's venv, created or refreshed when the pins or the Python change."""
    python = VENV / "bin" / "python"
    want = hashlib.sha256(REQUIREMENTS.read_bytes() + CONSTRAINTS.read_bytes()).hexdigest() + " " + sys.version
    stamp = VENV / ".bench-stamp"
    if stamp.exists() and stamp.read_text() == want and python.exists():
        return python
    print(f"creating {VENV}", file=sys.stderr)
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    install = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q",
               "-r", str(REQUIREMENTS), "-c", str(CONSTRAINTS)]
    if subprocess.run(install).returncode != 0:
        shutil.rmtree(VENV, ignore_errors=True)
        die(f"pip could not install {REQUIREMENTS}: is PyPI reachable?")
    stamp.write_text(want)
    return python


def agentlog_binary() -> str:
    given = os.environ.get("AGENTLOG_BIN")
    if given:
        return given
    print("cargo build --release -p agentlog-server --bin agentlog --locked", file=sys.stderr)
    built = subprocess.run(
        [str(ROOT / "scripts" / "agentlog-bin.sh"), "build", "--release", "-p", "agentlog-server", "--bin", "agentlog", "--locked"],
        stdout=subprocess.PIPE, text=True,
    )
    if built.returncode != 0:
        die("cargo build --release did not produce the agentlog binary")
    return built.stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, method: str, params: dict[str, Any], era: str, name: str | None = None) -> tuple[int, Any]:
    """One JSON-RPC request of the era's shape, as the Lua script sends it."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if era == "modern":
        params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                      "io.modelcontextprotocol/clientCapabilities": {}}}
        headers |= {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


@dataclass
class Server:
    name: str
    url: str
    proc: subprocess.Popen[bytes]
    # The Lua script's request shape when not the run's era: "floor" for the floor row.
    shape: str | None = None
    runs: dict[int, list[tuple[float, float, float]]] = field(default_factory=dict)

    def check(self, era: str) -> None:
        """A correct answer to the bench's call, and the same `greet` definition as agentlog's."""
        if self.shape == "floor":
            return  # the floor answers A2A; the script checks every answer
        status, answer = post(self.url, "tools/call", {"name": "greet", "arguments": {"name": "check"}}, era, "greet")
        result = answer.get("result") if isinstance(answer, dict) else None
        if status != 200 or not result or result.get("isError") or result.get("content") != [
                {"type": "text", "text": "Hello, check!"}]:
            die(f"{self.name} answered tools/call with {status} {answer}")
        status, listed = post(self.url, "tools/list", {}, era)
        tools = listed.get("result", {}).get("tools", []) if isinstance(listed, dict) else []
        greet = next((t for t in tools if t.get("name") == "greet"), None)
        if status != 200 or greet is None or greet.get("inputSchema") != GREET_SCHEMA \
                or greet.get("description") != "Greets by name":
            die(f"{self.name} lists greet as {greet} ({status})")


def wait_for_url(out: Path, proc: subprocess.Popen[bytes], pattern: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = re.search(pattern, out.read_text(errors="replace"))
        if found:
            return found.group(0)
        if proc.poll() is not None:
            die(f"{proc.args} exited: {out.read_text(errors='replace')}")
        time.sleep(0.05)
    die(f"{proc.args} printed no URL in {seconds} s")
    raise AssertionError


def start_agentlog(binary: str, work: Path, threads: int | None = None) -> Server:
    name = "agentlog" if threads is None else f"agentlog-t{threads}"
    out = work / f"{name}.out"
    extra = [] if threads is None else ["--threads", str(threads)]
    with out.open("wb") as sink:
        proc = subprocess.Popen([binary, "serve", "--demo", "--listen", "127.0.0.1:0", "--log", "memory://",
                                 *extra], stdout=sink, stderr=subprocess.STDOUT)
    base = wait_for_url(out, proc, r"http://127\.0\.0\.1:\d+/", 60)
    return Server(name, base + "mcp", proc)


def start_floor(binary: str, work: Path) -> Server:
    """`agentlog serve` with no worker (no `--demo`), taking A2A sends on its root."""
    out = work / "floor.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--log", "memory://"],
                                stdout=sink, stderr=subprocess.STDOUT)
    base = wait_for_url(out, proc, r"http://127\.0\.0\.1:\d+/", 60)
    return Server("floor", base, proc, shape="floor")


def start_python(python: Path, workers: int, work: Path, era: str) -> Server:
    name = "python-sdk" if workers == 1 else f"python-sdk-w{workers}"
    port = free_port()
    out = work / f"{name}.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [str(python), "-m", "uvicorn", "server:app", "--app-dir", str(PY_DIR), "--host", "127.0.0.1",
             "--port", str(port), "--workers", str(workers), "--log-level", "warning", "--no-access-log"],
            stdout=sink, stderr=subprocess.STDOUT,
        )
    server = Server(name, f"http://127.0.0.1:{port}/mcp", proc)
    # uvicorn says nothing at --log-level warning once it listens: poll until it answers.
    deadline = time.monotonic() + 60
    while True:
        try:
            post(server.url, "tools/list", {}, era)
            return server
        except (urllib.error.URLError, ConnectionError):
            if proc.poll() is not None or time.monotonic() > deadline:
                die(f"{name} did not start: {out.read_text(errors='replace')}")
            time.sleep(0.1)


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of `pid` and its descendants (uvicorn's workers are its children)."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])
    total = 0
    for candidate in ticks:
        walk = candidate
        while walk not in (0, 1) and walk != pid:
            walk = parents.get(walk, 0)
        if walk == pid:
            total += ticks[candidate]
    return total / os.sysconf("SC_CLK_TCK")


def cpu_steal_ticks() -> tuple[int, int] | None:
    """(steal, total) ticks of every CPU so far, from the first line of /proc/stat (user, nice,
    system, idle, iowait, irq, softirq, steal; guest time is already in user and nice)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if fields[0] != "cpu" or len(fields) < 9:
        return None
    ticks = [int(f) for f in fields[1:9]]
    return ticks[7], sum(ticks)


def wrk(server: Server, connections: int, seconds: int, era: str) -> tuple[float, float, float]:
    """Calls per second, p50 latency (ms) and server CPU µs per call of one wrk run."""
    cpu_before = tree_cpu_seconds(server.proc.pid)
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(LUA), server.url,
         "--", uuid.uuid4().hex[:12], server.shape or era],
        capture_output=True, text=True, check=True,
    ).stdout
    cpu = tree_cpu_seconds(server.proc.pid) - cpu_before
    bad = re.search(r"bad answers: (\d+)", out)
    if bad is None or bad.group(1) != "0" or "Non-2xx" in out or "Socket errors" in out:
        die(f"errors under load at {server.name} ({connections} connections):\n{out}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)\b", out)
    if p50 is None:
        die(f"no p50 in wrk's output:\n{out}")
    assert p50 is not None
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p50.group(2)]
    return rate, float(p50.group(1)) * scale, cpu / max(total, 1) * 1e6


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def report(servers: list[Server], connections: list[int], args: argparse.Namespace,
           steal: float | None) -> None:
    print(f"\nMCP tools/call (greet), {args.era} era, wrk -t1, {args.seconds} s per case, {args.rounds} rounds: "
          "calls/s median (min–max), p50 ms median, server CPU µs per call median\n")
    header = "| server |" + "".join(f" {c} conn calls/s | p50 ms | CPU µs/call |" for c in connections)
    print(header)
    print("|---|" + "---|---|---|" * len(connections))
    for server in servers:
        cells = []
        for c in connections:
            runs = server.runs[c]
            cells += [spread([r for r, _, _ in runs]), f"{statistics.median(p for _, p, _ in runs):.2f}",
                      f"{statistics.median(u for _, _, u in runs):,.0f}"]
        print(f"| {server.name} | " + " | ".join(cells) + " |")
    if any(s.shape == "floor" for s in servers):
        print("\n(floor: not a tool call, an A2A SendMessage with returnImmediately to agentlog with no "
              "worker: one command on the log and the answer; a tool call costs that and more)")
    print()
    ours = [s for s in servers if s.name.startswith("agentlog") or s.shape == "floor"]
    theirs = [s for s in servers if s.name.startswith("python-sdk")]
    for agentlog in ours:
        for other in theirs:
            for c in connections:
                ratio = statistics.median(r for r, _, _ in agentlog.runs[c]) / statistics.median(
                    r for r, _, _ in other.runs[c])
                per_round = [a[0] / b[0] for a, b in zip(agentlog.runs[c], other.runs[c])]
                verdict = ""
                if agentlog.name == "agentlog" and other.name == "python-sdk" and c == 32:
                    verdict = f"; target >= {TARGET:.0f}: {'met' if ratio >= TARGET else 'MISSED'}"
                print(f"- {agentlog.name} / {other.name} at {c} conn: {ratio:.2f}x "
                      f"(per round {min(per_round):.2f}–{max(per_round):.2f}){verdict}")
    if steal is not None:
        # A VM's vCPUs waiting for their host: rates under steal are the host's, the ratios
        # less so (every server meets it, rounds rotate the order).
        print(f"- CPU steal during the rounds: {steal * 100:.1f}% of the machine's CPU time (/proc/stat)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", default="1,32", help="comma-separated connection counts")
    parser.add_argument("--era", choices=("modern", "legacy"), default="modern",
                        help="request shape: 2026-07-28 with its headers, or a bare legacy tools/call")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="uvicorn workers of the extra python-sdk row (0 or 1: no extra row)")
    parser.add_argument("--agentlog-threads", type=int, default=1,
                        help="runtime threads of the extra agentlog row (0: no extra row)")
    parser.add_argument("--no-floor", action="store_true",
                        help="leave out the floor row (an A2A send with no worker)")
    args = parser.parse_args()
    connections = [int(c) for c in args.connections.split(",")]
    if shutil.which("wrk") is None:
        die("wrk not found on PATH (apt-get install wrk)")
    python = ensure_venv()
    binary = agentlog_binary()
    servers: list[Server] = []
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        work = Path(tmp)
        try:
            servers.append(start_agentlog(binary, work))
            servers.append(start_python(python, 1, work, args.era))
            if args.workers > 1:
                servers.append(start_python(python, args.workers, work, args.era))
            if args.agentlog_threads > 0:
                servers.append(start_agentlog(binary, work, args.agentlog_threads))
            if not args.no_floor:
                servers.append(start_floor(binary, work))
            for server in servers:
                server.check(args.era)
                wrk(server, max(connections), 1, args.era)  # warm-up, not counted
            steal_from = cpu_steal_ticks()
            for round_no in range(args.rounds):
                shift = round_no % len(servers)
                order = servers[shift:] + servers[:shift]
                for c in connections:
                    for server in order:
                        server.runs.setdefault(c, []).append(wrk(server, c, args.seconds, args.era))
                print(f"round {round_no + 1} of {args.rounds} done", file=sys.stderr)
            steal_to = cpu_steal_ticks()
        finally:
            for server in servers:
                server.proc.terminate()
            for server in servers:
                try:
                    server.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    server.proc.kill()
    # The rows are in start order (agentlog first); runs line up by round for the ratios.
    steal = None
    if steal_from and steal_to and steal_to[1] > steal_from[1]:
        steal = (steal_to[0] - steal_from[0]) / (steal_to[1] - steal_from[1])
    report(servers, connections, args, steal)
    return 0


if __name__ == "__main__":
    sys.exit(main())
