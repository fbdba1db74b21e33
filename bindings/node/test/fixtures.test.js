// Every vector in fixtures/*.json through agentlog.wire: the same files the Rust runner
// (wire/tests/fixtures.rs) reads, none skipped; a file without a runner here fails.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const util = require('node:util');
const { wire, AgentlogError } = require('..');

const dir = path.join(__dirname, '..', '..', '..', 'fixtures');
const hex = (s) => Buffer.from(s, 'hex');

/** Run `fn`, which must throw an AgentlogError; return it. */
function throws(fn) {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof AgentlogError, `not an AgentlogError: ${error}`);
    return error;
  }
  assert.fail('no error');
}

function taskStates(c) {
  const { input } = c;
  if ('code' in input) {
    if (c.error) {
      assert.equal(throws(() => wire.stateFromCode(input.code)).details.wireKind, c.error.kind);
      return;
    }
    assert.deepEqual({ ...wire.stateFromCode(input.code) }, c.expected);
    return;
  }
  if ('name' in input) {
    if (c.error) {
      assert.equal(c.error.kind, 'unknown_state_name');
      assert.equal(throws(() => wire.stateCode(input.name)).kind, 'invalid_params');
      return;
    }
    assert.equal(wire.stateCode(input.name), c.expected.code);
    return;
  }
  assert.equal(wire.canTransition(input.from, input.to), c.expected.legal);
}

function records(c) {
  if (c.error) {
    const error = throws(() => wire.decodeRecord(hex(c.input.hex)));
    assert.equal(error.details.wireKind, c.error.kind);
    assert.equal(error.code, -32602);
    return;
  }
  if ('hex' in c.input) {
    assert.deepEqual(wire.decodeRecord(hex(c.input.hex)), c.expected.record);
    return;
  }
  const bytes = wire.encodeRecord(c.input.record);
  assert.equal(bytes.toString('hex'), c.expected.hex);
  assert.deepEqual(wire.decodeRecord(bytes), c.input.record);
}

function members(c) {
  if (c.error) {
    const error = throws(() => wire.decodeMemberRecord(hex(c.input.hex)));
    assert.equal(error.details.wireKind, c.error.kind);
    return;
  }
  if ('records' in c.input) {
    assert.deepEqual(wire.foldMembers(c.input.partitions, c.input.records), c.expected);
    return;
  }
  const bytes = wire.encodeMemberRecord(c.input.record);
  assert.equal(bytes.toString('hex'), c.expected.hex);
  assert.deepEqual(wire.decodeMemberRecord(bytes), c.input.record);
  assert.equal(wire.memberSigningPayload(bytes).toString('hex'), c.expected.signingPayloadHex);
}

let signedFile;
function signedRecords(c) {
  const bytes = hex(c.input.hex);
  const record = wire.decodeRecord(bytes);
  assert.deepEqual(record, c.expected.record);
  assert.equal(wire.encodeRecord(record).toString('hex'), c.input.hex);
  assert.equal(wire.signingPayload(bytes).toString('hex'), c.expected.signingPayloadHex);
  assert.equal(wire.verifyRecord(bytes, JSON.stringify(signedFile.trust)), c.expected.verdict);
}

function jsonrpc(c) {
  const { input } = c;
  if ('header' in input) {
    if (c.error) {
      const error = throws(() => wire.protocolVersion(input.header));
      assert.equal(error.code, c.error.code);
      return;
    }
    assert.equal(wire.protocolVersion(input.header), c.expected.version);
    return;
  }
  if ('render' in input) {
    assert.deepEqual(wire.renderError(input.render), c.expected);
    return;
  }
  const body = 'body_hex' in input ? hex(input.body_hex) : input.body;
  if (c.error) {
    const error = throws(() => wire.parseRpcRequest(body));
    assert.equal(error.code, c.error.code);
    assert.equal(error.details.id, c.error.id);
    return;
  }
  assert.deepEqual({ ...wire.parseRpcRequest(body) }, c.expected);
}

function fold(c) {
  assert.deepEqual(wire.fold(c.input.records), c.expected);
}

function ids(c) {
  const i = c.input;
  if ('turn' in i) {
    assert.equal(wire.recordId(i.taskId, i.turn, i.attempt, i.sequence), c.expected.recordId);
    return;
  }
  assert.equal(wire.taskId(i.tenant, i.principal, i.messageId), c.expected.taskId);
  assert.equal(wire.contextId(i.tenant, i.principal, i.messageId), c.expected.contextId);
}

function v03(c) {
  if ('sendParams' in c.input) {
    if (c.error) {
      assert.equal(throws(() => wire.sendParamsFromV03(c.input.sendParams)).details.wireKind, c.error.kind);
      return;
    }
    assert.deepEqual(wire.sendParamsFromV03(c.input.sendParams), c.expected.v1);
    return;
  }
  const got = wire.taskToV03(c.input.task);
  assert.deepEqual(got, c.expected.v03);
  assert.deepEqual(wire.taskFromV03(got), c.input.task);
}

function cardSignatures(c) {
  const { input, expected } = c;
  if ('card' in input) {
    const payload = wire.cardPayload(input.card);
    assert.equal(payload, expected.payload);
    if (expected.header) {
      const { protected: protectedHeader } = input.card.signatures[0];
      assert.deepEqual(wire.decodeProtectedHeader(protectedHeader), expected.header);
      assert.equal(wire.signingInput(protectedHeader, payload), expected.signingInput);
    }
    return;
  }
  if ('jcs' in input) {
    assert.equal(wire.canonicalize(input.jcs), expected.canonical);
    return;
  }
  if (c.error) {
    assert.equal(throws(() => wire.decodeProtectedHeader(input.protected)).details.wireKind, c.error.kind);
    return;
  }
  const header = wire.decodeProtectedHeader(input.protected);
  assert.deepEqual(header, expected.header);
  assert.equal(wire.encodeProtectedHeader(header), input.protected);
}

// The trace context vectors are read here without the addon, as a reader in any language
// would (wire/README.md, "Trace context"): a standard media-type parser (util.MIMEType) for
// the parameters, then the W3C rules.
const PARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})/;
const STATE_KEY = /^[a-z0-9_\-*/@]{1,256}$/;

function w3cState(raw) {
  const state = (raw ?? '').trim();
  if (!state || state.length > 512) return '';
  const members = state.split(',').map((m) => m.replace(/^[ \t]+|[ \t]+$/g, '')).filter((m) => m);
  for (const member of members) {
    const at = member.indexOf('=');
    if (at < 0) return '';
    const key = member.slice(0, at);
    const value = member.slice(at + 1);
    const printable = [...value].every((c) => c >= ' ' && c <= '~' && c !== ',' && c !== '=');
    if (!STATE_KEY.test(key) || !value || value.length > 256 || !printable || value.endsWith(' ')) return '';
  }
  return members.length >= 1 && members.length <= 32 ? state : '';
}

function w3cContext(raw, state) {
  if (raw === undefined || raw === null) return null;
  const parent = raw.trim();
  const found = PARENT.exec(parent);
  if (!found || !/^[\x00-\x7f]*$/.test(parent)) return null;
  const [, version, traceId, parentId] = found;
  const rest = parent.slice(55);
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(parentId)) return null;
  if ((version === '00' && rest) || (rest && !rest.startsWith('-'))) return null;
  return { traceparent: parent.slice(0, 55), tracestate: w3cState(state) };
}

function mediaTypeParams(contentType) {
  return Object.fromEntries(new util.MIMEType(contentType).params);
}

function traceContext(c) {
  const { input, expected } = c;
  if ('traceparent' in input) {
    const context = w3cContext(input.traceparent, input.tracestate);
    assert.deepEqual(context, expected.context);
    if (context === null) {
      assert.equal(expected.contentType, null);
      return;
    }
    // The writer's form: the parent as a token, the state as a quoted-string.
    let contentType = `application/json; traceparent=${context.traceparent}`;
    if (context.tracestate) contentType += `; tracestate="${context.tracestate.replace(/[\\"]/g, '\\$&')}"`;
    assert.equal(contentType, expected.contentType);
    const params = mediaTypeParams(contentType);
    assert.deepEqual(w3cContext(params.traceparent, params.tracestate), context);
    return;
  }
  const params = mediaTypeParams(input.contentType);
  assert.deepEqual(params, expected.parameters);
  assert.deepEqual(w3cContext(params.traceparent, params.tracestate), expected.context);
}

const RUNNERS = {
  'task_states.json': taskStates,
  'records.json': records,
  'signed_records.json': signedRecords,
  'jsonrpc.json': jsonrpc,
  'fold.json': fold,
  'ids.json': ids,
  'v03.json': v03,
  'card_signatures.json': cardSignatures,
  'trace_context.json': traceContext,
  'members.json': members,
};

const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

test('every fixture file has a runner', () => {
  for (const file of files) assert.ok(RUNNERS[file], `no runner for fixtures/${file}: add one here`);
});

for (const file of files) {
  test(`fixtures/${file}`, () => {
    const parsed = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
    if (file === 'signed_records.json') signedFile = parsed;
    const run = RUNNERS[file];
    assert.ok(run, `no runner for fixtures/${file}`);
    assert.ok(parsed.cases.length > 0);
    for (const c of parsed.cases) {
      try {
        run(c);
      } catch (error) {
        error.message = `fixtures/${file}: ${c.description}: ${error.message}`;
        throw error;
      }
    }
  });
}

test('the vectors are all there', () => {
  let total = 0;
  let negative = 0;
  for (const file of files) {
    for (const c of JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')).cases) {
      total += 1;
      if (c.error) negative += 1;
    }
  }
  assert.ok(total >= 100, `${total} vectors`);
  assert.ok(negative >= 30, `${negative} negative vectors`);
});
