"""Interop: push notifications with the official A2A Python client (a2a-sdk 1.3), over JSON-RPC,
HTTP+JSON and gRPC. The client registers a webhook of this process on a running task (and,
separately, inline on a send), reads, lists and deletes configs, and the webhook receives every
update as a StreamResponse with the config's credentials.

The server is one of this module's own: `agentlog serve --demo --push-allow-private` (AGENTLOG_BIN,
which run.sh exports), since the webhook listens on loopback, which a default server refuses.
"""

import asyncio
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from google.protobuf import json_format

from a2a.client import ClientCallContext, create_client
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import TaskNotFoundError

CALL = ClientCallContext(timeout=20)
TEST_TIMEOUT_S = 30


@pytest.fixture(scope='module')
def push_server() -> Iterator[str]:
    binary = os.environ.get('AGENTLOG_BIN')
    if not binary:
        pytest.fail('AGENTLOG_BIN is not set: run these tests through tests/interop/run.sh')
    server = subprocess.Popen(
        [binary, 'serve', '--demo', '--listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0',
         '--log', 'memory://', '--push-allow-private', '--color', 'never'],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        url = next(word for word in banner.split() if word.startswith('http://'))
        yield url
    finally:
        server.kill()
        server.wait()


class Receiver:
    """A webhook in this process: every POST's path, headers (lowercase) and body."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, str], bytes]] = []
        got = self.got

        class Hook(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get('Content-Length', '0')))
                got.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Hook)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f'http://127.0.0.1:{self.server.server_address[1]}{path}'

    def at(self, path: str) -> list[StreamResponse]:
        return [json_format.Parse(body, StreamResponse()) for p, _, body in self.got if p == path]

    async def until_done(self, path: str) -> list[StreamResponse]:
        """The notifications to `path` once the last one is the finished task."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while loop.time() < deadline:
            got = self.at(path)
            if got and got[-1].WhichOneof('payload') == 'task' and got[-1].task.status.state == 3:
                return got
            await asyncio.sleep(0.05)
        raise AssertionError(f'{path}: {self.at(path)}')


@pytest.fixture(scope='module')
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


def message(text: str) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])


async def test_the_client_registers_a_config_and_its_webhook_gets_every_update(push_server, receiver, config):
    async def run():
        hook = f'/registered/{config.binding}'
        async with await create_client(push_server, config(streaming=False, polling=True)) as client:
            [event] = [e async for e in client.send_message(SendMessageRequest(message=message('sleep 1')), context=CALL)]
            task = event.task
            made = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=task.id, id='py', url=receiver.url(hook),
                    authentication=AuthenticationInfo(scheme='Bearer', credentials='tok'),
                ),
                context=CALL,
            )
            assert (made.id, made.task_id, made.url) == ('py', task.id, receiver.url(hook))
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id='py'), context=CALL
            )
            assert got.authentication.scheme == 'Bearer' and got.authentication.credentials == ''
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id), context=CALL
            )
            assert [c.id for c in listed.configs] == ['py']
            notifications = await receiver.until_done(hook)
            # The task as it stood first, then its updates, in order, the end as the whole task.
            assert notifications[0].WhichOneof('payload') == 'task'
            assert notifications[0].task.id == task.id
            assert any(n.WhichOneof('payload') == 'status_update' for n in notifications[1:-1])
            assert all(h['authorization'] == 'Bearer tok' for p, h, _ in receiver.got if p == hook)
            await client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task.id, id='py'), context=CALL
            )
            with pytest.raises(TaskNotFoundError):
                await client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=task.id, id='py'), context=CALL
                )

    await asyncio.wait_for(run(), TEST_TIMEOUT_S)


async def test_an_inline_config_on_a_send_gets_the_task_from_its_start(push_server, receiver, config):
    async def run():
        hook = f'/inline/{config.binding}'
        inline = SendMessageConfiguration(
            task_push_notification_config=TaskPushNotificationConfig(url=receiver.url(hook), token='t-1')
        )
        async with await create_client(push_server, config(streaming=False)) as client:
            request = SendMessageRequest(message=message('hello'), configuration=inline)
            [event] = [e async for e in client.send_message(request, context=CALL)]
            task = event.task
            notifications = await receiver.until_done(hook)
            kinds = [n.WhichOneof('payload') for n in notifications]
            assert kinds == ['task', 'status_update', 'artifact_update', 'artifact_update', 'artifact_update', 'task']
            assert notifications[-1].task.id == task.id
            assert all(h['x-a2a-notification-token'] == 't-1' for p, h, _ in receiver.got if p == hook)

    await asyncio.wait_for(run(), TEST_TIMEOUT_S)
