'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { testOnBackends, withWorkspace } = require('./helpers');

testOnBackends(test, 'exec runs an argv and a shell string', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const r = await ws.exec(['echo', 'hello', 'a b']);
    assert.equal(r.exitCode, 0);
    assert.equal(r.signal, 0);
    assert.equal(r.timedOut, false);
    assert.equal(r.truncated, false);
    assert.ok(Buffer.isBuffer(r.stdout) && Buffer.isBuffer(r.stderr));
    assert.equal(r.stdout.toString(), 'hello a b\n');
    assert.equal(typeof r.durationMs, 'number');

    const s = await ws.exec('echo out; echo err >&2; exit 3');
    assert.equal(s.exitCode, 3);
    assert.equal(s.stdout.toString(), 'out\n');
    assert.equal(s.stderr.toString(), 'err\n');
  });
});

testOnBackends(test, 'exec passes env, cwd and stdin', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const env = await ws.exec('echo "$A/$B"', { env: { A: 'x', B: 'y z' } });
    assert.equal(env.stdout.toString(), 'x/y z\n');
    const array = await ws.exec(['sh', '-c', 'echo "$A"'], { env: ['A=from-array'] });
    assert.equal(array.stdout.toString(), 'from-array\n');
    const cleared = await ws.exec(['/bin/sh', '-c', 'echo "${HOME:-none}:$ONLY"'],
      { env: { ONLY: '1' }, clearEnv: true });
    assert.equal(cleared.stdout.toString(), 'none:1\n');

    await ws.mkdir('sub/dir');
    const cwd = await ws.exec('pwd', { cwd: 'sub/dir' });
    assert.equal(cwd.stdout.toString(), `${ws.root}/sub/dir\n`);

    const binary = Buffer.from([0, 1, 2, 255, 10]);
    const cat = await ws.exec(['cat'], { stdin: binary });
    assert.deepEqual(cat.stdout, binary);
    const text = await ws.exec('tr a-z A-Z', { stdin: 'shout\n' });
    assert.equal(text.stdout.toString(), 'SHOUT\n');
  });
});

testOnBackends(test, 'exec reports timeouts, signals, truncation and missing programs',
  async (t, backend) => {
    await withWorkspace(backend, async (ws) => {
      const slow = await ws.exec(['sleep', '5'], { timeoutMs: 300 });
      assert.equal(slow.timedOut, true);
      assert.ok(slow.durationMs < 4000, `took ${slow.durationMs} ms`);

      const killed = await ws.exec('kill -TERM $$');
      assert.equal(killed.exitCode, -1);
      assert.equal(killed.signal, 15);

      const big = await ws.exec('head -c 100000 /dev/zero', { maxOutput: 1000 });
      assert.equal(big.truncated, true);
      assert.equal(big.stdout.length, 1000);
      assert.equal(big.stdoutDropped, 99000);
      assert.equal(big.stderrDropped, 0);

      const merged = await ws.exec('echo a; echo b >&2', { mergeStderr: true });
      assert.equal(merged.stdout.toString(), 'a\nb\n');
      assert.equal(merged.stderr.length, 0);

      const missing = await ws.exec(['no-such-program-here']);
      assert.equal(missing.exitCode, 127);
    });
  });

testOnBackends(test, 'exec streams output through onOutput as it arrives', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const events = [];
    const start = Date.now();
    const r = await ws.exec('echo first; sleep 0.5; echo second; echo problem >&2', {
      onOutput: (stream, chunk) => events.push({ stream, text: chunk.toString(),
        isBuffer: Buffer.isBuffer(chunk), at: Date.now() - start }),
    });
    const out = events.filter((e) => e.stream === 'stdout').map((e) => e.text).join('');
    const err = events.filter((e) => e.stream === 'stderr').map((e) => e.text).join('');
    assert.equal(out, 'first\nsecond\n');
    assert.equal(err, 'problem\n');
    assert.ok(events.every((e) => e.isBuffer));
    // "first" reached the callback before the command ended, not with the result.
    assert.ok(events[0].at < 400, `first chunk after ${events[0].at} ms`);
    assert.equal(r.stdout.toString(), 'first\nsecond\n');

    const uncaptured = await ws.exec('echo only-streamed', { capture: false,
      onOutput: (stream, chunk) => events.push({ stream, text: chunk.toString() }) });
    assert.equal(uncaptured.stdout.length, 0);
    assert.equal(events.at(-1).text, 'only-streamed\n');

    // A callback that throws fails the exec, not the process.
    await assert.rejects(ws.exec('echo x', { onOutput: () => { throw new Error('callback bug'); } }),
      /callback bug/);
  });
});

testOnBackends(test, 'the event loop stays responsive during a 1 s exec', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 50);
    try {
      const r = await ws.exec(['sleep', '1']);
      assert.equal(r.exitCode, 0);
    } finally {
      clearInterval(timer);
    }
    // A blocked loop would fire at most once, after the call; ~20 are due.
    assert.ok(ticks >= 10, `the timer fired ${ticks} times`);
  });
});

testOnBackends(test, 'several execs run at the same time', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const start = Date.now();
    const results = await Promise.all([1, 2, 3, 4].map((i) => ws.exec(`sleep 1; echo ${i}`)));
    assert.deepEqual(results.map((r) => r.stdout.toString()), ['1\n', '2\n', '3\n', '4\n']);
    assert.ok(Date.now() - start < 3500, `took ${Date.now() - start} ms`);
  });
});
