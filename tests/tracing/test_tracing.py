"""A trace from the official A2A Python client through the log to a worker in another process,
across a worker's SIGKILL and another's takeover, as OpenTelemetry exports it.

The client is a2a-sdk's, instrumented with the OpenTelemetry SDK (its `telemetry` extra makes
a CLIENT span per call; the W3C propagator puts that span in the request's `traceparent`).
`agentlog serve` and two `agentlog worker` processes share an Apache Iggy log and export
their spans over OTLP/HTTP to a receiver in this test, which decodes each request with the
OpenTelemetry protobuf definitions (opentelemetry-proto); the message's push config names a
webhook on the same receiver, whose POSTs must carry the trace on. Every wait is for a
condition, with PATIENCE as an upper bound against hangs.
"""

import asyncio
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
import uuid

import httpx
import pytest
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from opentelemetry import propagate, trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

PATIENCE = 60  # seconds: an upper bound against hangs, never a measure
CALL = ClientCallContext(timeout=20)

# The client's spans, kept in memory (the SDK's own exporter for tests).
CLIENT_SPANS = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(CLIENT_SPANS))
trace.set_tracer_provider(_provider)


def binary() -> str:
    path = os.environ.get('AGENTLOG_BIN')
    if not path:
        pytest.fail('AGENTLOG_BIN is not set: run this test through tests/tracing/run.sh')
    return path


def until(condition, what: str, patience: float = PATIENCE):
    """Poll `condition` until it gives something true; fail after `patience` seconds."""
    deadline = time.monotonic() + patience
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f'gave up waiting for {what}')
        time.sleep(0.05)


# --- the OTLP/HTTP receiver ---------------------------------------------------------------------

class Receiver:
    """An OTLP/HTTP trace receiver on a loopback port: every span of every request decoded."""

    def __init__(self):
        self.spans: list[dict] = []
        self.requests = 0
        self.notifications: list[tuple[dict, dict]] = []  # push POSTs to /webhook: headers, body
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length', '0')))
                if self.path == '/webhook':
                    with receiver.lock:
                        receiver.notifications.append(
                            ({k.lower(): v for k, v in self.headers.items()}, json.loads(body)))
                    self.send_response(200)
                    self.send_header('Content-Length', '0')
                    self.end_headers()
                    return
                ok = self.path == '/v1/traces' and self.headers.get('Content-Type') == 'application/x-protobuf'
                if ok:
                    receiver.take(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString() if ok else b''
                self.send_response(200 if ok else 415)
                self.send_header('Content-Type', 'application/x-protobuf')
                self.send_header('Content-Length', str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}'

    def take(self, request: ExportTraceServiceRequest) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append({
                        'service': resource.get('service.name'),
                        'command': resource.get('agentlog.command'),
                        'pid': resource.get('process.pid'),
                        'scope': scope_spans.scope.name,
                        'name': span.name,
                        'kind': span.kind,
                        'trace_id': span.trace_id.hex(),
                        'span_id': span.span_id.hex(),
                        'parent_id': span.parent_span_id.hex(),
                        'attributes': attributes(span.attributes),
                        'status': span.status.code,
                    })
        with self.lock:
            self.requests += 1
            self.spans.extend(spans)

    def of_trace(self, trace_id: str) -> list[dict]:
        with self.lock:
            return [s for s in self.spans if s['trace_id'] == trace_id]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def attributes(pairs) -> dict:
    out = {}
    for pair in pairs:
        value = pair.value
        which = value.WhichOneof('value')
        out[pair.key] = getattr(value, which) if which else None
    return out


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.close()


# --- processes ----------------------------------------------------------------------------------

class Process:
    """An `agentlog` subcommand in the background, once it printed its first line."""

    def __init__(self, *args: str, env: dict):
        self.proc = subprocess.Popen(
            [binary(), '--color', 'never', *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        self.first_line = self.proc.stdout.readline()
        if not self.first_line:
            raise AssertionError(f'agentlog {args[0]} did not start: {self.proc.stderr.read()}')

    def url(self) -> str:
        return self.first_line.split(' at ', 1)[1].split(' ', 1)[0]

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=PATIENCE)

    def stop(self) -> None:
        """SIGTERM and wait: a process that stops exports the spans it has left."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=PATIENCE)
            except subprocess.TimeoutExpired:
                self.kill9()


def exporting(receiver: Receiver, service: str) -> dict:
    """The environment of a process that exports its spans to `receiver` as `service`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('OTEL_')}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
        OTEL_SERVICE_NAME=service,
        OTEL_BSP_SCHEDULE_DELAY='100',
    )
    return env


def iggy_binary() -> str | None:
    given = os.environ.get('AGENTLOG_IGGY_SERVER')
    if given:
        return given if os.path.isfile(given) else None
    return shutil.which('iggy-server')


def free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@pytest.fixture(scope='module')
def iggy():
    """A fresh iggy-server on free loopback ports (the settings of tests/src/iggy_server.rs)."""
    found = iggy_binary()
    if not found:
        pytest.skip('SKIPPED: the tracing test needs an iggy-server binary (AGENTLOG_IGGY_SERVER or PATH)')
    work = tempfile.TemporaryDirectory(prefix='agentlog-tracing-iggy-')
    tcp = free_port()
    env = dict(os.environ,
               IGGY_SYSTEM_PATH=os.path.join(work.name, 'data'),
               IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT='3s',
               IGGY_SYSTEM_SHARDING_PIN_CORES='false',
               IGGY_SYSTEM_MEMORY_POOL_SIZE='512 MiB',
               IGGY_TCP_ADDRESS=f'127.0.0.1:{tcp}',
               IGGY_HTTP_ADDRESS=f'127.0.0.1:{free_port()}',
               IGGY_QUIC_ADDRESS=f'127.0.0.1:{free_port(socket.SOCK_DGRAM)}',
               IGGY_WEBSOCKET_ADDRESS=f'127.0.0.1:{free_port()}')
    with open(os.path.join(work.name, 'server.log'), 'w') as log:
        proc = subprocess.Popen([found, '--with-default-root-credentials'], cwd=work.name, env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    for _ in range(PATIENCE * 20):  # the port opens, or the server exits
        try:
            socket.create_connection(('127.0.0.1', tcp), timeout=1).close()
            break
        except OSError:
            try:
                proc.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                pass
    if proc.poll() is not None:
        raise AssertionError('iggy-server did not start: ' + open(os.path.join(work.name, 'server.log')).read()[-2000:])
    yield f'iggy://iggy:iggy@127.0.0.1:{tcp}'
    proc.kill()
    proc.wait()
    work.cleanup()


# --- the client ---------------------------------------------------------------------------------

async def inject_trace_context(request: httpx.Request) -> None:
    """The W3C propagator's headers for the span current when the request goes out (the SDK's
    CLIENT span of the call)."""
    propagate.inject(request.headers)


async def send_and_follow(base: str, text: str, webhook: str, token: str, on_working) -> tuple[str, int]:
    """Send `text` with returnImmediately and a push config (`webhook`, `token`) from an
    instrumented a2a-sdk client, call `on_working()` once the task is working, and wait for it
    to finish: its id and state."""
    async with httpx.AsyncClient(timeout=20, event_hooks={'request': [inject_trace_context]}) as http:
        config = ClientConfig(streaming=False, polling=True, httpx_client=http,
                              supported_protocol_bindings=['JSONRPC'])
        async with await create_client(base, config) as client:
            message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
            push = SendMessageConfiguration(
                task_push_notification_config=TaskPushNotificationConfig(url=webhook, token=token))
            request = SendMessageRequest(message=message, configuration=push)
            events = [ev async for ev in client.send_message(request, context=CALL)]
            task_id = events[0].task.id
            deadline = time.monotonic() + PATIENCE
            working_seen = False
            while True:
                task = await client.get_task(GetTaskRequest(id=task_id), context=CALL)
                state = task.status.state
                if state == TaskState.TASK_STATE_WORKING and not working_seen:
                    working_seen = True
                    on_working()
                if working_seen and state in (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
                                              TaskState.TASK_STATE_CANCELED):
                    return task_id, state
                assert time.monotonic() < deadline, f'task {task_id} still {TaskState.Name(state)}'
                await asyncio.sleep(0.05)


def console_records(base: str, agent: str, task_id: str) -> list[dict]:
    """The task's records as `serve`'s console shows them (its SSE, read until caught up)."""
    url = f'{base.rstrip("/")}/console/api/tasks/{agent}/{task_id}/records'
    records, event, data = [], None, []
    with urllib.request.urlopen(url, timeout=PATIENCE) as stream:
        for raw in stream:
            line = raw.decode().rstrip('\r\n')
            if line.startswith('event:'):
                event = line[6:].strip()
            elif line.startswith('data:'):
                data.append(line[5:].strip())
            elif not line:
                if event == 'caught-up':
                    return records
                if event == 'error':
                    raise AssertionError(f'the console could not read {task_id}: {data}')
                if data:
                    records.append(json.loads('\n'.join(data)))
                event, data = None, []
    raise AssertionError(f'the console stream of {task_id} ended before catching up')


# --- the test -----------------------------------------------------------------------------------

def test_the_workers_spans_are_in_the_clients_trace_across_a_kill_and_a_takeover(receiver, iggy):
    agent = f'tracing-{uuid.uuid4().hex[:8]}'
    server = Process('serve', '--agent', agent, '--listen', '127.0.0.1:0', '--log', iggy,
                     '--push-allow-private', env=exporting(receiver, 'tracing-bridge'))
    first = Process('worker', '--agent', agent, '--log', iggy, '--lease', '1s',
                    env=exporting(receiver, 'tracing-worker'))
    second = None
    text = 'sleep 3'
    token = f'push-token-{uuid.uuid4().hex}'
    try:
        def kill_first_start_second():
            # The first worker dies mid-turn holding the claim; the second takes the turn over
            # once the lease has run out.
            nonlocal second
            first.kill9()
            second = Process('worker', '--agent', agent, '--log', iggy, '--lease', '1s',
                             env=exporting(receiver, 'tracing-worker'))

        task_id, state = asyncio.run(
            send_and_follow(server.url(), text, f'{receiver.url}/webhook', token, kill_first_start_second))
        # The push sender (in serve) has told the webhook of the end.
        until(lambda: any(body.get('task', {}).get('status', {}).get('state') == 'TASK_STATE_COMPLETED'
                          for _, body in list(receiver.notifications)), 'the last push notification')
        assert state == TaskState.TASK_STATE_COMPLETED
        records = console_records(server.url(), agent, task_id)
    finally:
        for process in [second, server]:
            if process:
                process.stop()
        first.stop()

    # The client's spans of the send: a2a-sdk's CLIENT span of send_message and under it the
    # one of the HTTP request it made (`_send_request`), whose context went as traceparent.
    client_spans = {format(s.get_span_context().span_id, '016x'): s for s in CLIENT_SPANS.get_finished_spans()}
    sends = [s for s in client_spans.values() if s.name.endswith('.send_message')]
    assert len(sends) == 1, [s.name for s in client_spans.values()]
    trace_id = format(sends[0].get_span_context().trace_id, '032x')
    send_id = format(sends[0].get_span_context().span_id, '016x')
    posts = [i for i, s in client_spans.items()
             if s.parent is not None and format(s.parent.span_id, '016x') == send_id]
    assert len(posts) == 1, [s.name for s in client_spans.values()]
    client_id = posts[0]

    # Every notification carries a trace context (W3C headers): that of the record it tells of,
    # through the push delivery's span, all in the client's trace (the WORKING a worker
    # process's claim makes too: its claim carries the command's context).
    with receiver.lock:
        notifications = list(receiver.notifications)
    assert all(h.get('traceparent') for h, _ in notifications), notifications
    others = [body for h, body in notifications if h['traceparent'].split('-')[1] != trace_id]
    assert not others, others
    working = [h['traceparent'].split('-')[2] for h, body in notifications
               if body.get('statusUpdate', {}).get('status', {}).get('state') == 'TASK_STATE_WORKING']
    assert working, notifications
    last = next(h['traceparent'].split('-')[2] for h, body in reversed(notifications)
                if body.get('task', {}).get('status', {}).get('state') == 'TASK_STATE_COMPLETED')

    def complete():
        spans = receiver.of_trace(trace_id)
        ids = {s['span_id'] for s in spans}
        turns = [s for s in spans if s['name'] == 'turn' and s['attributes'].get('agentlog.attempt') == 2]
        worker_appended = any(s['command'] == 'worker' and s['name'] == 'log append' for s in spans)
        delivered = last in ids and working[0] in ids
        return spans if turns and worker_appended and delivered else None

    try:
        spans = until(complete, f'the spans of trace {trace_id}')
    except AssertionError:
        with receiver.lock:
            seen = [(s['command'], s['name'], s['trace_id'][:8], s['parent_id']) for s in receiver.spans]
        raise AssertionError(f'the spans of trace {trace_id} (client span {client_id}) did not all '
                             f'arrive; {receiver.requests} exports held {seen}') from None
    by_id = {s['span_id']: s for s in spans}

    # The bridge's request span is the client span's child, in the bridge's process.
    requests = [s for s in spans if s['name'] == 'SendMessage']
    assert len(requests) == 1, spans
    request = requests[0]
    assert request['parent_id'] == client_id
    assert (request['service'], request['command']) == ('tracing-bridge', 'serve')
    assert request['kind'] == ProtoSpan.SPAN_KIND_SERVER
    assert request['attributes']['rpc.method'] == 'SendMessage'
    assert request['attributes']['a2a.task.id'] == task_id
    assert request['attributes']['agentlog.outcome'] == 'ok'
    # Its append of the command, a child of it.
    appends = [s for s in spans if s['name'] == 'log append' and s['parent_id'] == request['span_id']]
    assert appends and all(s['command'] == 'serve' for s in appends), spans

    # The worker's turn, in the second worker's process, is the request span's child (read from
    # the command on the log), and says it took the turn over.
    turns = [s for s in spans if s['name'] == 'turn']
    assert [t['attributes']['agentlog.attempt'] for t in turns] == [2], turns
    turn = turns[0]
    assert turn['parent_id'] == request['span_id']
    assert (turn['service'], turn['command']) == ('tracing-worker', 'worker')
    assert turn['kind'] == ProtoSpan.SPAN_KIND_CONSUMER
    assert turn['attributes']['a2a.task.id'] == task_id
    assert turn['attributes']['agentlog.takeover'] is True
    assert turn['attributes']['agentlog.turn_attempt'] == 2
    assert turn['attributes']['agentlog.outcome'] == 'done'
    # What the worker appended for the turn hangs under it.
    worker_appends = [s for s in spans if s['name'] == 'log append' and s['command'] == 'worker']
    assert worker_appends and all(by_id[s['parent_id']]['name'] == 'turn' for s in worker_appends), spans

    # Both workers' claims on the log (the killed one's first, the other's takeover) carry the
    # command's context, the request span's, read from the command's copy on their queue; their
    # renewals are in the same trace (under each turn's span once it is read).
    claims = [r for r in records if r['kind'] == 'claim']
    taken = [r for r in claims if r['claim'] in ('first', 'takeover')]
    assert [(r['attempt'], r['claim']) for r in taken] == [(1, 'first'), (2, 'takeover')], claims
    assert taken[0]['source'] != taken[1]['source'], taken
    assert all(r['trace'] == f"00-{trace_id}-{request['span_id']}-01" for r in taken), taken
    assert all(r['trace'].split('-')[1] == trace_id for r in claims), claims
    # The first WORKING, the first claim's, was delivered under a span whose parent is that
    # span (the later ones tell of the handlers' reports, under their turns).
    assert by_id[working[0]]['parent_id'] == request['span_id'], by_id[working[0]]

    # The push sender's delivery of the last update is a child of the turn that wrote it, in
    # serve's process, and its POST carried the delivery's own span.
    delivery = by_id[last]
    assert delivery['name'] == 'push delivery' and delivery['command'] == 'serve', delivery
    assert delivery['kind'] == ProtoSpan.SPAN_KIND_CLIENT
    assert delivery['parent_id'] == turn['span_id'], delivery
    assert delivery['attributes']['a2a.task.id'] == task_id
    assert delivery['attributes']['agentlog.outcome'] == 'done'

    # Every span of the trace has its parent in the trace (or is the client's child), but what
    # the killed worker exported before it died (its turn's span never ended), and deliveries
    # of what it wrote.
    for span in spans:
        if span['pid'] == first.proc.pid:
            assert span['name'] == 'log append' and span['parent_id'] not in by_id, span
            continue
        if span['name'] == 'push delivery' and span['parent_id'] not in by_id:
            continue
        assert span['parent_id'] == client_id or span['parent_id'] in by_id, span
    # No message content or push token in any attribute of anything exported.
    with receiver.lock:
        everything = list(receiver.spans)
    for span in everything:
        for value in span['attributes'].values():
            assert text not in str(value) and token not in str(value), span


@pytest.mark.parametrize('carrier', ['header', 'meta'])
def test_an_mcp_tool_call_and_its_turn_are_in_the_callers_trace(receiver, carrier):
    """An MCP tools/call carrying a traceparent, as an HTTP header or in `params._meta` (MCP's
    own carrier, SEP-414): the request's span is its child, and the tool agent's turn (the demo
    worker, in the same process) is the request span's child."""
    server = Process('serve', '--demo', '--listen', '127.0.0.1:0', '--log', 'memory://',
                     env=exporting(receiver, 'tracing-mcp'))
    trace_id, parent_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    traceparent = f'00-{trace_id}-{parent_id}-01'
    try:
        params = {'name': 'greet', 'arguments': {'name': 'tracing'}}
        headers = {'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream',
                   'MCP-Protocol-Version': '2025-06-18'}
        if carrier == 'header':
            headers['traceparent'] = traceparent
        else:
            params['_meta'] = {'traceparent': traceparent, 'tracestate': 'a=1'}
        body = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'tools/call', 'params': params}).encode()
        request = urllib.request.Request(server.url() + 'mcp', body, headers)
        with urllib.request.urlopen(request, timeout=PATIENCE) as reply:
            assert 'Hello, tracing!' in reply.read().decode()
    finally:
        server.stop()

    def complete():
        spans = receiver.of_trace(trace_id)
        return spans if any(s['name'] == 'turn' for s in spans) else None

    spans = until(complete, f'the spans of trace {trace_id}')
    [call] = [s for s in spans if s['name'] == 'MCP request']
    assert call['parent_id'] == parent_id and call['kind'] == ProtoSpan.SPAN_KIND_SERVER
    assert call['attributes']['rpc.method'] == 'tools/call'
    assert call['attributes']['http.response.status_code'] == 200
    [turn] = [s for s in spans if s['name'] == 'turn']
    assert turn['parent_id'] == call['span_id']
    assert turn['attributes']['agentlog.outcome'] == 'done'
    by_id = {s['span_id']: s for s in spans}
    assert all(s['parent_id'] == parent_id or s['parent_id'] in by_id for s in spans), spans


def test_a_handlers_call_to_another_agent_is_in_the_callers_trace(receiver, iggy):
    """A worker's handler (`worker --exec`) calls another agent with `agentlog send`, the
    hop-guarded call: the send's client span is the turn's child, and the callee's request
    span and its turn (another `serve`) hang under it, all in the caller's trace."""
    callee = Process('serve', '--demo', '--listen', '127.0.0.1:0', '--log', 'memory://',
                     env=exporting(receiver, 'tracing-callee'))
    agent = f'tracing-caller-{uuid.uuid4().hex[:8]}'
    caller = Process('serve', '--agent', agent, '--listen', '127.0.0.1:0', '--log', iggy,
                     env=exporting(receiver, 'tracing-caller'))
    worker = Process('worker', '--agent', agent, '--log', iggy, '--exec',
                     f'{binary()} --color never send --json {callee.url()} onward',
                     env=exporting(receiver, 'tracing-caller-worker'))
    trace_id, parent_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    try:
        body = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'SendMessage', 'params': {'message': {
            'messageId': str(uuid.uuid4()), 'role': 'ROLE_USER', 'parts': [{'text': 'call on'}]}}}).encode()
        request = urllib.request.Request(caller.url(), body, {
            'Content-Type': 'application/json', 'A2A-Version': '1.0',
            'traceparent': f'00-{trace_id}-{parent_id}-01'})
        with urllib.request.urlopen(request, timeout=PATIENCE) as reply:
            task = json.loads(reply.read())['result']['task']
        assert task['status']['state'] == 'TASK_STATE_COMPLETED', task
        # The command's stdout, `agentlog send --json`'s: the callee's task, which carries the
        # caller's bridge path.
        called = json.loads(task['artifacts'][0]['parts'][0]['text'])['task']
        assert called['status']['state'] == 'TASK_STATE_COMPLETED', called
        assert called['history'][0]['metadata']['agentlog.hops'] == [agent], called
    finally:
        for process in [worker, caller, callee]:
            process.stop()

    def complete():
        spans = receiver.of_trace(trace_id)
        turns = [s for s in spans if s['name'] == 'turn']
        return spans if len(turns) == 2 and any(s['command'] == 'send' for s in spans) else None

    spans = until(complete, f'the spans of trace {trace_id}')
    by_id = {s['span_id']: s for s in spans}

    def one(name, service, kind):
        found = [s for s in spans if s['name'] == name and s['service'] == service and s['kind'] == kind]
        assert len(found) == 1, (name, service, spans)
        return found[0]

    request = one('SendMessage', 'tracing-caller', ProtoSpan.SPAN_KIND_SERVER)
    assert request['parent_id'] == parent_id
    turn = one('turn', 'tracing-caller-worker', ProtoSpan.SPAN_KIND_CONSUMER)
    assert turn['parent_id'] == request['span_id'] and turn['command'] == 'worker'
    # `agentlog send`, run by the turn's command with the turn's TRACEPARENT: a client span.
    send = one('SendMessage', 'tracing-caller-worker', ProtoSpan.SPAN_KIND_CLIENT)
    assert send['command'] == 'send' and send['parent_id'] == turn['span_id'], send
    assert send['attributes']['rpc.method'] == 'SendMessage'
    called = one('SendMessage', 'tracing-callee', ProtoSpan.SPAN_KIND_SERVER)
    assert called['parent_id'] == send['span_id']
    assert called['attributes']['agentlog.outcome'] == 'ok'
    callee_turn = one('turn', 'tracing-callee', ProtoSpan.SPAN_KIND_CONSUMER)
    assert callee_turn['parent_id'] == called['span_id']
    assert callee_turn['attributes']['agentlog.outcome'] == 'done'
    assert all(s['parent_id'] == parent_id or s['parent_id'] in by_id for s in spans), spans
