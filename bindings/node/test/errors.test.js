'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { Workspace, AgentSbxError, errorCodes, codeName } = require('..');
const { testOnBackends, withWorkspace } = require('./helpers');

/** Asserts that promise rejects with an AgentSbxError of code name, returning the error. */
async function rejectsWith(promise, name, messagePattern) {
  const err = await promise.then(() => null, (e) => e);
  assert.ok(err instanceof AgentSbxError, `expected an AgentSbxError ${name}, got ${err}`);
  assert.equal(err.code, -errorCodes[name]);
  assert.equal(err.codeName, name);
  if (messagePattern) assert.match(err.message, messagePattern);
  return err;
}

test('a bad config is ECONFIG with a message naming the key', async () => {
  await rejectsWith(Workspace.open({ backend: 'local', no_such_key: 1 }), 'ECONFIG',
    /no_such_key/);
  await rejectsWith(Workspace.open({ backend: 'local', timeout_ms: 'soon' }), 'ECONFIG',
    /timeout_ms/);
  await rejectsWith(Workspace.open('{"backend":'), 'ECONFIG');
});

test('an unknown backend is reported with its name', async () => {
  await rejectsWith(Workspace.open({ backend: 'nosuchbackend' }), 'EBACKEND', /nosuchbackend/);
  await rejectsWith(Workspace.open({ backend: 'Bad-Name' }), 'ECONFIG', /backend/);
});

test('codeName and errorCodes follow agentsbx.h', () => {
  assert.equal(codeName(-1001), 'ECONFIG');
  assert.equal(codeName(1003), 'EESCAPE');
  assert.equal(codeName(-2), 'ENOENT');
  assert.equal(errorCodes.ESTATE, 1006);
  assert.equal(codeName(-4242), undefined);
});

testOnBackends(test, 'file errors carry their code and the library message',
  async (t, backend) => {
    await withWorkspace(backend, async (ws) => {
      await rejectsWith(ws.readFile('missing.txt'), 'ENOENT', /missing\.txt/);
      await rejectsWith(ws.readFile('../outside'), 'EESCAPE');
      await ws.writeFile('once.txt', 'x');
      await rejectsWith(ws.writeFile('once.txt', 'y', { exclusive: true }), 'EEXIST');
      await ws.mkdir('full');
      await ws.writeFile('full/f', 'x');
      await rejectsWith(ws.remove('full'), 'ENOTEMPTY');
    });
  });

testOnBackends(test, 'each failing call gets its own message, even when they run at once',
  async (t, backend) => {
    // The message is thread-local in C: it must be read on the thread that failed, before
    // another call there can replace it.
    await withWorkspace(backend, async (ws) => {
      const names = Array.from({ length: 12 }, (_, i) => `missing-${i}.txt`);
      const errors = await Promise.all(names.map((n) => ws.readFile(n).then(() => null, (e) => e)));
      errors.forEach((err, i) => {
        assert.ok(err instanceof AgentSbxError);
        assert.match(err.message, new RegExp(`missing-${i}\\.txt`));
      });
    });
  });

testOnBackends(test, 'a closed workspace refuses calls with ESTATE', async (t, backend) => {
  const ws = await Workspace.open({ backend });
  await ws.close();
  await rejectsWith(ws.exec('true'), 'ESTATE');
  await rejectsWith(ws.readFile('x'), 'ESTATE');
  await rejectsWith(ws.reset(), 'ESTATE');
});

test('arguments the C API cannot take are refused before the call', async () => {
  await withWorkspace('local', async (ws) => {
    await rejectsWith(ws.readFile('a\0b'), 'EINVAL', /NUL/);
    await assert.rejects(ws.exec([]), TypeError);
    await assert.rejects(ws.exec(42), TypeError);
    await assert.rejects(ws.writeFile('f', 42), TypeError);
  });
});
