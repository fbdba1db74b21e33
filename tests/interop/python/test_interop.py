"""Interop: the official A2A Python client (a2a-sdk 1.3) against `agentlog serve --demo`, over
JSON-RPC, HTTP+JSON and gRPC (each test taking `config` runs once per binding, see conftest.py).

Only the SDK's public client API is used (`create_client`, `ClientFactory`, `A2ACardResolver`,
the `a2a.types` protobuf types, the typed errors in `a2a.utils.errors`). The server is named
by AGENTLOG_URL (see conftest.py); its demo worker answers `echo: <text>` in three artifact
chunks, keeps `sleep N` working N seconds, asks for input on `input`, and fails on `fail`.
"""

import asyncio
import functools
import uuid

import httpx
import pytest

from a2a.client import (
    A2ACardResolver,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    create_client,
)
from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)


# Every test ends within this many seconds, or fails (never hangs the run).
TEST_TIMEOUT_S = 30
# Per-call HTTP timeout (the SDK's httpx default of 5 s is tight for a loaded CI box).
CALL = ClientCallContext(timeout=20)

TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}


def timed(test):
    """Fail the wrapped async test if it runs longer than TEST_TIMEOUT_S."""

    @functools.wraps(test)
    async def wrapper(*args, **kwargs):
        return await asyncio.wait_for(test(*args, **kwargs), TEST_TIMEOUT_S)

    return wrapper


def user_message(text: str, **ids: str) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        **ids,
    )


def state_name(state: int) -> str:
    return TaskState.Name(state)


def artifact_text(task: Task, name: str) -> str:
    """The text of the task's artifact `name`: all its parts, concatenated."""
    found = [a for a in task.artifacts if a.name == name or a.artifact_id == name]
    assert found, f'no artifact {name!r} in {task}'
    return ''.join(p.text for a in found for p in a.parts)


def message_text(message: Message) -> str:
    return ''.join(p.text for p in message.parts)


def card_for(url: str, version: str, streaming: bool = True) -> AgentCard:
    """A hand-built card with one JSONRPC interface of protocol `version` at `url`."""
    return AgentCard(
        name='agentlog-interop',
        description='hand-built card for the interop tests',
        version='0',
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding='JSONRPC', protocol_version=version)
        ],
    )


async def send_blocking(client, message: Message) -> Task:
    """One non-streaming SendMessage; returns the task it answered with."""
    events = [
        ev async for ev in client.send_message(SendMessageRequest(message=message), context=CALL)
    ]
    assert len(events) == 1, events
    assert events[0].WhichOneof('payload') == 'task', events[0]
    return events[0].task


async def wait_for_state(client, task_id: str, states: set[int], within_s: float = 15) -> Task:
    """Poll GetTask until the task is in one of `states`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while True:
        task = await client.get_task(GetTaskRequest(id=task_id), context=CALL)
        if task.status.state in states:
            return task
        assert loop.time() < deadline, (
            f'task {task_id} still {state_name(task.status.state)} after {within_s}s'
        )
        await asyncio.sleep(0.1)


# --- discovery ------------------------------------------------------------------------------


@timed
async def test_card_discovery(base_url):
    async with httpx.AsyncClient(timeout=20) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
    assert card.name == 'demo'
    assert card.capabilities.streaming
    assert card.supported_interfaces, card
    first = card.supported_interfaces[0]
    assert first.protocol_binding == 'JSONRPC'
    assert first.protocol_version == '1.0'
    assert first.url.rstrip('/') == base_url.rstrip('/')
    assert card.skills, 'the demo card describes its skill'

    # The factory resolves the same card and picks the 1.0 JSON-RPC transport.
    client = await create_client(base_url, ClientConfig(streaming=False))
    try:
        assert isinstance(client._transport, JsonRpcTransport)  # noqa: SLF001
        assert not isinstance(client._transport, CompatJsonRpcTransport)  # noqa: SLF001
    finally:
        await client.close()


@timed
async def test_each_binding_gets_its_transport(base_url, config):
    # The card lists JSONRPC then HTTP+JSON at the same URL, then GRPC at its own `host:port`;
    # a client limited to one takes it.
    from a2a.client.transports.grpc import GrpcTransport
    from a2a.client.transports.rest import RestTransport

    expected = {'JSONRPC': JsonRpcTransport, 'HTTP+JSON': RestTransport, 'GRPC': GrpcTransport}[
        config.binding
    ]
    client = await create_client(base_url, config(streaming=False))
    try:
        assert isinstance(client._transport, expected), client._transport  # noqa: SLF001
    finally:
        await client.close()


# --- SendMessage, GetTask ---------------------------------------------------------------------


@timed
async def test_blocking_send(base_url, config):
    async with await create_client(base_url, config(streaming=False)) as client:
        task = await send_blocking(client, user_message('hello'))
        assert task.id and task.context_id
        assert state_name(task.status.state) == 'TASK_STATE_COMPLETED'
        assert artifact_text(task, 'echo') == 'echo: hello'
        assert any(message_text(m) == 'hello' for m in task.history), task.history

        again = await client.get_task(GetTaskRequest(id=task.id), context=CALL)
        assert again.id == task.id
        assert state_name(again.status.state) == 'TASK_STATE_COMPLETED'
        assert artifact_text(again, 'echo') == 'echo: hello'


@timed
async def test_non_blocking_send_then_get_task(base_url, config):
    # polling=True makes the client set `returnImmediately` on every send.
    config = config(streaming=False, polling=True)
    async with await create_client(base_url, config) as client:
        task = await send_blocking(client, user_message('sleep 1'))
        assert task.status.state not in TERMINAL, (
            f'returnImmediately answered with a finished task: {state_name(task.status.state)}'
        )
        done = await wait_for_state(client, task.id, TERMINAL)
        assert state_name(done.status.state) == 'TASK_STATE_COMPLETED'
        assert artifact_text(done, 'sleep') == 'slept 1 s'

        # history_length bounds the history the server returns.
        trimmed = await client.get_task(GetTaskRequest(id=task.id, history_length=1), context=CALL)
        assert len(trimmed.history) <= 1


@timed
async def test_non_blocking_flag_on_the_request(base_url, config):
    # The same without the client-wide flag: `return_immediately` on the request itself.
    async with await create_client(base_url, config(streaming=False)) as client:
        request = SendMessageRequest(
            message=user_message('sleep 0.5'),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        events = [ev async for ev in client.send_message(request, context=CALL)]
        assert len(events) == 1 and events[0].HasField('task'), events
        assert events[0].task.status.state not in TERMINAL
        done = await wait_for_state(client, events[0].task.id, TERMINAL)
        assert state_name(done.status.state) == 'TASK_STATE_COMPLETED'


# --- CancelTask, errors -----------------------------------------------------------------------


@timed
async def test_cancel_then_cancel_again(base_url, config):
    config = config(streaming=False, polling=True)
    async with await create_client(base_url, config) as client:
        task = await send_blocking(client, user_message('sleep 30'))
        canceled = await client.cancel_task(CancelTaskRequest(id=task.id), context=CALL)
        assert canceled.id == task.id
        assert state_name(canceled.status.state) == 'TASK_STATE_CANCELED'

        got = await client.get_task(GetTaskRequest(id=task.id), context=CALL)
        assert state_name(got.status.state) == 'TASK_STATE_CANCELED'

        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=task.id), context=CALL)


@timed
async def test_get_unknown_task_is_task_not_found(base_url, config):
    async with await create_client(base_url, config(streaming=False)) as client:
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=f'no-such-task-{uuid.uuid4()}'), context=CALL)
        with pytest.raises(TaskNotFoundError):
            await client.cancel_task(
                CancelTaskRequest(id=f'no-such-task-{uuid.uuid4()}'), context=CALL
            )


# --- ListTasks --------------------------------------------------------------------------------


@timed
async def test_list_tasks(base_url, config):
    context_id = str(uuid.uuid4())
    async with await create_client(base_url, config(streaming=False)) as client:
        first = await send_blocking(client, user_message('list one', context_id=context_id))
        second = await send_blocking(client, user_message('list two', context_id=context_id))
        assert first.context_id == context_id == second.context_id

        listed = await client.list_tasks(ListTasksRequest(context_id=context_id), context=CALL)
        assert {t.id for t in listed.tasks} == {first.id, second.id}
        # Newest status first.
        assert [t.id for t in listed.tasks] == [second.id, first.id]
        assert listed.next_page_token == ''
        assert all(t.context_id == context_id for t in listed.tasks)

        # Paging: one task a page, following next_page_token.
        page = await client.list_tasks(
            ListTasksRequest(context_id=context_id, page_size=1), context=CALL
        )
        assert [t.id for t in page.tasks] == [second.id]
        assert page.next_page_token
        page2 = await client.list_tasks(
            ListTasksRequest(context_id=context_id, page_size=1, page_token=page.next_page_token),
            context=CALL,
        )
        assert [t.id for t in page2.tasks] == [first.id]

        # Artifacts only on request.
        with_artifacts = await client.list_tasks(
            ListTasksRequest(context_id=context_id, include_artifacts=True), context=CALL
        )
        assert artifact_text(with_artifacts.tasks[-1], 'echo') == 'echo: list one'
        assert all(not t.artifacts for t in listed.tasks)

        # Filter by state.
        completed = await client.list_tasks(
            ListTasksRequest(context_id=context_id, status=TaskState.TASK_STATE_COMPLETED),
            context=CALL,
        )
        assert len(completed.tasks) == 2
        working = await client.list_tasks(
            ListTasksRequest(context_id=context_id, status=TaskState.TASK_STATE_WORKING),
            context=CALL,
        )
        assert len(working.tasks) == 0


@timed
async def test_an_answer_that_is_a_message(base_url, config):
    # The demo's `reply TEXT` answers with a message and no task (fold rule 15): the
    # client gets a message, blocking or streaming, and there is no task to get.
    async with await create_client(base_url, config(streaming=False)) as client:
        message = user_message('reply hi there')
        events = [
            ev async for ev in client.send_message(SendMessageRequest(message=message), context=CALL)
        ]
        assert [ev.WhichOneof('payload') for ev in events] == ['message'], events
        assert message_text(events[0].message) == 'hi there'
        assert events[0].message.role == Role.ROLE_AGENT
        assert not events[0].message.task_id
    async with await create_client(base_url, config(streaming=True)) as client:
        events = [
            ev
            async for ev in client.send_message(
                SendMessageRequest(message=user_message('reply streamed')), context=CALL
            )
        ]
    assert [ev.WhichOneof('payload') for ev in events] == ['message'], events
    assert message_text(events[0].message) == 'streamed'


# --- streaming --------------------------------------------------------------------------------


@timed
async def test_streaming_send(base_url, config):
    async with await create_client(base_url, config(streaming=True)) as client:
        events = [
            ev
            async for ev in client.send_message(
                SendMessageRequest(message=user_message('hello stream')), context=CALL
            )
        ]
    kinds = [ev.WhichOneof('payload') for ev in events]
    assert kinds[0] == 'task', kinds
    task_id = events[0].task.id
    assert 'artifact_update' in kinds, kinds
    assert kinds[-1] == 'status_update', kinds
    assert state_name(events[-1].status_update.status.state) == 'TASK_STATE_COMPLETED'
    for ev in events[1:]:
        update = getattr(ev, ev.WhichOneof('payload'))
        assert update.task_id == task_id
    chunks = [ev.artifact_update for ev in events if ev.HasField('artifact_update')]
    assert all(c.artifact.artifact_id == chunks[0].artifact.artifact_id for c in chunks)
    assert not chunks[0].append and all(c.append for c in chunks[1:])
    assert chunks[-1].last_chunk
    text = ''.join(p.text for c in chunks for p in c.artifact.parts)
    assert text == 'echo: hello stream'


@timed
async def test_subscribe_to_running_task(base_url, config):
    async with await create_client(
        base_url, config(streaming=False, polling=True)
    ) as poller, await create_client(base_url, config(streaming=True)) as streamer:
        task = await send_blocking(poller, user_message('sleep 1'))
        assert task.status.state not in TERMINAL
        events = [
            ev
            async for ev in streamer.subscribe(SubscribeToTaskRequest(id=task.id), context=CALL)
        ]
    kinds = [ev.WhichOneof('payload') for ev in events]
    assert kinds[0] == 'task', kinds
    assert events[0].task.id == task.id
    assert kinds[-1] == 'status_update', kinds
    assert state_name(events[-1].status_update.status.state) == 'TASK_STATE_COMPLETED'
    chunks = [ev.artifact_update for ev in events if ev.HasField('artifact_update')]
    assert ''.join(p.text for c in chunks for p in c.artifact.parts) == 'slept 1 s'


@timed
async def test_subscribe_to_unknown_task_is_task_not_found(base_url, config):
    async with await create_client(base_url, config(streaming=True)) as client:
        with pytest.raises(TaskNotFoundError):
            async for _ in client.subscribe(
                SubscribeToTaskRequest(id=f'no-such-task-{uuid.uuid4()}'), context=CALL
            ):
                pass


@timed
async def test_subscribe_to_finished_task_is_unsupported_operation(base_url, config):
    async with await create_client(
        base_url, config(streaming=False)
    ) as sender, await create_client(base_url, config(streaming=True)) as streamer:
        task = await send_blocking(sender, user_message('done soon'))
        assert task.status.state in TERMINAL
        with pytest.raises(UnsupportedOperationError):
            async for _ in streamer.subscribe(SubscribeToTaskRequest(id=task.id), context=CALL):
                pass


@timed
async def test_cancel_ends_an_open_stream(base_url, config):
    # A streaming send of a long task; a second client cancels it; the stream ends CANCELED.
    async with await create_client(
        base_url, config(streaming=True)
    ) as streamer, await create_client(base_url, config(streaming=False)) as canceler:
        events = []
        async for ev in streamer.send_message(
            SendMessageRequest(message=user_message('sleep 30')), context=CALL
        ):
            events.append(ev)
            if len(events) == 1:
                assert ev.HasField('task'), ev
                canceled = await canceler.cancel_task(
                    CancelTaskRequest(id=ev.task.id), context=CALL
                )
                assert state_name(canceled.status.state) == 'TASK_STATE_CANCELED'
    assert events[-1].HasField('status_update'), events
    assert state_name(events[-1].status_update.status.state) == 'TASK_STATE_CANCELED'


@timed
async def test_failing_task(base_url, config):
    async with await create_client(base_url, config(streaming=False)) as client:
        task = await send_blocking(client, user_message('fail'))
        assert state_name(task.status.state) == 'TASK_STATE_FAILED'
        assert message_text(task.status.message) == 'you asked me to fail'
        # A message to a terminal task is refused.
        with pytest.raises(UnsupportedOperationError):
            await send_blocking(
                client, user_message('again', task_id=task.id, context_id=task.context_id)
            )


# --- multi-turn ---------------------------------------------------------------------------------


@timed
async def test_input_required_then_follow_up(base_url, config):
    async with await create_client(base_url, config(streaming=False)) as client:
        task = await send_blocking(client, user_message('input'))
        assert state_name(task.status.state) == 'TASK_STATE_INPUT_REQUIRED'
        assert message_text(task.status.message) == 'what should I echo?'

        follow_up = user_message('the follow-up', task_id=task.id, context_id=task.context_id)
        done = await send_blocking(client, follow_up)
        assert done.id == task.id
        assert state_name(done.status.state) == 'TASK_STATE_COMPLETED'
        assert message_text(done.status.message) == 'the follow-up'
        texts = [message_text(m) for m in done.history]
        assert 'input' in texts and 'the follow-up' in texts, texts


@timed
async def test_input_required_over_streaming(base_url, config):
    async with await create_client(base_url, config(streaming=True)) as client:
        events = [
            ev
            async for ev in client.send_message(
                SendMessageRequest(message=user_message('input')), context=CALL
            )
        ]
        assert events[0].HasField('task')
        last = events[-1]
        assert last.HasField('status_update'), events
        assert state_name(last.status_update.status.state) == 'TASK_STATE_INPUT_REQUIRED'
        task = events[0].task
        follow_up = user_message('streamed follow-up', task_id=task.id, context_id=task.context_id)
        events = [
            ev
            async for ev in client.send_message(
                SendMessageRequest(message=follow_up), context=CALL
            )
        ]
        assert events[-1].HasField('status_update'), events
        assert state_name(events[-1].status_update.status.state) == 'TASK_STATE_COMPLETED'


# --- 0.3 compatibility ------------------------------------------------------------------------


@timed
async def test_v03_client_blocking_send_and_get(base_url):
    # A card whose only interface is JSONRPC 0.3: the factory picks the legacy transport,
    # which speaks `message/send`, `tasks/get`... with 0.3 shapes (kind, lowercase enums).
    card = card_for(base_url, '0.3', streaming=False)
    client = ClientFactory(ClientConfig(streaming=False)).create(card)
    async with client:
        assert isinstance(client._transport, CompatJsonRpcTransport)  # noqa: SLF001
        task = await send_blocking(client, user_message('hello 0.3'))
        assert state_name(task.status.state) == 'TASK_STATE_COMPLETED'
        assert artifact_text(task, 'echo') == 'echo: hello 0.3'

        got = await client.get_task(GetTaskRequest(id=task.id), context=CALL)
        assert got.id == task.id
        assert state_name(got.status.state) == 'TASK_STATE_COMPLETED'
        assert artifact_text(got, 'echo') == 'echo: hello 0.3'

        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=f'no-such-task-{uuid.uuid4()}'), context=CALL)


@timed
async def test_v03_client_cancel(base_url):
    card = card_for(base_url, '0.3', streaming=False)
    async with ClientFactory(ClientConfig(streaming=False, polling=True)).create(card) as client:
        task = await send_blocking(client, user_message('sleep 30'))
        assert task.status.state not in TERMINAL
        canceled = await client.cancel_task(CancelTaskRequest(id=task.id), context=CALL)
        assert state_name(canceled.status.state) == 'TASK_STATE_CANCELED'
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=task.id), context=CALL)


@timed
async def test_v03_client_streaming_send(base_url):
    card = card_for(base_url, '0.3', streaming=True)
    async with ClientFactory(ClientConfig(streaming=True)).create(card) as client:
        events = [
            ev
            async for ev in client.send_message(
                SendMessageRequest(message=user_message('hello 0.3 stream')), context=CALL
            )
        ]
    kinds = [ev.WhichOneof('payload') for ev in events]
    assert kinds[0] == 'task', kinds
    assert kinds[-1] == 'status_update', kinds
    assert state_name(events[-1].status_update.status.state) == 'TASK_STATE_COMPLETED'
    chunks = [ev.artifact_update for ev in events if ev.HasField('artifact_update')]
    assert ''.join(p.text for c in chunks for p in c.artifact.parts) == 'echo: hello 0.3 stream'


@timed
async def test_v03_client_resubscribe(base_url):
    card = card_for(base_url, '0.3', streaming=True)
    async with ClientFactory(ClientConfig(streaming=False, polling=True)).create(
        card
    ) as poller, ClientFactory(ClientConfig(streaming=True)).create(card) as streamer:
        task = await send_blocking(poller, user_message('sleep 0.5'))
        assert task.status.state not in TERMINAL
        events = [
            ev
            async for ev in streamer.subscribe(SubscribeToTaskRequest(id=task.id), context=CALL)
        ]
    kinds = [ev.WhichOneof('payload') for ev in events]
    assert kinds[0] == 'task', kinds
    assert kinds[-1] == 'status_update', kinds
    assert state_name(events[-1].status_update.status.state) == 'TASK_STATE_COMPLETED'
