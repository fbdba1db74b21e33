#!/usr/bin/env python3
"""`agentlog serve --demo` under load, one backend beside another in one run: over Apache Iggy
(`iggy://`, its own `iggy-server` on loopback), the embedded log (`file://`) and `memory://`;
`iggy-split` is the deployment a broker is for: `serve` with no worker and an `agentlog worker`
process, each with its own view, over their own `iggy-server`;
and beside the peers that keep nothing (`tests/benches/peers`, built apart from the workspace):
`a2a-rs`, the official Rust A2A SDK's server with an agent doing the demo echo's work (the A2A
rows), and `rmcp`, the official Rust MCP SDK as a stateless JSON server with the same `greet`
tool (the call row).

Rows (serve_load.lua; every answer checked, a bad one fails the run):
    send      A2A SendMessage, blocking: the demo worker's echo, answered completed
    submit    A2A SendMessage with returnImmediately (the demo worker runs it after the answer)
    get       A2A GetTask of one task finished just before the run (what a polling client reads;
              an older task, past what a handle keeps of the log's tail, costs Iggy a read)
    call      MCP tools/call of the demo `greet` tool (2026-07-28 shape)
    rest-send, rest-submit, rest-get
              the same three A2A rows over the HTTP+JSON binding (`POST /message:send`,
              `GET /tasks/{id}`); each gets a rest/jsonrpc ratio beside its JSON-RPC row

Load: wrk -t1, keep-alive, at 1 and 32 connections. Each round runs every case once, the
backends in a rotating order; figures are medians over rounds with min-max, and each ratio is
the median of the per-round ratios. CPU per request is the serve process's CPU time (and
iggy-server's, for the iggy columns, and the worker process's, for iggy-split) over the
requests of the run, from /proc, counting what a server still spends once the load stops until
it is idle (work a case left behind: a queue fallen behind, a backlog), so deferring work does
not look cheap; the report names any case that left more than 2 % of its CPU behind. The load
generator shares the machine's cores with the servers.

Needs wrk (`apt-get install wrk`) and, for the iggy column, an `iggy-server` on PATH or in
AGENTLOG_IGGY_SERVER (else the column says SKIPPED); cargo unless AGENTLOG_BIN names a release
binary. From the repository root:

    python3 tests/benches/serve_load.py [--rounds 5] [--seconds 5] [--backends iggy,file,memory]
        [--backends file,file-fsync]   (file:// with ?fsync=always beside the default)
        [--iggy-shards 1]   (--backends file,memory,a2a-rs,rmcp: the embedded log beside the peers;
                             --backends file-no-otel,file,file-otel,file-otel-default: tracing
                             compiled out, compiled in and off, exported)
        [--shapes send,submit,get,call] [--connections 1,32]
"""

from __future__ import annotations

import argparse
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
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LUA = HERE / "serve_load.lua"


def die(message: str) -> None:
    sys.exit(f"serve_load: FAILED: {message}")


def agentlog_binary(*features: str) -> str:
    """The release binary, built with `features` (e.g. --no-default-features) when given."""
    given = os.environ.get("AGENTLOG_BIN_NO_OTEL" if features else "AGENTLOG_BIN")
    if given:
        return given
    print("cargo build --release -p agentlog-server --bin agentlog --locked " + " ".join(features), file=sys.stderr)
    built = subprocess.run(
        [str(ROOT / "scripts" / "agentlog-bin.sh"), "build", "--release", "-p", "agentlog-server", "--bin", "agentlog",
         "--locked", *features],
        stdout=subprocess.PIPE, text=True,
    )
    if built.returncode != 0:
        die("cargo build --release did not produce the agentlog binary")
    return built.stdout.strip()


def agentlog_without_otel(work: Path) -> str:
    """A release binary with tracing compiled out (no feature `otel`), copied aside: the next
    build of the default one writes the same path."""
    copy = work / "agentlog-no-otel"
    shutil.copy2(agentlog_binary("--no-default-features"), copy)
    return str(copy)


def iggy_binary() -> str | None:
    given = os.environ.get("AGENTLOG_IGGY_SERVER")
    if given:
        return given if Path(given).is_file() else None
    return shutil.which("iggy-server")


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_iggy(binary: str, work: Path, shards: str = "1") -> tuple[subprocess.Popen[bytes], str]:
    """An iggy-server in `work` on free loopback ports, as the tests start one, with `shards`
    shard threads: one by default, as suits a server sharing two cores with the bridge and
    the load generator (each shard is a thread, and a request that lands on another
    partition's shard is handed across threads)."""
    tcp = free_port()
    env = dict(os.environ) | {
        "IGGY_SYSTEM_SHARDING_CPU_ALLOCATION": shards,
        "IGGY_SYSTEM_PATH": str(work / "iggy-data"),
        "IGGY_TCP_ADDRESS": f"127.0.0.1:{tcp}",
        "IGGY_HTTP_ADDRESS": f"127.0.0.1:{free_port()}",
        "IGGY_QUIC_ADDRESS": f"127.0.0.1:{free_port(socket.SOCK_DGRAM)}",
        "IGGY_WEBSOCKET_ADDRESS": f"127.0.0.1:{free_port()}",
        "IGGY_SYSTEM_SHARDING_PIN_CORES": "false",
        "IGGY_SYSTEM_MEMORY_POOL_SIZE": "512 MiB",
    }
    with (work / "iggy.out").open("wb") as sink:
        proc = subprocess.Popen([binary, "--with-default-root-credentials"], cwd=work, env=env,
                                stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", tcp), timeout=1).close()
            return proc, f"iggy://iggy:iggy@127.0.0.1:{tcp}"
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    die(f"iggy-server did not start: {(work / 'iggy.out').read_text(errors='replace')[-2000:]}")
    raise AssertionError


@dataclass
class Server:
    name: str
    url: str
    proc: subprocess.Popen[bytes]
    helper: subprocess.Popen[bytes] | None = None
    # Other processes of the deployment, counted in its CPU and stopped with it (iggy-split's
    # worker).
    others: list[subprocess.Popen[bytes]] = field(default_factory=list)
    # The rows it answers (None: every row; a peer answers its protocol's only).
    serves: set[str] | None = None
    task: str = ""
    # (shape, connections) -> [(rate, p50 ms, CPU µs per request, p99 ms)] by round
    runs: dict[tuple[str, int], list[tuple[float, float, float, float]]] = field(default_factory=dict)
    # (shape, connections) -> [the helper's (iggy-server's) share of that CPU] by round
    helper_share: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    # (shape, connections) -> [the share of that CPU spent after the load stopped] by round
    left_behind: dict[tuple[str, int], list[float]] = field(default_factory=dict)


def start_serve(binary: str, name: str, log: str, work: Path, helper: subprocess.Popen[bytes] | None = None,
                env: dict[str, str] | None = None, demo: bool = True) -> Server:
    out = work / f"{name}.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen([binary, "serve", *(["--demo"] if demo else []), "--listen", "127.0.0.1:0",
                                 "--log", log], stdout=sink, stderr=subprocess.STDOUT, env=env)
    url = printed(proc, out, r"http://127\.0\.0\.1:\d+/", f"serve over {name}")
    return Server(name, url, proc, helper)


def printed(proc: subprocess.Popen[bytes], out: Path, pattern: str, what: str) -> str:
    """The first match of `pattern` in what `proc` writes to `out`, waited for (a minute at most;
    an exit or no match fails the run)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(pattern, out.read_text(errors="replace"))
        if found:
            return found.group(0)
        if proc.poll() is not None:
            die(f"{what} exited: {out.read_text(errors='replace')}")
        time.sleep(0.05)
    die(f"{what} printed nothing matching {pattern!r}")
    raise AssertionError


class OtlpSink:
    """An OTLP/HTTP endpoint on loopback that takes every export and keeps only its size: what
    the `file-otel` backends export their spans to."""

    def __init__(self) -> None:
        import http.server
        import threading
        self.exports = 0
        self.bytes = 0
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(size)
                sink.exports += 1
                sink.bytes += size
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def env(self, service: str, sampler: str | None) -> dict[str, str]:
        """The environment of a serve exporting to this sink (`sampler` None: the default)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(OTEL_EXPORTER_OTLP_ENDPOINT=self.url, OTEL_SERVICE_NAME=service)
        if sampler:
            env["OTEL_TRACES_SAMPLER"] = sampler
        return env


def peer_binaries() -> Path:
    """Build the peers (tests/benches/peers, apart from the workspace) and return their bin dir."""
    manifest = HERE / "peers" / "Cargo.toml"
    print("cargo build --release --manifest-path tests/benches/peers/Cargo.toml --locked", file=sys.stderr)
    built = subprocess.run(["cargo", "build", "--release", "--locked", "--manifest-path", str(manifest),
                            "--message-format", "short"], stdout=subprocess.DEVNULL)
    if built.returncode != 0:
        die("the peers did not build")
    target = os.environ.get("CARGO_TARGET_DIR")
    return (Path(target) if target else HERE / "peers" / "target") / "release"


def start_worker(binary: str, server: Server, log: str, work: Path) -> None:
    """An `agentlog worker` process (the demo handler) for `server`'s agent over `log`, counted
    and stopped with it."""
    out = work / f"{server.name}-worker.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen([binary, "worker", "--log", log], stdout=sink, stderr=subprocess.STDOUT)
    server.others.append(proc)
    printed(proc, out, "agentlog worker for agent", f"the worker of {server.name}")


def start_peer(binary: Path, name: str, work: Path, serves: set[str]) -> Server:
    out = work / f"{name}.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen([str(binary)], stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"http://127\.0\.0\.1:\d+/", out.read_text(errors="replace"))
        if found:
            return Server(name, found.group(0), proc, serves=serves)
        if proc.poll() is not None:
            die(f"{name} exited: {out.read_text(errors='replace')}")
        time.sleep(0.05)
    die(f"{name} printed no URL")
    raise AssertionError


def make_task(server: Server) -> None:
    """One finished task, for the `get` row."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": f"bench-{uuid.uuid4()}", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}})
    request = urllib.request.Request(server.url, body.encode(),
                                     {"Content-Type": "application/json", "A2A-Version": "1.0"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        answer = json.loads(reply.read())
    task = answer.get("result", {}).get("task", {})
    if task.get("status", {}).get("state") != "TASK_STATE_COMPLETED":
        die(f"{server.name} did not complete a task: {answer}")
    server.task = task["id"]


def tree_cpu_seconds(pids: list[int]) -> float:
    """CPU time of `pids` and their descendants."""
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
        while walk not in (0, 1) and walk not in pids:
            walk = parents.get(walk, 0)
        if walk in pids:
            total += ticks[candidate]
    return total / os.sysconf("SC_CLK_TCK")


def cpu_steal_ticks() -> tuple[int, int] | None:
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if fields[0] != "cpu" or len(fields) < 9:
        return None
    ticks = [int(f) for f in fields[1:9]]
    return ticks[7], sum(ticks)


def latency_ms(out: str, percentile: str) -> float:
    """A percentile of wrk's latency distribution (`--latency`), in milliseconds."""
    found = re.search(rf"{percentile}%\s+([\d.]+)(us|ms|s)\b", out)
    if found is None:
        die(f"no p{percentile} in wrk's output:\n{out}")
    assert found is not None
    return float(found.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[found.group(2)]


def settle(pids: list[int]) -> float:
    """CPU seconds `pids` spend from now until idle: a tenth of a second under a fifth of a core
    (an idle iggy-server polls a little), three seconds at most."""
    spent = 0.0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        before = tree_cpu_seconds(pids)
        time.sleep(0.1)
        step = tree_cpu_seconds(pids) - before
        spent += step
        if step < 0.02:
            break
    return spent


def wrk(server: Server, shape: str, connections: int, seconds: int) -> tuple[float, float, float, float]:
    """Requests per second, p50 latency (ms), server CPU µs per request and p99 latency (ms) of
    one wrk run."""
    if shape in ("get", "rest-get"):
        make_task(server)
    pids = [server.proc.pid] + ([server.helper.pid] if server.helper else []) + [p.pid for p in server.others]
    cpu_before = tree_cpu_seconds(pids)
    helper_before = tree_cpu_seconds([server.helper.pid]) if server.helper else 0.0
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(LUA), server.url,
         "--", uuid.uuid4().hex[:12], shape, server.task],
        capture_output=True, text=True, check=True,
    ).stdout
    after = settle(pids)
    cpu = tree_cpu_seconds(pids) - cpu_before
    server.left_behind.setdefault((shape, connections), []).append(after / cpu if cpu else 0.0)
    if server.helper:
        helper = tree_cpu_seconds([server.helper.pid]) - helper_before
        server.helper_share.setdefault((shape, connections), []).append(helper / cpu if cpu else 0.0)
    bad = re.search(r"bad answers: (\d+)", out)
    if bad is None or bad.group(1) != "0" or "Non-2xx" in out or "Socket errors" in out:
        die(f"errors under load at {server.name}, {shape}, {connections} connections:\n{out}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return rate, latency_ms(out, "50"), cpu / max(total, 1) * 1e6, latency_ms(out, "99")


def ratio(top: Server, bottom: Server, key: tuple[str, int], field: int = 0) -> str:
    """The median over rounds of `top`'s figure over `bottom`'s (0: requests/s, 2: CPU µs per
    request, 3: p99), with the rounds' min–max."""
    rounds = [a[field] / b[field] for a, b in zip(top.runs[key], bottom.runs[key])]
    return f"{statistics.median(rounds):.2f} ({min(rounds):.2f}–{max(rounds):.2f})"


def ratio_of(server: Server, top: tuple[str, int], bottom: tuple[str, int]) -> str:
    rounds = [a[0] / b[0] for a, b in zip(server.runs[top], server.runs[bottom])]
    return f"{statistics.median(rounds):.2f} ({min(rounds):.2f}–{max(rounds):.2f})"


def scaling(server: Server, shape: str, low: int, high: int) -> str:
    rounds = [a[0] / b[0] for a, b in zip(server.runs[(shape, high)], server.runs[(shape, low)])]
    return f"{statistics.median(rounds):.2f}"


def report(servers: list[Server], shapes: list[str], connections: list[int], args: argparse.Namespace,
           steal: float | None) -> None:
    print(f"\nserve --demo, wrk -t1, {args.seconds} s per case, {args.rounds} rounds: requests/s median "
          "(min–max), p50 and p99 ms, server CPU µs per request (medians)\n")
    print("| row | conn | " + " | ".join(s.name for s in servers) + " |")
    print("|---|---|" + "---|" * len(servers))
    for shape in shapes:
        for c in connections:
            cells = []
            for s in servers:
                runs = s.runs.get((shape, c))
                if not runs:
                    cells.append("—")
                    continue
                rates = [run[0] for run in runs]
                cells.append(f"{statistics.median(rates):,.0f} ({min(rates):,.0f}–{max(rates):,.0f}), "
                             f"{statistics.median(run[1] for run in runs):.2f} ms, "
                             f"p99 {statistics.median(run[3] for run in runs):.2f} ms, "
                             f"{statistics.median(run[2] for run in runs):,.0f} µs")
            print(f"| {shape} | {c} | " + " | ".join(cells) + " |")
    by_name = {s.name: s for s in servers}
    print()
    for shape in shapes:
        for c in connections:
            key = (shape, c)
            parts = []
            twin = shape.removeprefix("rest-")
            if shape != twin and twin in shapes:
                parts.extend(f"{s.name} rest/jsonrpc {ratio_of(s, key, (twin, c))}" for s in servers)
            if "iggy" in by_name and "file" in by_name:
                parts.append(f"iggy/file {ratio(by_name['iggy'], by_name['file'], key)}")
            if "iggy-split" in by_name and "iggy" in by_name and key in by_name["iggy-split"].runs:
                parts.append(f"iggy-split/iggy {ratio(by_name['iggy-split'], by_name['iggy'], key)}")
            if "file" in by_name and "memory" in by_name:
                parts.append(f"file/memory {ratio(by_name['file'], by_name['memory'], key)}")
            if "file-fsync" in by_name and "file" in by_name:
                parts.append(f"file-fsync/file {ratio(by_name['file-fsync'], by_name['file'], key)}")
            parts.extend(f"{traced}/file {ratio(by_name[traced], by_name['file'], key)}"
                         for traced in ("file-otel", "file-otel-default")
                         if traced in by_name and "file" in by_name)
            # Tracing compiled out as the base: requests/s, then CPU per request.
            parts.extend(f"{traced}/file-no-otel {ratio(by_name[traced], by_name['file-no-otel'], key)}, "
                         f"CPU {ratio(by_name[traced], by_name['file-no-otel'], key, 2)}"
                         for traced in ("file", "file-otel", "file-otel-default")
                         if traced in by_name and "file-no-otel" in by_name)
            for peer in ("a2a-rs", "rmcp"):
                if peer in by_name and key in by_name[peer].runs:
                    parts.extend(f"{mine}/{peer} {ratio(by_name[mine], by_name[peer], key)}"
                                 for mine in ("file", "memory") if mine in by_name)
                    if c == 1 and "file" in by_name:
                        parts.append(f"p99 file/{peer} {ratio(by_name['file'], by_name[peer], key, 3)}")
            print(f"- {shape} at {c} conn: " + "; ".join(parts))
        if len(connections) > 1:
            low, high = min(connections), max(connections)
            print(f"- {shape}, {high} over {low} conn: " +
                  "; ".join(f"{s.name} {scaling(s, shape, low, high)}" for s in servers
                            if (shape, high) in s.runs))
    for s in servers:
        if s.helper_share:
            shares = ", ".join(f"{shape} {c}: {statistics.median(v) * 100:.0f}%"
                               for (shape, c), v in s.helper_share.items())
            print(f"- {s.name}: iggy-server's share of the CPU per request: {shares}")
    for s in servers:
        behind = ", ".join(f"{shape} {c}: {max(v) * 100:.0f}%" for (shape, c), v in s.left_behind.items()
                           if max(v) > 0.02)
        if behind:
            print(f"- {s.name}: CPU spent after the load stopped (most of a round): {behind}")
    if steal is not None:
        print(f"- CPU steal during the rounds: {steal * 100:.1f}% of the machine's CPU time (/proc/stat)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", default="1,32")
    parser.add_argument("--backends", default="iggy,file,memory",
                        help="any of iggy, file, memory (agentlog serve --demo over each), iggy-split "
                             "(serve with no worker and an agentlog worker process over one iggy-server: "
                             "the A2A rows), file-fsync "
                             "(file:// with ?fsync=always), file-no-otel "
                             "(file:// built without feature otel, AGENTLOG_BIN_NO_OTEL or built), file-otel and "
                             "file-otel-default (file:// exporting its spans over OTLP to a sink here, "
                             "sampler always_on or the default), a2a-rs "
                             "(the official Rust A2A SDK's server: the A2A rows) and rmcp (the "
                             "official Rust MCP SDK: the call row)")
    parser.add_argument("--shapes", default="send,submit,get,call")
    parser.add_argument("--iggy-shards", default="1",
                        help="iggy-server's shard threads (its cpu_allocation: a count, or all)")
    args = parser.parse_args()
    connections = [int(c) for c in args.connections.split(",")]
    shapes = args.shapes.split(",")
    backends = args.backends.split(",")
    if shutil.which("wrk") is None:
        die("wrk not found on PATH (apt-get install wrk)")
    # Before the default build, which the run uses: both end at the same path.
    bin_dir = tempfile.TemporaryDirectory(prefix="serve-load-bin-")
    no_otel = agentlog_without_otel(Path(bin_dir.name)) if "file-no-otel" in backends else None
    binary = agentlog_binary()
    iggy = iggy_binary()
    for needs_iggy in ("iggy", "iggy-split"):
        if needs_iggy in backends and iggy is None:
            print(f"SKIPPED: the {needs_iggy} column needs an iggy-server (PATH or AGENTLOG_IGGY_SERVER)")
            backends.remove(needs_iggy)
    peers = peer_binaries() if {"a2a-rs", "rmcp"} & set(backends) else None
    servers: list[Server] = []
    sink: OtlpSink | None = None
    with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
        work = Path(tmp)
        try:
            for backend in backends:
                if backend == "iggy":
                    assert iggy is not None
                    proc, url = start_iggy(iggy, work, args.iggy_shards)
                    servers.append(start_serve(binary, "iggy", url, work, helper=proc))
                elif backend == "iggy-split":
                    # Its own iggy-server (a directory apart from the iggy column's), a serve
                    # with no worker and an `agentlog worker` process: the A2A rows only.
                    assert iggy is not None
                    (work / backend).mkdir()
                    proc, url = start_iggy(iggy, work / backend, args.iggy_shards)
                    server = start_serve(binary, backend, url, work, helper=proc, demo=False)
                    server.serves = {"send", "submit", "get", "rest-send", "rest-submit", "rest-get"}
                    servers.append(server)
                    start_worker(binary, server, url, work)
                elif backend == "file":
                    servers.append(start_serve(binary, "file", f"file://{work / 'file-log'}", work))
                elif backend == "memory":
                    servers.append(start_serve(binary, "memory", "memory://", work))
                elif backend == "file-fsync":
                    log = f"file://{work / 'fsync-log'}?fsync=always"
                    servers.append(start_serve(binary, backend, log, work))
                elif backend == "file-no-otel":
                    assert no_otel is not None
                    servers.append(start_serve(no_otel, backend, f"file://{work / 'no-otel-log'}", work))
                elif backend in ("file-otel", "file-otel-default"):
                    # file://, its spans exported over OTLP to a sink here: always_on (every
                    # request), or the default sampler (parentbased_always_on).
                    sink = sink or OtlpSink()
                    sampler = "always_on" if backend == "file-otel" else None
                    servers.append(start_serve(binary, backend, f"file://{work / (backend + '-log')}", work,
                                               env=sink.env(backend, sampler)))
                elif backend == "a2a-rs" and peers:
                    servers.append(start_peer(peers / "a2a-echo", "a2a-rs", work, {"send", "submit", "get"}))
                elif backend == "rmcp" and peers:
                    servers.append(start_peer(peers / "rmcp-greet", "rmcp", work, {"call"}))
                else:
                    die(f"unknown backend {backend!r}")
            def serves(server: Server, shape: str) -> bool:
                return server.serves is None or shape in server.serves

            for server in servers:
                for shape in shapes:
                    if serves(server, shape):
                        wrk(server, shape, max(connections), 1)  # warm-up, not counted
            steal_from = cpu_steal_ticks()
            for round_no in range(args.rounds):
                shift = round_no % len(servers)
                order = servers[shift:] + servers[:shift]
                for shape in shapes:
                    for c in connections:
                        for server in order:
                            if serves(server, shape):
                                server.runs.setdefault((shape, c), []).append(
                                    wrk(server, shape, c, args.seconds))
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
                for other in server.others:
                    other.terminate()
                    other.wait(timeout=20)
                if server.helper:
                    server.helper.terminate()
                    server.helper.wait(timeout=20)
    steal = None
    if steal_from and steal_to and steal_to[1] > steal_from[1]:
        steal = (steal_to[0] - steal_from[0]) / (steal_to[1] - steal_from[1])
    report(servers, shapes, connections, args, steal)
    if sink is not None:
        print(f"- OTLP sink: {sink.exports:,} exports, {sink.bytes / 1e6:,.1f} MB of spans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
