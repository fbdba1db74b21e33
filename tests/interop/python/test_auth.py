"""Interop: the official Python client (a2a-sdk 1.3) passing bearer tokens through its auth
hooks (`AuthInterceptor` with an `InMemoryContextCredentialStore`) to an `agentlog serve` that
requires JWTs.

The module starts its own server: `agentlog keygen` makes the issuer's key pair, `agentlog
serve --jwt-*` trusts its public key, and `agentlog token` mints each caller's token
(AGENTLOG_BIN names the binary; run.sh exports it).
"""

import asyncio
import os
import re
import subprocess
import tempfile
import uuid

import httpx
import pytest

from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
from a2a.client.errors import A2AClientError
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

ISSUER = 'https://issuer.interop.example'
AUDIENCE = 'interop-auth'
ALL = 'tasks:send tasks:read tasks:cancel'


def agentlog(*args: str) -> str:
    binary = os.environ.get('AGENTLOG_BIN')
    if not binary:
        pytest.fail('AGENTLOG_BIN is not set: run these tests through tests/interop/run.sh')
    done = subprocess.run([binary, '--color', 'never', *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope='module')
def secured():
    """(base URL, token of a subject with scopes) of a server that requires JWTs."""
    work = tempfile.TemporaryDirectory()
    key = os.path.join(work.name, 'issuer.key')
    agentlog('keygen', '--out', key)
    server = subprocess.Popen(
        [os.environ['AGENTLOG_BIN'], '--color', 'never', 'serve', '--demo', '--agent', 'secured',
         '--listen', '127.0.0.1:0', '--log', 'memory://', '--jwt-issuer', ISSUER,
         '--jwt-audience', AUDIENCE, '--jwt-key', key + '.pub'],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        line = server.stdout.readline()
        found = re.search(r' at (http://\S+)', line)
        assert found, f'no URL in the banner: {line!r}'
        assert 'bearer JWTs' in line, line

        def token(subject: str, scope: str = ALL) -> str:
            return agentlog('token', '--key', key, '--issuer', ISSUER, '--audience', AUDIENCE,
                            '--subject', subject, '--scope', scope).strip()

        yield found.group(1), token
    finally:
        server.terminate()
        server.wait(timeout=20)
        work.cleanup()


def message(text: str, **ids: str) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)], **ids)


async def authed_client(url: str, token: str, session: str):
    """A client whose calls carry `token` through the SDK's credential store and interceptor."""
    store = InMemoryContextCredentialStore()
    await store.set_credentials(session, 'bearer', token)
    client = await create_client(url, ClientConfig(streaming=False), interceptors=[AuthInterceptor(store)])
    context = ClientCallContext(state={'sessionId': session}, timeout=20)
    return client, context


async def send(client, context, text: str):
    events = [e async for e in client.send_message(SendMessageRequest(message=message(text)), context=context)]
    assert len(events) == 1 and events[0].WhichOneof('payload') == 'task', events
    return events[0].task


async def test_the_card_declares_bearer_and_stays_public(secured):
    url, _ = secured
    async with httpx.AsyncClient(timeout=20) as http:
        card = (await http.get(url + '.well-known/agent-card.json')).json()
    assert card['securitySchemes']['bearer']['httpAuthSecurityScheme']['scheme'] == 'Bearer'
    assert card['securityRequirements'] == [{'schemes': {'bearer': {'list': []}}}]


async def test_without_a_token_the_call_is_refused_with_401(secured):
    url, _ = secured
    async with await create_client(url, ClientConfig(streaming=False)) as client:
        with pytest.raises(A2AClientError) as refused:
            await send(client, ClientCallContext(timeout=20), 'hello')
    assert '401' in str(refused.value), refused.value


async def test_a_bearer_token_through_the_auth_interceptor_is_accepted(secured):
    url, token = secured
    client, context = await authed_client(url, token('alice'), 'alice-session')
    async with client:
        task = await send(client, context, 'hello')
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        again = await client.get_task(GetTaskRequest(id=task.id), context=context)
        assert again.id == task.id


async def test_another_principal_cannot_see_the_task(secured):
    url, token = secured
    alice, alice_context = await authed_client(url, token('alice'), 'a')
    bob, bob_context = await authed_client(url, token('bob'), 'b')
    async with alice, bob:
        task = await send(alice, alice_context, 'mine')
        with pytest.raises(TaskNotFoundError):
            await bob.get_task(GetTaskRequest(id=task.id), context=bob_context)


async def test_a_token_without_the_send_scope_gets_403(secured):
    url, token = secured
    client, context = await authed_client(url, token('reader', 'tasks:read'), 'r')
    async with client:
        with pytest.raises(A2AClientError) as refused:
            await send(client, context, 'hello')
    assert '403' in str(refused.value), refused.value
