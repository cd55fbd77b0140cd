'use strict';
// The workspace manager from Node: policies, sharing, release, and reattach by id.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Manager, AgentSbxError, hasFunction } = require('..');
const { scratchDir } = require('./helpers');

test('manager: per-agent sharing, users kept apart, give back and get by id', async (t) => {
  if (!(await hasFunction('sbx_manager_open'))) return t.skip('no sbx_manager_open');
  const mgr = await Manager.open({ workspace: { backend: 'local' }, base_dir: scratchDir(),
    policy: 'per_agent' });
  try {
    const a = await mgr.get('alice', { agentId: 'coder', sessionId: 's1' });
    const b = await mgr.get('alice', { agentId: 'coder', sessionId: 's2' });
    const c = await mgr.get('bob', { agentId: 'coder', sessionId: 's1' });
    assert.equal(a.id, b.id);
    assert.notEqual(a.id, c.id);
    await a.exec('echo shared > note.txt');
    assert.equal((await b.readFile('note.txt')).toString(), 'shared\n');
    assert.notEqual((await c.exec('cat note.txt')).exitCode, 0);
    const ids = (await mgr.list()).map((w) => w.id);
    assert.ok(ids.includes(a.id) && ids.includes(c.id));
    await Promise.all([a.close(), b.close(), c.close()]);
    const again = await mgr.getById(a.id);
    assert.equal((await again.readFile('note.txt')).toString(), 'shared\n');
    await again.close();
    await assert.rejects(mgr.get('', { agentId: 'x' }), (e) => e instanceof AgentSbxError);
    assert.ok((await mgr.gc()) >= 0);
  } finally {
    await mgr.close();
  }
});
