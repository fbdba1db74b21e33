"""The web console in a real browser: headless Chromium driven over WebDriver (selenium)
against `agentlog serve` processes this module starts (AGENTLOG_BIN; run.sh sets it).

Every wait is a condition the page must reach (WebDriverWait polls it, with PATIENCE as an upper
bound against hangs); the one figure asserted is the issue's own: a record appended while its
task's page is open shows within a second of its append (its log timestamp against the
browser's clock when the row was added, same machine).
"""

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

PATIENCE = 60  # seconds: an upper bound against hangs, never a measure
ARTIFACTS = pathlib.Path(os.environ.get('CONSOLE_ARTIFACTS', 'target/console'))
ISSUER = 'https://issuer.console.example'
AUDIENCE = 'console-test'


def binary() -> str:
    path = os.environ.get('AGENTLOG_BIN')
    if not path:
        pytest.fail('AGENTLOG_BIN is not set: run this test through tests/console/run.sh')
    return path


def agentlog(*args: str) -> str:
    done = subprocess.run([binary(), '--color', 'never', *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


class Process:
    """An `agentlog` subcommand running in the background; `first_line` is what it printed
    once ready (serve's banner, worker's start line)."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [binary(), '--color', 'never', *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
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
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill9()


def rpc(base: str, method: str, params: dict, token: str | None = None, traceparent: str | None = None) -> dict:
    body = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': method, 'params': params}).encode()
    headers = {'Content-Type': 'application/json', 'A2A-Version': '1.0'}
    if token:
        headers['Authorization'] = f'Bearer {token}'
    if traceparent:
        headers['traceparent'] = traceparent
    request = urllib.request.Request(base, data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=PATIENCE) as response:
        answer = json.load(response)
    assert 'result' in answer, answer
    return answer['result']


def send(base: str, text: str, token: str | None = None, traceparent: str | None = None) -> str:
    """A message sent with returnImmediately; its task id."""
    params = {
        'message': {'messageId': f'm-{uuid.uuid4()}', 'role': 'ROLE_USER', 'parts': [{'text': text}]},
        'configuration': {'returnImmediately': True},
    }
    return rpc(base, 'SendMessage', params, token, traceparent)['task']['id']


@pytest.fixture(scope='module')
def browser():
    options = Options()
    options.binary_location = shutil.which('chromium') or '/usr/bin/chromium'
    for arg in ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                '--window-size=1400,900']:
        options.add_argument(arg)
    service = Service(executable_path=shutil.which('chromedriver') or '/usr/bin/chromedriver')
    driver = webdriver.Chrome(options=options, service=service)
    yield driver
    driver.quit()


@pytest.fixture(scope='module')
def demo():
    """`serve --demo` on loopback without auth: the console is on by default."""
    server = Process('serve', '--demo', '--agent', 'console-demo', '--listen', '127.0.0.1:0', '--log', 'memory://')
    assert 'console at ' in server.first_line, server.first_line
    yield server.url()
    server.stop()


def wait(driver, condition, what: str):
    try:
        # The list is redrawn every second: an element read mid-redraw is read again.
        return WebDriverWait(driver, PATIENCE, poll_frequency=0.05,
                             ignored_exceptions=[StaleElementReferenceException]).until(lambda d: condition(d))
    except TimeoutException:
        raise AssertionError(f'{what}: not seen within {PATIENCE} s') from None


def rows(driver, selector: str):
    return driver.find_elements(By.CSS_SELECTOR, selector)


def click(driver, selector: str) -> None:
    """Click what `selector` finds now (in one script: the list is redrawn every second)."""
    driver.execute_script('document.querySelector(arguments[0]).click()', selector)


def task_rows(driver) -> list[dict]:
    """The list's rows (read in one script: the list is redrawn every second)."""
    return driver.execute_script("""
        return [...document.querySelectorAll('#tasks tr.task')].map(r => ({
          id: r.dataset.taskId, agent: r.dataset.agent, text: r.textContent}));""")


def timeline(driver) -> list[dict]:
    """The task page's record rows, as the page marked them."""
    return driver.execute_script("""
        return [...document.querySelectorAll('#timeline tr.record')].map(r => ({
          offset: Number(r.dataset.offset), kind: r.dataset.kind, verdict: r.dataset.verdict,
          claim: r.dataset.claim, reason: r.dataset.reason, time: Number(r.dataset.time),
          shownAt: Number(r.dataset.shownAt), live: r.dataset.live === 'true', trace: r.dataset.trace,
          attempt: Number(r.children[4].textContent || 0),
          marks: [...r.querySelectorAll('.mark')].map(m => m.textContent)}));""")


def task_state(driver) -> str | None:
    """The state the task page's head shows (read in one script: the badge is replaced as
    the task changes)."""
    return driver.execute_script(
        "const b = document.querySelector('#task-state .state'); return b && b.dataset.state;")


def open_task(driver, base: str, agent: str, task_id: str) -> None:
    driver.get(f'{base}console#/task/{agent}/{task_id}')
    wait(driver, lambda d: d.find_element(By.ID, 'timeline').get_attribute('data-caught-up') == 'true',
         f'the records of {task_id}')


def test_the_list_shows_the_tasks_sent_and_counts_them_live(browser, demo):
    sent = [send(demo, f'hello {n}') for n in range(3)]
    browser.get(demo + 'console')
    for task_id in sent:
        wait(browser, lambda d, t=task_id: rows(d, f'tr.task[data-task-id="{t}"]'), f'task {task_id} in the list')
    # Sent while the page is open: it appears without a reload.
    late = send(demo, 'hello late')
    wait(browser, lambda d: rows(d, f'tr.task[data-task-id="{late}"]'), 'a task sent after the page opened')
    completed = lambda d: int(d.find_element(
        By.CSS_SELECTOR, '.count[data-state="TASK_STATE_COMPLETED"] b').text)
    wait(browser, lambda d: completed(d) >= 4, 'four completed tasks counted')
    # The state filter.
    failed = send(demo, 'fail')
    click(browser, '.count[data-state="TASK_STATE_FAILED"]')
    wait(browser, lambda d: rows(d, f'tr.task[data-task-id="{failed}"]'), 'the failed task under the filter')
    wait(browser, lambda d: not rows(d, f'tr.task[data-task-id="{late}"]'), 'completed tasks filtered out')
    click(browser, '.count[data-state="TASK_STATE_FAILED"]')
    wait(browser, lambda d: rows(d, f'tr.task[data-task-id="{late}"]'), 'the filter cleared')
    browser.save_screenshot(str(ARTIFACTS / 'list.png'))


def test_a_task_page_shows_its_records_in_order_within_a_second_of_their_append(browser, demo):
    trace_id = uuid.uuid4().hex
    task_id = send(demo, 'sleep 3', traceparent=f'00-{trace_id}-00f067aa0ba902b7-01')
    open_task(browser, demo, 'console-demo', task_id)
    wait(browser, lambda d: d.find_element(By.ID, 'trace').text == trace_id, 'the trace id in the head')
    wait(browser, lambda d: any(r['kind'] == 'terminal' for r in timeline(d)), 'the terminal record')
    records = timeline(browser)
    offsets = [r['offset'] for r in records]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets), offsets
    kinds = [r['kind'] for r in records]
    assert kinds[0] == 'command' and kinds[1] == 'claim' and kinds[-1] == 'terminal', kinds
    assert 'artifact' in kinds and 'status' in kinds, kinds
    assert all(r['verdict'] == 'applied' for r in records), records
    live = [r for r in records if r['live']]
    assert live, 'no record arrived while the page was open'
    late = [(r['offset'], r['shownAt'] - r['time']) for r in live if r['shownAt'] - r['time'] > 1000]
    assert not late, f'records shown more than a second after their append (offset, ms): {late}'
    wait(browser, lambda d: task_state(d) == 'TASK_STATE_COMPLETED', 'the head showing completed')
    browser.save_screenshot(str(ARTIFACTS / 'task.png'))


def test_cancel_works(browser, demo):
    task_id = send(demo, 'sleep 30')
    open_task(browser, demo, 'console-demo', task_id)
    wait(browser, lambda d: any(r['kind'] == 'claim' for r in timeline(d)), 'the worker\'s claim')
    button = browser.find_element(By.ID, 'cancel')
    assert button.is_enabled()
    button.click()
    wait(browser, lambda d: task_state(d) == 'TASK_STATE_CANCELED', 'the task canceled')
    wait(browser, lambda d: any(r['kind'] == 'cancel' and r['verdict'] == 'applied' for r in timeline(d)),
         'the cancel request on the timeline')
    assert not browser.find_element(By.ID, 'cancel').is_enabled()
    task = rpc(demo, 'GetTask', {'id': task_id})
    assert task['status']['state'] == 'TASK_STATE_CANCELED'


def test_an_mcp_call_is_a_task_of_its_tool_agent(browser, demo):
    body = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'tools/call',
                       'params': {'name': 'greet', 'arguments': {'name': 'Ada'}}}).encode()
    request = urllib.request.Request(demo + 'mcp', data=body, headers={
        'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream'})
    with urllib.request.urlopen(request, timeout=PATIENCE) as response:
        answer = json.load(response)
    assert answer['result']['content'][0]['text'] == 'Hello, Ada!', answer
    browser.get(demo + 'console')
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#f-binding option[value="mcp"]'), 'the page')
    browser.execute_script("const b = document.getElementById('f-binding'); b.value = 'mcp';"
                           "b.dispatchEvent(new Event('change'));")
    call = 'tools/call greet({"name":"Ada"})'
    wait(browser, lambda d: any('Hello, Ada!' in r['text'] for r in task_rows(d)), 'the MCP call in the list')
    listed = task_rows(browser)
    row = next(r for r in listed if 'Hello, Ada!' in r['text'])
    agent, task_id = row['agent'], row['id']
    assert agent.startswith('mcp.'), agent
    assert all(r['agent'].startswith('mcp.') for r in listed), listed
    open_task(browser, demo, agent, task_id)
    wait(browser, lambda d: any(r['kind'] == 'terminal' for r in timeline(d)), 'the call\'s end')
    records = timeline(browser)
    assert records[0]['kind'] == 'command' and records[-1]['kind'] == 'terminal', records
    assert call in browser.find_element(By.ID, 'timeline').text


@pytest.fixture(scope='module')
def secured():
    """`serve --demo --console` requiring JWTs: (base URL, alice's token, bob's token)."""
    work = tempfile.TemporaryDirectory()
    key = os.path.join(work.name, 'issuer.key')
    agentlog('keygen', '--out', key)
    server = Process('serve', '--demo', '--console', '--agent', 'console-auth', '--listen', '127.0.0.1:0',
                     '--log', 'memory://', '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE,
                     '--jwt-key', key + '.pub')
    tokens = [agentlog('token', '--key', key, '--issuer', ISSUER, '--audience', AUDIENCE, '--subject', who)
              for who in ['alice', 'bob']]
    yield server.url(), tokens[0], tokens[1]
    server.stop()
    work.cleanup()


def test_another_principals_task_is_not_shown(browser, secured):
    base, alice, bob = secured
    mine = send(base, 'hello from alice', alice)
    theirs = send(base, 'hello from bob', bob)
    browser.get(base + 'console')
    # No token yet: the page says so and asks for one.
    wait(browser, lambda d: d.find_element(By.ID, 'signin').is_displayed(), 'the sign-in form')
    token = browser.find_element(By.ID, 'token')
    token.clear()
    token.send_keys(alice)
    browser.find_element(By.CSS_SELECTOR, '#signin button').click()
    wait(browser, lambda d: rows(d, f'tr.task[data-task-id="{mine}"]'), 'alice\'s task')
    assert theirs not in browser.page_source
    browser.get(f'{base}console#/task/console-auth/{theirs}')
    browser.refresh()
    wait(browser, lambda d: d.find_element(By.ID, 'problem').is_displayed(), 'a problem shown')
    assert 'not found' in browser.find_element(By.ID, 'problem').text.lower()
    assert not timeline(browser)
    browser.execute_script('window.sessionStorage.clear()')


# --- a takeover: two worker processes over an Apache Iggy server -------------------------------

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
        pytest.skip('SKIPPED: the takeover test needs an iggy-server binary (AGENTLOG_IGGY_SERVER or PATH)')
    work = tempfile.TemporaryDirectory(prefix='agentlog-console-iggy-')
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


def test_a_takeover_is_marked(browser, iggy):
    agent = f'console-takeover-{uuid.uuid4().hex[:8]}'
    server = Process('serve', '--agent', agent, '--listen', '127.0.0.1:0', '--log', iggy)
    first = Process('worker', '--agent', agent, '--log', iggy, '--lease', '1s')
    second = None
    try:
        base = server.url()
        trace_id = uuid.uuid4().hex
        task_id = send(base, 'sleep 4', traceparent=f'00-{trace_id}-00f067aa0ba902b7-01')
        open_task(browser, base, agent, task_id)
        wait(browser, lambda d: any(r['kind'] == 'claim' for r in timeline(d)), 'the first worker\'s claim')
        # The first worker dies mid-turn holding the claim; the second takes the turn over once
        # the lease has run out.
        first.kill9()
        # Stuck: nobody renews the claim; the page says since when (what an operator sees).
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#claim.expired'), 'the lease shown run out')
        assert 'lease ran out' in browser.find_element(By.ID, 'claim').text
        browser.save_screenshot(str(ARTIFACTS / 'stuck.png'))
        second = Process('worker', '--agent', agent, '--log', iggy, '--lease', '1s')
        wait(browser, lambda d: any(r['claim'] == 'takeover' for r in timeline(d)), 'the takeover claim')
        wait(browser, lambda d: any(r['kind'] == 'terminal' for r in timeline(d)), 'the turn finished')
        records = timeline(browser)
        takeover = next(r for r in records if r['claim'] == 'takeover')
        assert 'takeover' in takeover['marks'], takeover
        claims = [r for r in records if r['kind'] == 'claim' and r['claim'] in ('first', 'takeover')]
        assert [c['claim'] for c in claims] == ['first', 'takeover'], claims
        offsets = [r['offset'] for r in records]
        assert offsets == sorted(offsets), offsets
        # The trace crosses the kill: the second worker's records carry a span of the same
        # trace, as the first's did (each attempt a span of its own).
        spans = {r['attempt']: r['trace'].split('-')[2] for r in records
                 if r['attempt'] and r['trace'] and r['kind'] != 'claim'}
        traced = [r for r in records if r['trace']]
        assert all(r['trace'].split('-')[1] == trace_id for r in traced), traced
        assert 2 in spans and spans[2] != '00f067aa0ba902b7', (spans, records)
        if 1 in spans:
            assert spans[1] != spans[2], spans
        wait(browser, lambda d: task_state(d) == 'TASK_STATE_COMPLETED', 'the head showing completed')
        browser.save_screenshot(str(ARTIFACTS / 'takeover.png'))
    finally:
        for process in [second, first, server]:
            if process:
                process.stop()
