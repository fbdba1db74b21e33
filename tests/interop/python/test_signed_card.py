"""Interop: a2a-sdk 1.3's card signature verifier against `agentlog serve --signing-key`.

run.sh starts a second server (AGENTLOG_SIGNED_URL) whose card is signed by two keys made with
`agentlog keygen` (as during a rotation), public halves in AGENTLOG_CARD_PUBLIC_KEY and
AGENTLOG_CARD_NEXT_PUBLIC_KEY, and whose card lists a JSONRPC 0.3 interface beside the 1.0
one. Only the SDK's public API is used: `create_signature_verifier`, `A2ACardResolver`,
`create_client(signature_verifier=...)`, `parse_agent_card`, and its typed errors. The same
verifier also checks the shared vectors in fixtures/card_signatures.json.
"""

import base64
import copy
import hashlib
import json
import os
import pathlib
import uuid

import httpx
import pytest

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from jwt.exceptions import InvalidKeyError

from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState
from a2a.utils.signing import (
    InvalidSignaturesError,
    NoSignatureError,
    create_signature_verifier,
)

from test_interop import CALL, timed

FIXTURES = pathlib.Path(__file__).resolve().parents[3] / 'fixtures' / 'card_signatures.json'


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f'{name} is not set: run these tests through tests/interop/run.sh')
    return value


@pytest.fixture(scope='session')
def signed_url() -> str:
    url = env('AGENTLOG_SIGNED_URL')
    return url if url.endswith('/') else url + '/'


def load_public(path: str) -> Ed25519PublicKey:
    return serialization.load_pem_public_key(pathlib.Path(path).read_bytes())


def thumbprint(key: Ed25519PublicKey) -> str:
    """The key's RFC 7638 JWK thumbprint: the kid agentlog names its keys by."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    x = base64.urlsafe_b64encode(raw).rstrip(b'=').decode()
    canonical = json.dumps({'crv': 'Ed25519', 'kty': 'OKP', 'x': x}, separators=(',', ':'), sort_keys=True)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b'=').decode()


def verifier_trusting(*keys: Ed25519PublicKey):
    """The SDK's verifier with a key store holding `keys`, found by kid; EdDSA only."""
    by_kid = {thumbprint(key): key for key in keys}

    def key_provider(kid, jku):
        assert jku is None, 'agentlog signs without jku'
        if kid not in by_kid:
            # A PyJWTError: the verifier goes on to the card's next signature.
            raise InvalidKeyError(f'no trusted key {kid}')
        return by_kid[kid]

    return create_signature_verifier(key_provider, algorithms=['EdDSA'])


async def fetch_card_json(base: str) -> dict:
    async with httpx.AsyncClient(timeout=20) as http:
        reply = await http.get(base + '.well-known/agent-card.json')
        reply.raise_for_status()
        return reply.json()


@timed
async def test_the_served_card_verifies_with_the_sdk_verifier(signed_url):
    verify = verifier_trusting(load_public(env('AGENTLOG_CARD_PUBLIC_KEY')))
    async with httpx.AsyncClient(timeout=20) as http:
        card = await A2ACardResolver(http, signed_url).get_agent_card(signature_verifier=verify)
    assert len(card.signatures) == 2
    assert [(i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [
        ('JSONRPC', '1.0'),
        ('HTTP+JSON', '1.0'),
        ('JSONRPC', '0.3'),
    ]


@timed
async def test_either_key_of_a_rotation_verifies(signed_url):
    card = parse_agent_card(await fetch_card_json(signed_url))
    current = load_public(env('AGENTLOG_CARD_PUBLIC_KEY'))
    following = load_public(env('AGENTLOG_CARD_NEXT_PUBLIC_KEY'))
    verifier_trusting(current)(card)
    verifier_trusting(following)(card)
    verifier_trusting(following, current)(card)
    stranger = Ed25519PrivateKey.generate().public_key()
    with pytest.raises(InvalidSignaturesError):
        verifier_trusting(stranger)(card)


@timed
async def test_a_tampered_card_is_rejected(signed_url):
    verify = verifier_trusting(
        load_public(env('AGENTLOG_CARD_PUBLIC_KEY')),
        load_public(env('AGENTLOG_CARD_NEXT_PUBLIC_KEY')),
    )
    served = await fetch_card_json(signed_url)
    verify(parse_agent_card(copy.deepcopy(served)))
    for change in (
        lambda c: c.update(description=c['description'] + ' (tampered)'),
        lambda c: c['supportedInterfaces'][0].update(url='https://attacker.example/'),
        lambda c: c['skills'].pop(),
        lambda c: c['capabilities'].update(streaming=False),
    ):
        tampered = copy.deepcopy(served)
        change(tampered)
        with pytest.raises(InvalidSignaturesError):
            verify(parse_agent_card(tampered))


@timed
async def test_an_unsigned_card_has_no_signature(base_url):
    verify = verifier_trusting(load_public(env('AGENTLOG_CARD_PUBLIC_KEY')))
    with pytest.raises(NoSignatureError):
        verify(parse_agent_card(await fetch_card_json(base_url)))


@timed
async def test_a_client_made_with_the_verifier_talks_to_the_agent(signed_url):
    verify = verifier_trusting(load_public(env('AGENTLOG_CARD_NEXT_PUBLIC_KEY')))
    config = ClientConfig(streaming=False)
    async with await create_client(signed_url, config, signature_verifier=verify) as client:
        message = Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text='signed hello')]
        )
        events = [
            ev async for ev in client.send_message(SendMessageRequest(message=message), context=CALL)
        ]
    task = events[-1].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert ''.join(p.text for a in task.artifacts for p in a.parts) == 'echo: signed hello'


def test_the_shared_vectors_verify_or_fail_as_they_say():
    cases = json.loads(FIXTURES.read_text())['cases']
    signed = [c for c in cases if 'valid' in c.get('expected', {})]
    assert len(signed) >= 2
    for case in signed:
        public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(case['input']['publicKeyHex']))
        verify = create_signature_verifier(lambda kid, jku, key=public: key, algorithms=['EdDSA'])
        card = parse_agent_card(copy.deepcopy(case['input']['card']))
        if case['expected']['valid']:
            verify(card)
        else:
            with pytest.raises(InvalidSignaturesError):
                verify(card)
