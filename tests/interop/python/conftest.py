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


@pytest.fixture(params=['JSONRPC', 'HTTP+JSON', 'GRPC'])
def config(request):
    """A ClientConfig factory for one binding: the client may use only that one of the card's
    interfaces (each test that takes it runs once per binding; gRPC over a plaintext channel to
    the card's `host:port`)."""
    import grpc

    from a2a.client import ClientConfig

    def make(**settings) -> ClientConfig:
        if request.param == 'GRPC':
            settings.setdefault('grpc_channel_factory', grpc.aio.insecure_channel)
        return ClientConfig(supported_protocol_bindings=[request.param], **settings)

    make.binding = request.param
    return make
