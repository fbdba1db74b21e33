"""Shared fixtures: the agentlog server under test is named by AGENTLOG_URL (run.sh starts it)."""

import os

import pytest


@pytest.fixture(scope='session')
def base_url() -> str:
    url = os.environ.get('AGENTLOG_URL')
    if not url:
        pytest.fail(
            'AGENTLOG_URL is not set: run these tests through tests/interop/run.sh, '
            'or start `agentlog serve --demo --listen 127.0.0.1:0 --log memory://` '
            'and export the URL it prints'
        )
    return url if url.endswith('/') else url + '/'
