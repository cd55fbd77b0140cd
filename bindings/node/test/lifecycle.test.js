'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const agentsbx = require('..');
const { Workspace, AgentSbxError } = agentsbx;
const { testOnBackends, scratchDir } = require('./helpers');

const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');

testOnBackends(test, 'a workspace describes itself', async (t, backend) => {
  const ws = await Workspace.open({ backend, id: 'node-test-id' });
  try {
    assert.equal(ws.id, 'node-test-id');
    assert.equal(ws.backend, backend);
    assert.equal(typeof ws.root, 'string');
    assert.equal((await ws.exec('pwd')).stdout.toString(), `${ws.root}\n`);
    assert.ok(ws.auditPath === null || fs.existsSync(ws.auditPath), ws.auditPath);
    assert.equal(ws.closed, false);
  } finally {
    await ws.close();
  }
  assert.equal(ws.closed, true);
});

testOnBackends(test, 'close is idempotent and asyncDispose closes', async (t, backend) => {
  const ws = await Workspace.open(JSON.stringify({ backend }));
  const first = ws.close();
  assert.equal(ws.close(), first);
  await Promise.all([first, ws.close()]);
  await ws.close();

  const disposed = await Workspace.open({ backend });
  assert.equal(typeof disposed[asyncDispose], 'function');
  await disposed[asyncDispose]();
  assert.equal(disposed.closed, true);
  await assert.rejects(disposed.exec('true'), (err) => err instanceof AgentSbxError &&
    err.codeName === 'ESTATE');
});

testOnBackends(test, 'close waits for a running exec', async (t, backend) => {
  const ws = await Workspace.open({ backend });
  const running = ws.exec('sleep 0.5; echo finished');
  await new Promise((resolve) => setTimeout(resolve, 100));
  await ws.close();
  const r = await running;
  assert.equal(r.stdout.toString(), 'finished\n');
});

testOnBackends(test, 'reset returns the files to the baseline', async (t, backend) => {
  const ws = await Workspace.open({ backend });
  try {
    await ws.writeFile('scratch.txt', 'x');
    const id = ws.id;
    await ws.reset();
    assert.equal(ws.id, id);
    await assert.rejects(ws.stat('scratch.txt'), { codeName: 'ENOENT' });
    assert.equal((await ws.exec('echo after-reset')).stdout.toString(), 'after-reset\n');
  } finally {
    await ws.close();
  }
});

test('a host workdir keeps its files after close', async () => {
  const dir = path.join(scratchDir(), 'kept');
  const ws = await Workspace.open({ backend: 'local', workdir: dir });
  await ws.writeFile('stays.txt', 'still here');
  await ws.close();
  assert.equal(fs.readFileSync(path.join(dir, 'stays.txt'), 'utf8'), 'still here');
});

test('the ES module entry exports the same objects', async () => {
  const esm = await import('../index.mjs');
  assert.equal(esm.Workspace, Workspace);
  assert.equal(esm.AgentSbxError, AgentSbxError);
  assert.equal(esm.default, agentsbx);
});

test('the library is found and described', async () => {
  const info = await agentsbx.libraryInfo();
  assert.match(info.version, /^\d+\.\d+\.\d+/);
  // One version: the package is the library it binds, and the number encodes the string.
  assert.equal(info.version, require('../package.json').version);
  const [major, minor, patch] = info.version.split('.').map(Number);
  assert.equal(info.number, (major << 16) | (minor << 8) | patch);
  assert.equal(info.abi, 1);
  assert.equal(await agentsbx.hasFunction('sbx_exec'), true);
  assert.equal(await agentsbx.hasFunction('sbx_no_such_function'), false);
  const backends = await agentsbx.probeBackends();
  assert.ok(backends.some((b) => b.backend === 'local' && b.available));
});

test('a program that closes its workspaces exits by itself', async () => {
  // Idle worker threads (and the approval thread) must not hold the process open.
  const script = `
    const { Workspace } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    (async () => {
      const ws = await Workspace.open({ backend: 'local' });
      await ws.setApprovalHandler(() => true);
      const p = await ws.spawn(['cat']);
      await p.closeStdin();
      await p.wait();
      await ws.exec('true');
      await ws.close();
      console.log('closed');
    })();`;
  const { stdout } = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { timeout: 20000 }, (err, out, errOut) =>
      (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve({ stdout: out })));
  });
  assert.equal(stdout, 'closed\n');
});

test('network: setNetwork on an allowlist workspace', async (t) => {
  const { unavailableReason: why } = require('./helpers');
  const reason = await why('ns');
  if (reason) return t.skip(reason);
  const { Workspace: W, AgentSbxError: E } = require('..');
  const ws = await W.open({ backend: 'ns', network: { mode: 'allowlist', allow: ['example.org'] } });
  try {
    assert.match((await ws.exec('env')).stdout.toString(), /HTTPS_PROXY=/);
    await ws.setNetwork({ mode: 'allowlist', allow: ['example.com'], deny: [] });
    await assert.rejects(ws.setNetwork({ mode: 'allowlist', allow: ['bad host name!'] }),
      (err) => err instanceof E && err.codeName === 'ECONFIG');
  } finally {
    await ws.close();
  }
});
