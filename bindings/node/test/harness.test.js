'use strict';
// examples/node/agent_loop.mjs must print the same transcript as examples/c/agent_loop.c.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { libraryInfo } = require('..');
const { scratchDir, unavailableReason, REPO_ROOT } = require('./helpers');

const SCRIPT = path.join(REPO_ROOT, 'examples', 'scripted_session.txt');
const NODE_HARNESS = path.join(REPO_ROOT, 'examples', 'node', 'agent_loop.mjs');

/** The C harness of the build whose library the tests use. */
async function cHarness() {
  const root = process.env.SBX_TEST_BUILD_ROOT || path.dirname((await libraryInfo()).path);
  const bin = path.join(root, 'examples', 'agent_loop');
  return fs.existsSync(bin) ? bin : null;
}

function run(file, args) {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 120000, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
}

async function compareOn(t, backend) {
  const reason = await unavailableReason(backend);
  if (reason) return t.skip(reason);
  const bin = await cHarness();
  if (!bin) return t.skip('the C harness examples/agent_loop is not built');
  // The transcript shows paths under the root (the host dir on local): both runs use the
  // same workdir, emptied in between.
  const workdir = path.join(scratchDir(), 'ws');
  const config = JSON.stringify({ backend, workdir });
  const c = await run(bin, [SCRIPT, config]);
  fs.rmSync(workdir, { recursive: true, force: true });
  const node = await run(process.execPath, [NODE_HARNESS, SCRIPT, config]);
  assert.equal(c.code, 0, c.stderr);
  assert.equal(node.code, 0, node.stderr);
  assert.match(c.stdout, /^session: \d+ tool calls, \d+ errors\n$/m);
  assert.equal(node.stdout, c.stdout);
}

test('the Node harness prints the C harness transcript [local]', (t) => compareOn(t, 'local'));
test('the Node harness prints the C harness transcript [ns]', (t) => compareOn(t, 'ns'));

test('the Node harness reads its config from $AGENTSBX_CONFIG and reports errors',
  async () => {
    const script = path.join(scratchDir(), 'one-call.txt');
    fs.writeFileSync(script, '# a comment\n\nBash {"command":"printf no-newline"}\n');
    const ok = await new Promise((resolve) => {
      execFile(process.execPath, [NODE_HARNESS, script], {
        env: { ...process.env, AGENTSBX_CONFIG: '{"backend":"local"}' },
      }, (err, stdout, stderr) => resolve({ err, stdout, stderr }));
    });
    assert.equal(ok.err, null, ok.stderr);
    assert.equal(ok.stdout, '>>> Bash {"command":"printf no-newline"}\n<<< ok\nno-newline\n\n' +
      'session: 1 tool calls, 0 errors\n');
    const bad = await run(process.execPath, [NODE_HARNESS, script, '{"backend":"local","x":1}']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /agent_loop: .*'x'/);
  });
