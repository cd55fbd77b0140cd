'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { testOnBackends, withWorkspace } = require('./helpers');

testOnBackends(test, 'files: write, read, stat, list, mkdir, remove', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const bytes = Buffer.from([0, 1, 2, 3, 254, 255]);
    await ws.writeFile('deep/er/data.bin', bytes, { mkdirs: true });
    assert.deepEqual(await ws.readFile('deep/er/data.bin'), bytes);
    await ws.writeFile('note.txt', 'héllo\n', { mode: 0o600 });
    assert.equal((await ws.readFile(`${ws.root}/note.txt`)).toString(), 'héllo\n');
    await ws.writeFile('empty', '');
    assert.equal((await ws.readFile('empty')).length, 0);

    const st = await ws.stat('note.txt');
    assert.equal(st.type, 'file');
    assert.equal(st.size, Buffer.byteLength('héllo\n'));
    assert.equal(st.mode & 0o777, 0o600);
    assert.ok(st.mtime instanceof Date && Math.abs(st.mtimeMs - Date.now()) < 60000);
    assert.equal((await ws.stat('deep')).type, 'dir');

    await ws.mkdir('a/b/c');
    assert.equal((await ws.stat('a/b/c')).type, 'dir');
    const listing = await ws.listDir('deep/er');
    assert.deepEqual(listing.map((e) => [e.name, e.type, e.size]), [['data.bin', 'file', 6]]);
    const names = (await ws.listDir()).map((e) => e.name);
    for (const name of ['a', 'deep', 'empty', 'note.txt']) assert.ok(names.includes(name), name);

    // The command side sees what the file API wrote, and the other way round.
    assert.equal((await ws.exec('cat note.txt')).stdout.toString(), 'héllo\n');
    await ws.exec('echo from-shell > shell.txt');
    assert.equal((await ws.readFile('shell.txt')).toString(), 'from-shell\n');

    await ws.remove('note.txt');
    await assert.rejects(ws.stat('note.txt'), { codeName: 'ENOENT' });
    await ws.remove('a', { recursive: true });
    await assert.rejects(ws.stat('a'), { codeName: 'ENOENT' });
  });
});

testOnBackends(test, 'files: a large file round-trips', async (t, backend) => {
  await withWorkspace(backend, async (ws) => {
    const big = Buffer.alloc(8 << 20);
    for (let i = 0; i < big.length; i += 4096) big[i] = i & 0xff;
    await ws.writeFile('big.bin', big);
    assert.ok((await ws.readFile('big.bin')).equals(big));
  });
});
