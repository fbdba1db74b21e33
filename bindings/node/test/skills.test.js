// Skills from JS: one worker, a handler per skill chosen by the message's metadata
// (`agentlog.skill`, or `skillId`), the default handler for the rest, a tool answering its
// skill too, and a skill's input schema (the card's `inputSchema`) refusing bad data before
// anything is written.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { openLog, Bridge, Worker, AgentlogError } = require('..');
const { send } = require('./helpers');

const CARD = {
  name: 'Words',
  skills: [
    {
      id: 'upper', name: 'Upper', description: 'Upper-cases text', tags: ['text'],
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    },
    { id: 'count', name: 'Count', description: 'Counts words', tags: ['text'] },
    {
      id: 'shout', name: 'Shout', description: 'A tool as a skill', tags: ['text'],
      inputSchema: { type: 'object', required: ['text'] },
    },
  ],
};

function said(answer) {
  return answer.task.status.message.parts[0].text;
}

test('each skill runs its handler, and its schema checks the data first', { timeout: 60000 }, async () => {
  const log = await openLog('memory://');
  const bridge = await Bridge.open(log, 'words', { card: CARD });
  assert.deepEqual(bridge.agentCard.skills.map((s) => s.id), ['upper', 'count', 'shout']);
  assert.ok(!JSON.stringify(bridge.agentCard).includes('inputSchema'));
  const worker = await Worker.start(log, 'words', async (task) => {
    await task.complete(`default: ${task.text} (${task.skill})`);
  }, {
    bridge,
    skills: {
      upper: async (task) => {
        const data = task.message.parts.find((p) => p.data).data;
        await task.complete(`${task.skill}: ${data.text.toUpperCase()}`);
      },
      count: async (task) => task.complete(`${task.skill}: ${task.text.split(' ').length}`),
    },
    tools: { shout: async (call) => ({ content: [{ type: 'text', text: `${call.arguments.text}!` }] }) },
  });
  try {
    const upper = send('', { metadata: { 'agentlog.skill': 'upper' } });
    upper.message.parts = [{ data: { text: 'hi' } }];
    assert.equal(said(await bridge.sendMessage(upper)), 'upper: HI');
    assert.equal(said(await bridge.sendMessage(send('one two three', { metadata: { skillId: 'count' } }))), 'count: 3');
    assert.equal(said(await bridge.sendMessage(send('plain'))), 'default: plain (null)');
    const shout = send('', { metadata: { 'agentlog.skill': 'shout' } });
    shout.message.parts = [{ data: { text: 'hey' } }];
    const { task } = await bridge.sendMessage(shout);
    assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
    assert.equal(task.artifacts[0].artifactId, 'shout');
    assert.equal(task.artifacts[0].parts[0].text, 'hey!');

    const bad = send('', { metadata: { 'agentlog.skill': 'upper' } });
    bad.message.parts = [{ data: { text: 7 } }];
    await assert.rejects(bridge.sendMessage(bad), (e) => e instanceof AgentlogError
      && e.kind === 'invalid_params' && e.details.field === 'message.parts[0].data/text');
    await assert.rejects(bridge.sendMessage(send('x', { metadata: { skillId: 'nope' } })),
      (e) => e.kind === 'invalid_params' && /upper, count, shout/.test(e.message));
    // Refused before anything was written: four tasks, the ones answered above.
    assert.equal((await bridge.listTasks({})).tasks.length, 4);
  } finally {
    await worker.close();
    await log.close();
  }
});

test('skills must be functions', async () => {
  const log = await openLog('memory://');
  try {
    await assert.rejects(Worker.start(log, 'words', { skills: { upper: 'nope' } }),
      (e) => e.kind === 'invalid_params' && /skill "upper" must be a function/.test(e.message));
    await assert.rejects(Worker.start(log, 'words', { skills: null }), (e) => e.kind === 'invalid_params');
  } finally {
    await log.close();
  }
});
