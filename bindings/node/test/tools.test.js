'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { AgentSbxError } = require('..');
const { testOnBackends, withWorkspace, sleep } = require('./helpers');

testOnBackends(test, 'tools: the definitions and the instructions', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const tools = await ws.tools();
    const names = tools.map((tool) => tool.name);
    for (const name of ['Bash', 'Read', 'Write', 'Edit']) assert.ok(names.includes(name), name);
    for (const tool of tools) {
      assert.equal(typeof tool.description, 'string');
      assert.equal(tool.input_schema.type, 'object');
    }
    const text = await ws.instructions();
    assert.equal(typeof text, 'string');
    assert.ok(text.includes(ws.root), 'the instructions say where the workspace is');
  });
});

testOnBackends(test, 'tools: Bash, Write, Read and Edit round trip', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const session = { sessionId: 'round-trip' };
    let r = await ws.toolCall('Bash', { command: 'mkdir -p proj && cd proj && pwd' }, session);
    assert.equal(r.ok, true);
    assert.equal(r.output, `${ws.root}/proj\n`);
    assert.equal(r.metadata.exit_code, 0);

    // The session keeps the Bash working directory.
    r = await ws.toolCall('Write', { file_path: 'proj/hi.sh', content: 'echo Hello\n' }, session);
    assert.equal(r.ok, true, r.output);
    r = await ws.toolCall('Bash', { command: 'sh hi.sh' }, session);
    assert.equal(r.output, 'Hello\n');

    r = await ws.toolCall('Read', { file_path: 'proj/hi.sh' }, session);
    assert.equal(r.ok, true);
    assert.match(r.output, /1\techo Hello/);
    r = await ws.toolCall('Edit',
      { file_path: 'proj/hi.sh', old_string: 'Hello', new_string: 'Bye' }, session);
    assert.equal(r.ok, true, r.output);
    assert.equal((await ws.readFile('proj/hi.sh')).toString(), 'echo Bye\n');

    // Arguments as JSON text go to the library verbatim.
    r = await ws.toolCall('Bash', '{"command":"sh hi.sh"}', session);
    assert.equal(r.output, 'Bye\n');
  });
});

testOnBackends(test, 'tools: a tool error is a result, not an exception', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    let r = await ws.toolCall('Read', { file_path: 'does-not-exist.txt' });
    assert.equal(r.ok, false);
    assert.match(r.output, /does-not-exist\.txt/);
    r = await ws.toolCall('Read', { file_path: '../../etc/hostname' });
    assert.equal(r.ok, false);
    r = await ws.toolCall('Bash', { no_command: 1 });
    assert.equal(r.ok, false);
    r = await ws.toolCall('NoSuchTool', {});
    assert.equal(r.ok, false);
    assert.match(r.output, /NoSuchTool/);
    r = await ws.toolCall('Bash', '{not json');
    assert.equal(r.ok, false);
  });
});

testOnBackends(test, 'approval: deny and allow tool calls, execs and spawns',
  async (t, backend) => {
    await withWorkspace(backend, async (ws) => {
      const requests = [];
      // Calls made right after setApprovalHandler (not awaited) already go through it.
      ws.setApprovalHandler((request) => {
        requests.push(request);
        if (request.kind === 'tool' && request.class === 'write') return 'no writes in this test';
        if (request.kind === 'exec' && request.argv.includes('forbidden')) return false;
        return true;
      });
      const denied = await ws.toolCall('Write', { file_path: 'x.txt', content: 'x' });
      assert.equal(denied.ok, false);
      assert.match(denied.output, /no writes in this test/);
      await assert.rejects(ws.stat('x.txt'), { codeName: 'ENOENT' });

      const allowed = await ws.toolCall('Bash', { command: 'echo allowed' });
      assert.equal(allowed.ok, true);
      assert.equal(allowed.output, 'allowed\n');

      const err = await ws.exec(['echo', 'forbidden']).then(() => null, (e) => e);
      assert.ok(err instanceof AgentSbxError);
      assert.equal(err.codeName, 'EPERM');
      assert.match(err.message, /denied by the approval handler/);
      await assert.rejects(ws.spawn(['echo', 'forbidden']), { codeName: 'EPERM' });
      assert.equal((await ws.exec(['echo', 'fine'])).stdout.toString(), 'fine\n');

      const write = requests.find((r) => r.tool === 'Write');
      assert.deepEqual(write.arguments, { file_path: 'x.txt', content: 'x' });
      assert.ok(requests.some((r) => r.kind === 'exec' && r.argv[1] === 'forbidden'));

      await ws.setApprovalHandler(null);
      const unguarded = await ws.toolCall('Write', { file_path: 'x.txt', content: 'x' });
      assert.equal(unguarded.ok, true, unguarded.output);
    });
  });

testOnBackends(test, 'approval: async handlers, and handlers that fail deny',
  async (t, backend) => {
    await withWorkspace(backend, async (ws) => {
      await ws.setApprovalHandler(async (request) => {
        await sleep(50); // e.g. asking a person
        return { allow: request.argv?.[0] !== 'rm', reason: 'rm needs a human' };
      });
      assert.equal((await ws.exec(['echo', 'ok'])).exitCode, 0);
      await assert.rejects(ws.exec(['rm', '-rf', 'x']), /rm needs a human/);

      // Concurrent requests are each answered.
      const results = await Promise.all([1, 2, 3].map((i) => ws.exec(['echo', String(i)])));
      assert.deepEqual(results.map((r) => r.stdout.toString()), ['1\n', '2\n', '3\n']);

      await ws.setApprovalHandler(() => {
        throw new Error('policy service down');
      });
      await assert.rejects(ws.exec(['true']), /policy service down/);
      await ws.setApprovalHandler(() => 42);
      await assert.rejects(ws.exec(['true']), { codeName: 'EPERM' });
    });
  });

testOnBackends(test, 'tools: the git guard reports what a command planted', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const r = await ws.toolCall('Bash',
      { command: "mkdir -p r/.git/hooks && printf '#!/bin/sh\\n' > r/.git/hooks/pre-commit" });
    const report = await ws.gitQuarantine();
    if (backend === 'local') {
      // Commands run on the host there: nothing to guard.
      assert.deepEqual(report, { guarded: false, items: [] });
      return;
    }
    assert.equal(report.guarded, true);
    assert.deepEqual(report.items.map((i) => i.path), ['r/.git/hooks/pre-commit']);
    // In the state folder, outside the workdir: its host path.
    assert.ok(report.items[0].moved_to.startsWith('/') &&
      report.items[0].moved_to.includes('/quarantine/'));
    assert.equal(r.metadata.git_quarantined, 1);
  });
});
