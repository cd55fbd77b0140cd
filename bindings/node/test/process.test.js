'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { Workspace, AgentSbxError } = require('..');
const { testOnBackends, withWorkspace, readAll, sleep } = require('./helpers');

testOnBackends(test, 'spawn streams stdout and stderr and takes stdin', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const proc = await ws.spawn(['sh', '-c',
      'while read line; do echo "got $line"; done; echo done >&2; exit 4']);
    const out = readAll(proc.stdout);
    const err = readAll(proc.stderr);
    await proc.write('one\n');
    await proc.write(Buffer.from('two\n'));
    await proc.closeStdin();
    assert.deepEqual(await proc.wait(), { exitCode: 4, signal: 0 });
    assert.equal((await out).toString(), 'got one\ngot two\n');
    assert.equal((await err).toString(), 'done\n');
    await proc.close();
  });
});

testOnBackends(test, 'spawned output arrives while the process runs', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const proc = await ws.spawn('cat');
    const lines = [];
    const reader = (async () => {
      for await (const chunk of proc.stdout) {
        lines.push(chunk.toString());
        if (lines.join('').includes('ping-2')) return;
      }
    })();
    await proc.write('ping-1\n');
    // An echo, not a buffer flushed at exit: cat is still running.
    for (let i = 0; i < 100 && !lines.join('').includes('ping-1'); i++) await sleep(20);
    assert.equal(lines.join(''), 'ping-1\n');
    await proc.write('ping-2\n');
    await reader;
    await proc.closeStdin();
    assert.deepEqual(await proc.wait(), { exitCode: 0, signal: 0 });
    await proc.close();
  });
});

testOnBackends(test, 'kill, signals and wait timeouts', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const sleeper = await ws.spawn(['sleep', '60']);
    const early = await sleeper.wait({ timeoutMs: 200 }).then(() => null, (e) => e);
    assert.ok(early instanceof AgentSbxError);
    assert.equal(early.codeName, 'ETIMEDOUT');
    await sleeper.kill();
    assert.deepEqual(await sleeper.wait(), { exitCode: -1, signal: 9 });
    // wait() may be asked again once it has an answer.
    assert.deepEqual(await sleeper.wait(), { exitCode: -1, signal: 9 });
    await sleeper.close();

    const term = await ws.spawn(['sleep', '60']);
    await term.signal('SIGTERM');
    assert.deepEqual(await term.wait(), { exitCode: -1, signal: 15 });
    await assert.rejects(term.signal('SIGNOPE'), /unknown signal/);
    await term.close();
  });
});

testOnBackends(test, 'a spawn with merged stderr has one output stream', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const proc = await ws.spawn('echo out; echo err >&2', { mergeStderr: true, env: { X: '1' } });
    assert.equal(proc.stderr, null);
    assert.equal((await readAll(proc.stdout)).toString(), 'out\nerr\n');
    assert.deepEqual(await proc.wait(), { exitCode: 0, signal: 0 });
    await proc.close();
  });
});

testOnBackends(test, 'writing after stdin closed fails; close is idempotent', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const proc = await ws.spawn(['cat']);
    await proc.closeStdin();
    const err = await proc.write('late').then(() => null, (e) => e);
    assert.equal(err?.codeName, 'EBADF');
    await proc.wait();
    await Promise.all([proc.close(), proc.close()]);
    await proc.close();
    await assert.rejects(proc.kill(), /closed/);
  });
});

testOnBackends(test, 'closing the workspace ends its processes', async (t, backend) => {
  const ws = await Workspace.open({ backend });
  const proc = await ws.spawn(['sleep', '60']);
  const ended = readAll(proc.stdout);
  const start = Date.now();
  await ws.close();
  await ended;
  assert.ok(Date.now() - start < 15000);
  await proc.close();
});

testOnBackends(test, 'writing to a command that closed its stdin is EIO', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const proc = await ws.spawn(['sh', '-c', 'exec 0<&-; sleep 0.2']);
    await sleep(100);
    const big = Buffer.alloc(1 << 20);
    const err = await proc.write(big).then(() => null, (e) => e);
    assert.equal(err?.codeName, 'EIO');
    assert.equal((await proc.write('again').then(() => null, (e) => e))?.codeName, 'EIO');
    await proc.closeStdin();
    assert.deepEqual(await proc.wait(), { exitCode: 0, signal: 0 });
    assert.equal((await proc.wait({ timeoutMs: 0 })).exitCode, 0);
    await proc.close();
  });
});

// ---- a terminal (pty, library 1.7) ----

/** Reads stream until text has been seen (or it ends), leaving it open; resolves to all it
 * read (a for-await loop left early would destroy the stream). */
function readUntil(stream, text) {
  return new Promise((resolve) => {
    let seen = '';
    const done = () => {
      stream.off('data', onData);
      stream.off('end', done);
      stream.pause();
      resolve(seen);
    };
    const onData = (chunk) => {
      seen += chunk.toString();
      if (seen.includes(text)) done();
    };
    stream.on('data', onData);
    stream.once('end', done);
  });
}

testOnBackends(test, 'spawn with pty gives a terminal of the given size', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const proc = await ws.spawn('tty; test -t 0 && test -t 1 && echo BOTH-TTY; stty size',
      { pty: true, rows: 29, cols: 111 });
    assert.equal(proc.pty, true);
    assert.equal(proc.stderr, null);
    const out = (await readAll(proc.stdout)).toString();
    assert.match(out, /\/dev\/pts\//);
    assert.match(out, /BOTH-TTY/);
    assert.match(out, /29 111/);
    assert.deepEqual(await proc.wait(), { exitCode: 0, signal: 0 });
    await proc.close();
  });
});

testOnBackends(test, 'resize reaches a command on a pty as SIGWINCH', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const proc = await ws.spawn(
      "trap 'stty size; exit 0' WINCH; echo READY; while :; do sleep 0.1; done", { pty: true });
    const seen = await readUntil(proc.stdout, 'READY');
    assert.match(seen, /READY/);
    await proc.resize(41, 133);
    const rest = (await readAll(proc.stdout)).toString();
    assert.match(rest, /41 133/);
    assert.deepEqual(await proc.wait(), { exitCode: 0, signal: 0 });
    await assert.rejects(proc.resize(0, 10), /rows must be/);
    await proc.close();
  });
});

testOnBackends(test, 'typing at a pty, and closeStdin types end-of-file', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const proc = await ws.spawn(['cat'], { pty: true });
    await proc.write('hello pty\n');
    const seen = await readUntil(proc.stdout, 'hello pty\r\nhello pty');
    assert.match(seen, /hello pty\r\nhello pty/);
    await proc.closeStdin();
    assert.deepEqual(await proc.wait({ timeoutMs: 20000 }), { exitCode: 0, signal: 0 });
    await proc.close();
  });
});

test('pty options are checked', async () => {
  await withWorkspace('local', async (ws) => {
    await assert.rejects(ws.spawn(['true'], { pty: true, rows: -1 }), /rows: expected/);
    await assert.rejects(ws.spawn(['true'], { rows: 10 }), /opts\.rows/);
    const proc = await ws.spawn(['true']);
    await assert.rejects(proc.resize(10, 10), /no terminal/);
    await proc.wait();
    await proc.close();
  });
});
