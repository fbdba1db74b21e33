// Interop: @a2a-js/sdk 1.3's card signature verifier against `agentlog serve --signing-key`.
//
// run.sh starts a second server (AGENTLOG_SIGNED_URL) whose card is signed by two keys made with
// `agentlog keygen` (as during a rotation), public halves in AGENTLOG_CARD_PUBLIC_KEY and
// AGENTLOG_CARD_NEXT_PUBLIC_KEY. Only the SDK's public API is used: `verifyAgentCardSignature`
// and `canonicalizeAgentCard`. The card is verified as fetched (raw JSON), as the SDK's own
// notes advise: a parsed card object can lose fields in canonicalization. Keys are Node
// KeyObjects, so nothing beyond the SDK is needed. The SDK's canonicalization is also checked
// against every payload of the shared vectors in fixtures/card_signatures.json.

import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import { canonicalizeAgentCard, verifyAgentCardSignature } from '@a2a-js/sdk';

const TIMEOUT = { timeout: 30_000 };

function env(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: run these tests through tests/interop/run.sh`);
  }
  return value;
}

const withSlash = (url) => (url.endsWith('/') ? url : `${url}/`);

const FIXTURES = new URL('../../../fixtures/card_signatures.json', import.meta.url);

/** The key's RFC 7638 JWK thumbprint: the kid agentlog names its keys by. */
function thumbprint(key) {
  const { crv, kty, x } = key.export({ format: 'jwk' });
  const canonical = JSON.stringify({ crv, kty, x });
  return createHash('sha256').update(canonical).digest('base64url');
}

const loadPublic = (path) => createPublicKey(readFileSync(path, 'utf8'));

/** `verify` with the SDK's console.debug line per signature that did not verify silenced. */
function quietly(verify) {
  return async (card) => {
    const debug = console.debug;
    console.debug = () => {};
    try {
      return await verify(card);
    } finally {
      console.debug = debug;
    }
  };
}

/** The SDK's verifier with a key store holding `keys`, found by kid. */
function verifierTrusting(...keys) {
  const byKid = new Map(keys.map((key) => [thumbprint(key), key]));
  return quietly(verifyAgentCardSignature(async (kid, jku) => {
    assert.equal(jku, undefined, 'agentlog signs without jku');
    const key = byKid.get(kid);
    // A throw here makes the verifier go on to the card's next signature.
    if (!key) throw new Error(`no trusted key ${kid}`);
    return key;
  }));
}

/** `verify(card)` must reject. */
async function rejects(verify, card) {
  await assert.rejects(quietly(verify)(card), /No valid signatures|No signatures/);
}

async function fetchCard(base) {
  const reply = await fetch(new URL('.well-known/agent-card.json', withSlash(base)));
  assert.equal(reply.status, 200);
  return reply.json();
}

describe('signed agent card (@a2a-js/sdk verifier)', () => {
  test('the served card verifies with the SDK verifier', TIMEOUT, async () => {
    const card = await fetchCard(env('AGENTLOG_SIGNED_URL'));
    assert.equal(card.signatures.length, 2);
    await verifierTrusting(loadPublic(env('AGENTLOG_CARD_PUBLIC_KEY')))(card);
  });

  test('either key of a rotation verifies, a stranger does not', TIMEOUT, async () => {
    const card = await fetchCard(env('AGENTLOG_SIGNED_URL'));
    const current = loadPublic(env('AGENTLOG_CARD_PUBLIC_KEY'));
    const next = loadPublic(env('AGENTLOG_CARD_NEXT_PUBLIC_KEY'));
    await verifierTrusting(current)(card);
    await verifierTrusting(next)(card);
    const { publicKey: stranger } = generateKeyPairSync('ed25519');
    await rejects(verifierTrusting(stranger), card);
  });

  test('a tampered card is rejected', TIMEOUT, async () => {
    const served = await fetchCard(env('AGENTLOG_SIGNED_URL'));
    const verify = verifierTrusting(
      loadPublic(env('AGENTLOG_CARD_PUBLIC_KEY')),
      loadPublic(env('AGENTLOG_CARD_NEXT_PUBLIC_KEY')),
    );
    await verify(structuredClone(served));
    for (const change of [
      (c) => (c.description += ' (tampered)'),
      (c) => (c.supportedInterfaces[0].url = 'https://attacker.example/'),
      (c) => c.skills.pop(),
      (c) => (c.capabilities.streaming = false),
    ]) {
      const tampered = structuredClone(served);
      change(tampered);
      await rejects(verify, tampered);
    }
  });

  test('an unsigned card has no signature to verify', TIMEOUT, async () => {
    const card = await fetchCard(env('AGENTLOG_URL'));
    await rejects(verifierTrusting(loadPublic(env('AGENTLOG_CARD_PUBLIC_KEY'))), card);
  });

  test('the shared vectors: same payloads, same verdicts', TIMEOUT, async () => {
    const { cases } = JSON.parse(readFileSync(FIXTURES, 'utf8'));
    const cards = cases.filter((c) => c.input.card);
    assert.ok(cards.length >= 5);
    for (const c of cards) {
      assert.equal(canonicalizeAgentCard(c.input.card), c.expected.payload, c.description);
      if (c.expected.valid === undefined) continue;
      const raw = Buffer.from(c.input.publicKeyHex, 'hex');
      // SPKI DER of an Ed25519 key: a fixed 12-byte prefix, then the 32 raw bytes.
      const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]);
      const key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
      const verify = verifyAgentCardSignature(async () => key);
      if (c.expected.valid) {
        await verify(c.input.card);
      } else {
        await rejects(verify, c.input.card);
      }
    }
  });
});
