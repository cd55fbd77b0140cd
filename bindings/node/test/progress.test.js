'use strict';
// Progress of a slow open (sbx_workspace_open_with): the docker backend's image pull, served
// by the fake engine of the C suites (tests/docker/fake-engine.py), which answers a pull with a
// recorded stream and garbage between its lines. No real engine is needed.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Workspace, AgentSbxError } = require('..');
const { stateDir } = require('./helpers');

const REPO = path.resolve(__dirname, '..', '..', '..');

/** A short scratch directory (the control sockets below the workdir have 108-byte paths). */
function shortDir() {
  const dir = fs.mkdtempSync('/tmp/sbx-node-');
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function withFakeEngine(fn) {
  const dir = shortDir();
  const sock = path.join(dir, 'engine.sock');
  const engine = spawn('python3', [path.join(REPO, 'tests/docker/fake-engine.py'), sock],
    { stdio: 'inherit' });
  try {
    for (let i = 0; i < 500 && !fs.existsSync(sock); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(fs.existsSync(sock), 'the fake engine did not start');
    const workdir = path.join(dir, 'ws');
    fs.mkdirSync(workdir);
    await fn((image) => ({ backend: 'docker', workdir,
      docker: { image, host: `unix://${sock}`, exec: 'api' } }), workdir);
  } finally {
    engine.kill('SIGKILL');
  }
}

test('the pull\'s events reach onProgress, in order, before open resolves', async () => {
  await withFakeEngine(async (config) => {
    const events = [];
    const ws = await Workspace.open(config('fakepull/image:v1'),
      { onProgress: (e) => events.push(e) });
    const seenAtOpen = events.length;
    await ws.close();
    assert.equal(seenAtOpen, events.length);
    assert.deepEqual(events[0], { phase: 'pull', subject: 'fakepull/image:v1', item: 'v1',
      status: 'Pulling from fakepull/image', current: 0, total: 0 });
    assert.deepEqual(events.filter((e) => e.status === 'Pull complete').map((e) => e.item),
      ['56f0be66f5a3', '2335174eaf5d']);
    assert.deepEqual(events.filter((e) => e.status === 'Downloading')
      .map((e) => [e.current, e.total]), [[108, 108], [36564, 1027922], [1027922, 1027922]]);
    assert.equal(events.at(-2).status, 'Status: Downloaded newer image for fakepull/image:v1');
  });
});

test('a failed pull rejects with the registry\'s words', async () => {
  await withFakeEngine(async (config) => {
    const events = [];
    await assert.rejects(Workspace.open(config('fakepull/error:v1'),
      { onProgress: (e) => events.push(e) }), (err) => err instanceof AgentSbxError &&
      /pull image 'fakepull\/error:v1': unknown blob/.test(err.message));
    assert.ok(events.some((e) => e.status === 'Pulling fs layer'));
  });
});

test('a throwing onProgress rejects the open and closes the workspace', async () => {
  await withFakeEngine(async (config, workdir) => {
    let calls = 0;
    await assert.rejects(Workspace.open(config('fakepull/image:v1'), { onProgress: () => {
      calls++;
      throw new Error('listener broke');
    } }), /listener broke/);
    assert.equal(calls, 1);
    const left = fs.readdirSync(path.join(stateDir(workdir), 'docker'))
      .filter((n) => n.endsWith('.sock'));
    assert.deepEqual(left, []);
    await assert.rejects(Workspace.open({}, { onProgress: 5 }), TypeError);
  });
});
