"""The official MCP Python client (mcp 2.3.0) against `agentlog serve --demo`'s /mcp, in each
of its modes: auto (probes server/discover), legacy (initialize), and pinned 2026-07-28; and,
when run.sh started them (an iggy-server was found), against two replicas over one Iggy log."""

import base64
import json
import os
import time
import urllib.request
import uuid

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, PromptReference, ResourceTemplateReference

URL = os.environ["AGENTLOG_MCP_URL"]
MODES = ["auto", "legacy", "2026-07-28"]


@pytest.mark.parametrize("mode", MODES)
async def test_list_call_progress_and_errors(mode):
    async with Client(URL, mode=mode) as client:
        assert client.server_info is None or client.server_info.name == "agentlog"
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        assert {"echo", "greet", "slow_compute", "test_tool_with_progress"} <= names
        greeted = await client.call_tool("greet", {"name": "Ada"})
        assert greeted.content[0].text == "Hello, Ada!" and not greeted.is_error
        seen = []

        async def progress(value, total, message):
            seen.append((value, total))

        done = await client.call_tool("test_tool_with_progress", {}, progress_callback=progress)
        assert seen == [(0, 100), (50, 100), (100, 100)]
        assert done.content[0].text == "Progress test completed"
        failed = await client.call_tool("test_error_handling", {})
        assert failed.is_error
        invalid = await client.call_tool("echo", {"text": 5})
        assert invalid.is_error and "Invalid arguments" in invalid.content[0].text


@pytest.mark.parametrize("mode", MODES)
async def test_log_messages_reach_the_logging_callback(mode):
    # test_logging_tool logs at debug, info and warning. Modern: only the request's
    # _meta logLevel and above (the client stamps log_level), none without it; legacy: the
    # stateless bridge keeps no logging/setLevel, so every level comes.
    for log_level, want in [("info", ["info", "warning"]), (None, [])]:
        seen = []

        async def logged(params):
            seen.append((params.level, params.logger, params.data))

        async with Client(URL, mode=mode, logging_callback=logged, log_level=log_level) as client:
            if mode == "legacy":
                await client.set_logging_level("info")
                want = ["debug", "info", "warning"]
            done = await client.call_tool("test_logging_tool", {})
            assert not done.is_error, done
        assert [level for level, _, _ in seen] == want, seen
        assert all(logger == "test_logging_tool" for _, logger, _ in seen)
        assert [data for _, _, data in seen] == [f"a {level} message" for level in want]


@pytest.mark.parametrize("mode", MODES)
async def test_a_cancelled_call_leaves_the_client_usable(mode):
    cancelled_before = task_statuses().count("cancelled")
    async with Client(URL, mode=mode) as client:
        started = time.monotonic()
        with anyio.move_on_after(0.5):
            await client.call_tool("slow_compute", {"seconds": 30})
            pytest.fail("slow_compute answered before it was cancelled")
        assert time.monotonic() - started < 5
        again = await client.call_tool("echo", {"text": "still here"})
        assert again.content[0].text == "still here"
    # The call's task ends cancelled long before its 30 s: legacy, by the client's
    # notifications/cancelled naming the call's id; modern, by the client closing the stream.
    deadline = time.monotonic() + 10
    while True:
        statuses = task_statuses()
        if "working" not in statuses and statuses.count("cancelled") == cancelled_before + 1:
            break
        assert time.monotonic() < deadline, statuses
        time.sleep(0.05)


def task_statuses():
    """The status of every task of this (anonymous) caller, by legacy tasks/list (every page),
    which also lists the tasks of sync calls."""
    statuses, params = [], {}
    while True:
        status, body = post({"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": params})
        assert status == 200, body
        statuses += [task["status"] for task in body["result"]["tasks"]]
        if "nextCursor" not in body["result"]:
            return statuses
        params = {"cursor": body["result"]["nextCursor"]}


@pytest.mark.parametrize("mode", MODES)
async def test_a_mirrored_argument_travels_in_its_header(mode):
    # route_query's region carries x-mcp-header: in 2026-07-28 the client mirrors it into
    # Mcp-Param-Region (base64 for non-ASCII), which the bridge checks against the body.
    async with Client(URL, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["route_query"].input_schema["properties"]["region"]["x-mcp-header"] == "Region"
        for region in ["us-west1", "São Paulo"]:
            routed = await client.call_tool("route_query", {"region": region, "query": "select 1"})
            assert not routed.is_error and routed.content[0].text == f"Runs in {region}"
    if mode != "legacy":
        # Without the header a modern call is refused: 400, -32020.
        status, body = modern("tools/call", {"name": "route_query", "arguments": {"region": "eu"}}, "route_query")
        assert (status, body["error"]["code"]) == (400, -32020), body


async def test_a_tool_asking_for_input_is_answered_through_the_elicitation_callback():
    # MRTR (2026-07-28): the call answers input_required, the client runs its callback and
    # retries with the responses and the requestState, and the retry continues the tool.
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        field = next(iter(params.requested_schema["properties"]))
        return ElicitResult(action="accept", content={field: {"name": "Ada", "color": "blue"}[field]})

    async with Client(URL, mode="2026-07-28", elicitation_callback=elicit) as client:
        greeted = await client.call_tool("test_input_required_result_elicitation", {})
        assert greeted.content[0].text == "Hello, Ada!" and not greeted.is_error
        assert asked == ["What is your name?"]
        rounds = await client.call_tool("test_input_required_result_multi_round", {})
        assert rounds.content[0].text == "Your favorite color is blue"
        assert asked[1:] == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]
    # Without the callback the client declares no elicitation: the spec's -32021.
    async with Client(URL, mode="2026-07-28") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("test_input_required_result_elicitation", {})
        assert refused.value.code == -32021
        assert "elicitation" in refused.value.error.data["requiredCapabilities"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_tasks_artifact_is_read_as_a_resource_after_it_ran(mode):
    # A task of the demo A2A agent (echo streams its artifact in chunks), sent over A2A, then
    # read over MCP: every task the caller may see is agentlog://tasks/<agent>:<id>.
    text = f"resource {uuid.uuid4()}"
    status, sent = a2a_send(text)
    assert status == 200, sent
    task_id = f"demo:{sent['result']['task']['id']}"
    task_uri = "agentlog://tasks/" + task_id.replace(":", "%3A")
    async with Client(URL, mode=mode) as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert {"agentlog://tasks/{taskId}", "agentlog://tasks/{taskId}/artifacts/{artifactId}"} <= templates
        listed = [r.uri for r in (await client.list_resources()).resources]
        assert listed[:2] == ["test://static-text", "test://static-binary"], listed
        assert task_uri in listed, listed
        artifact = await client.read_resource(f"{task_uri}/artifacts/echo")
        assert "".join(c.text for c in artifact.contents) == f"echo: {text}"
        assert all(c.mime_type == "text/plain" for c in artifact.contents)
        whole = await client.read_resource(task_uri)
        assert [c.uri for c in whole.contents] == [f"{task_uri}/artifacts/echo"] * len(artifact.contents)
        # An artifact the task does not have: -32602 naming the URI.
        with pytest.raises(MCPError) as missing:
            await client.read_resource(f"{task_uri}/artifacts/none")
        assert missing.value.code == -32602


@pytest.mark.parametrize("mode", MODES)
async def test_a_binary_result_and_the_static_resources_are_read(mode):
    async with Client(URL, mode=mode) as client:
        static = await client.read_resource("test://static-text")
        assert static.contents[0].text == "This is the content of the static text resource."
        binary = await client.read_resource("test://static-binary")
        assert binary.contents[0].mime_type == "image/png"
        assert base64.b64decode(binary.contents[0].blob).startswith(b"\x89PNG")
        data = await client.read_resource("test://template/123/data")
        assert json.loads(data.contents[0].text) == {"id": "123", "templateTest": True, "data": "Data for ID: 123"}
        # A tool call's image, read back from its task (the newest of this caller's).
        image = await client.call_tool("test_image_content", {})
        assert image.content[0].type == "image"
        tasks = [r for r in (await client.list_resources()).resources if r.name.startswith("mcp.demo:")]
        read = await client.read_resource(tasks[0].uri)
        assert [(c.mime_type, c.blob) for c in read.contents] == [("image/png", image.content[0].data)]


@pytest.mark.parametrize("mode", MODES)
async def test_prompts_are_listed_got_with_arguments_and_completed(mode):
    async with Client(URL, mode=mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_image"} <= set(prompts)
        assert [(a.name, a.required) for a in prompts["test_prompt_with_arguments"].arguments] == [
            ("arg1", True), ("arg2", True)]
        got = await client.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
        assert got.messages[0].content.text == "Prompt with arguments: arg1='hello', arg2='world'"
        embedded = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://x"})
        assert embedded.messages[0].content.resource.uri == "test://x"
        image = await client.get_prompt("test_prompt_with_image")
        assert image.messages[0].content.mime_type == "image/png"
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("test_prompt_with_arguments", {"arg1": "only one"})
        assert missing.value.code == -32602
        done = await client.complete(
            PromptReference(type="ref/prompt", name="test_prompt_with_arguments"), {"name": "arg1", "value": "pa"})
        assert done.completion.values == ["paris", "park"]
        done = await client.complete(
            ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data"), {"name": "id", "value": "4"})
        assert done.completion.values == ["456"]


def waiting_task(base=None):
    """A demo A2A task waiting for input ("input"), sent to the server of MCP URL `base`: its
    A2A id and its resource URI."""
    status, sent = a2a_send("input", base=base)
    assert status == 200 and sent["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", sent
    task_id = sent["result"]["task"]["id"]
    return task_id, "agentlog://tasks/demo%3A" + task_id


async def test_a_legacy_subscription_hears_of_a_change_made_over_a2a():
    # The session's GET stream (the client opens it with the Mcp-Session-Id initialize gave)
    # carries notifications/resources/updated when the task changes through the A2A endpoint.
    task_id, uri = waiting_task()
    updated = anyio.Event()

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/resources/updated" and message.params.uri == uri:
            updated.set()

    async with Client(URL, mode="legacy", message_handler=on_message) as client:
        with pytest.warns(Warning):
            await client.subscribe_resource(uri)
        status, sent = a2a_send("done", task_id=task_id)
        assert status == 200, sent
        with anyio.fail_after(20):
            await updated.wait()
        with pytest.warns(Warning):
            await client.unsubscribe_resource(uri)
        with pytest.raises(MCPError) as refused:
            with pytest.warns(Warning):
                await client.subscribe_resource("test://nobody")
        assert refused.value.code == -32602


async def test_a_modern_listen_hears_of_a_change_made_over_a2a():
    task_id, uri = waiting_task()
    async with Client(URL, mode="2026-07-28") as client:
        async with client.listen(resource_subscriptions=[uri, "test://watched-resource"]) as subscription:
            assert set(subscription.honored.resource_subscriptions) == {uri, "test://watched-resource"}
            status, sent = a2a_send("done", task_id=task_id)
            assert status == 200, sent
            with anyio.fail_after(20):
                event = await subscription.__anext__()
            assert event.uri == uri


async def test_a_listen_stream_hears_the_tools_and_prompts_lists_change():
    # The demo's hooks reload the server's definitions (adding, then removing, a tool and a
    # prompt); a 2026-07-28 listen stream that asked hears each list change.
    from mcp.shared.subscriptions import PromptsListChanged, ToolsListChanged

    async with Client(URL, mode="2026-07-28") as client:
        async with client.listen(tools_list_changed=True, prompts_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed and subscription.honored.prompts_list_changed
            for hook, kind, name in [("test_trigger_tool_change", ToolsListChanged, "test_dynamic_tool"),
                                     ("test_trigger_prompt_change", PromptsListChanged, "test_dynamic_prompt")]:
                added = await client.call_tool(hook, {})
                assert not added.is_error, added
                with anyio.fail_after(20):
                    event = await subscription.__anext__()
                assert isinstance(event, kind), event
                listed = await (client.list_tools() if kind is ToolsListChanged else client.list_prompts())
                names = [item.name for item in (listed.tools if kind is ToolsListChanged else listed.prompts)]
                assert name in names
                await client.call_tool(hook, {})  # removed again
                with anyio.fail_after(20):
                    assert isinstance(await subscription.__anext__(), kind)


async def test_a_legacy_call_relays_sampling_and_elicitation_to_the_callbacks():
    from mcp.types import CreateMessageResult, TextContent

    async def sample(context, params):
        return CreateMessageResult(role="assistant", model="m", content=TextContent(type="text", text="Paris"))

    async def elicit(context, params):
        return ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    async with Client(URL, mode="legacy", sampling_callback=sample, elicitation_callback=elicit) as client:
        sampled = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
        assert sampled.content[0].text == "LLM response: Paris", sampled
        elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
        assert elicited.content[0].text.startswith("User response: action=accept"), elicited
        assert '"username":"ada"' in elicited.content[0].text


def a2a_send(text, task_id=None, base=None):
    """SendMessage to the demo A2A agent (the root of the server of MCP URL `base`, default
    URL's, beside /mcp), blocking; with `task_id`, the task's next message."""
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    if task_id is not None:
        message["taskId"] = task_id
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    return post(body, {"A2A-Version": "1.0"}, url=(base or URL).rsplit("/mcp", 1)[0] + "/")


def post(body, headers=None, url=URL):
    """A plain JSON-RPC POST: (status, parsed body)."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    for k, v in (headers or {}).items():
        request.add_header(k, v)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
}


def modern(method, params, name=None):
    meta = META
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return post({"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}, headers)


def test_a_task_runs_and_is_read_back_and_cancelled():
    # No official v2 client has a tasks runtime: the Tasks extension over plain JSON-RPC.
    status, created = modern("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.2}}, "slow_compute")
    assert status == 200 and created["result"]["resultType"] == "task", created
    task_id = created["result"]["taskId"]
    deadline = time.monotonic() + 20
    while True:
        _, got = modern("tasks/get", {"taskId": task_id}, task_id)
        if got["result"]["status"] == "completed":
            assert got["result"]["result"]["content"][0]["text"].startswith("Computed for")
            break
        assert time.monotonic() < deadline, got
        time.sleep(0.05)
    _, slow = modern("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}}, "slow_compute")
    slow_id = slow["result"]["taskId"]
    _, ack = modern("tasks/cancel", {"taskId": slow_id}, slow_id)
    assert ack["result"]["resultType"] == "complete"
    deadline = time.monotonic() + 20
    while modern("tasks/get", {"taskId": slow_id}, slow_id)[1]["result"]["status"] != "cancelled":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_listen_stream_pushes_a_task_as_it_changes():
    # subscriptions/listen over real HTTP: an SSE response that acknowledges the task, pushes
    # its whole state (notifications/tasks) until it completes, then ends with the result.
    _, created = modern("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.3}}, "slow_compute")
    task_id = created["result"]["taskId"]
    body = {"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
            "params": {"notifications": {"taskIds": [task_id]}, "_meta": META}}
    request = urllib.request.Request(URL, data=json.dumps(body).encode(), method="POST")
    for k, v in {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                 "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}.items():
        request.add_header(k, v)
    frames = []
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        for line in response:
            line = line.decode().strip()
            if line.startswith("data:"):
                frames.append(json.loads(line[len("data:"):]))
                if "id" in frames[-1]:
                    break
    assert frames[0]["method"] == "notifications/subscriptions/acknowledged", frames
    assert frames[0]["params"]["notifications"]["taskIds"] == [task_id]
    tasks = [f["params"] for f in frames[1:-1]]
    assert all(f["method"] == "notifications/tasks" for f in frames[1:-1]), frames
    assert tasks and all(t["taskId"] == task_id for t in tasks), frames
    assert tasks[-1]["status"] == "completed", frames
    assert tasks[-1]["result"]["content"][0]["text"].startswith("Computed for")
    assert frames[-1]["id"] == "listen-1" and frames[-1]["result"]["resultType"] == "complete", frames
    for frame in frames[:-1]:
        assert frame["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"


# --- two replicas over one Iggy log (run.sh starts them when it finds an iggy-server) -----------

URL_A = os.environ.get("AGENTLOG_MCP_URL_A")
URL_B = os.environ.get("AGENTLOG_MCP_URL_B")
two_replicas = pytest.mark.skipif(
    not (URL_A and URL_B), reason="SKIPPED: two replicas need an iggy-server (run.sh starts them)")


class AnswersToTheOther(httpx2.AsyncBaseTransport):
    """A balancer in front of two replicas: the client's answers to relayed requests (JSON-RPC
    responses it POSTs) go to the other replica, everything else to the one it connected to."""

    def __init__(self, other):
        self.inner = httpx2.AsyncHTTPTransport()
        self.other = httpx2.URL(other)
        self.answers = 0

    async def handle_async_request(self, request):
        if request.method == "POST":
            body = await request.aread()
            message = json.loads(body) if body else None
            if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
                headers = [(k, v) for k, v in request.headers.items() if k.lower() not in ("host", "content-length")]
                request = httpx2.Request("POST", self.other, headers=headers, content=body)
                self.answers += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self):
        await self.inner.aclose()


@two_replicas
async def test_two_replicas_a_legacy_calls_sampling_and_elicitation_are_answered_through_the_other():
    from mcp.types import CreateMessageResult, TextContent

    async def sample(context, params):
        return CreateMessageResult(role="assistant", model="m", content=TextContent(type="text", text="Paris"))

    async def elicit(context, params):
        return ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    balancer = AnswersToTheOther(URL_B)
    async with httpx2.AsyncClient(transport=balancer, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(URL_A, http_client=http)
        async with Client(transport, mode="legacy", sampling_callback=sample, elicitation_callback=elicit) as client:
            sampled = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
            assert sampled.content[0].text == "LLM response: Paris", sampled
            elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            assert elicited.content[0].text.startswith("User response: action=accept"), elicited
    # Both answers reached the other replica, which wrote them for the call held by the first.
    assert balancer.answers == 2


@two_replicas
async def test_two_replicas_a_subscription_through_one_hears_of_a_change_through_the_other():
    # Legacy: resources/subscribe and the session's GET stream on replica A; the task is
    # changed through replica B's A2A endpoint.
    task_id, uri = waiting_task(base=URL_A)
    updated = anyio.Event()

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/resources/updated" and message.params.uri == uri:
            updated.set()

    async with Client(URL_A, mode="legacy", message_handler=on_message) as client:
        with pytest.warns(Warning):
            await client.subscribe_resource(uri)
        status, sent = a2a_send("done", task_id=task_id, base=URL_B)
        assert status == 200, sent
        with anyio.fail_after(20):
            await updated.wait()
    # 2026-07-28: subscriptions/listen on replica A, the change through replica B; then a
    # task made through replica B is a change of the resources' list.
    from mcp.shared.subscriptions import ResourcesListChanged

    task_id, uri = waiting_task(base=URL_A)
    async with Client(URL_A, mode="2026-07-28") as client:
        async with client.listen(resource_subscriptions=[uri], resources_list_changed=True) as subscription:
            assert subscription.honored.resource_subscriptions == [uri]
            assert subscription.honored.resources_list_changed
            status, sent = a2a_send("done", task_id=task_id, base=URL_B)
            assert status == 200, sent
            with anyio.fail_after(20):
                event = await subscription.__anext__()
            assert event.uri == uri
            _, made = waiting_task(base=URL_B)
            with anyio.fail_after(20):
                # The first task's later updates may come first.
                while not isinstance(event, ResourcesListChanged):
                    event = await subscription.__anext__()
                    assert isinstance(event, ResourcesListChanged) or event.uri == uri, event
            listed = [r.uri for r in (await client.list_resources()).resources]
            assert made in listed, listed
