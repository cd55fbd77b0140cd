'use strict';
// MCP servers from Node: the npm filesystem server (tests/mcp, installed by
// tests/mcp/install.sh) runs inside an ns workspace and lists the workspace's files.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { AgentSbxError, hasFunction } = require('..');
const { withWorkspace, unavailableReason, REPO_ROOT } = require('./helpers');

const SERVERS = path.join(REPO_ROOT, 'tests', 'mcp');
const FS_SERVER = 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js';

test('mcp: the filesystem server runs inside an ns workspace', async (t) => {
  const reason = await unavailableReason('ns');
  if (reason) return t.skip(reason);
  if (!(await hasFunction('sbx_mcp_add'))) return t.skip('this library has no sbx_mcp_add');
  if (!fs.existsSync(path.join(SERVERS, FS_SERVER))) {
    return t.skip('the npm MCP servers are not installed (sh tests/mcp/install.sh)');
  }
  const config = { ns: { binds: [{ source: SERVERS, dest: '/opt/mcp' }] } };
  await withWorkspace('ns', async (ws) => {
    await ws.writeFile('hello.txt', 'hi\n');
    await ws.mcpAdd('fs', { command: 'node', args: [`/opt/mcp/${FS_SERVER}`, '/workspace'] });
    assert.deepEqual((await ws.mcpList()).map((d) => d.name), ['fs']);
    const tools = (await ws.mcpTools('fs')).map((tool) => tool.name);
    assert.ok(tools.includes('list_directory'), tools.join(' '));
    const result = await ws.mcpCall('fs', 'list_directory', { path: '/workspace' });
    const text = result.content.map((c) => c.text || '').join('');
    assert.match(text, /hello\.txt/);
    // The same tool as the model sees it in the toolbox.
    assert.ok((await ws.tools()).some((tool) => tool.name === 'mcp__fs__list_directory'));
    const r = await ws.toolCall('mcp__fs__read_text_file', { path: '/workspace/hello.txt' });
    assert.equal(r.ok, true, r.output);
    assert.match(r.output, /hi/);
    await assert.rejects(ws.mcpAdd('bad name!', { command: 'node' }),
      (err) => err instanceof AgentSbxError && err.code < 0);
    await ws.mcpRemove('fs');
    assert.deepEqual(await ws.mcpList(), []);
  }, config);
});

test('mcp: a remote Streamable HTTP server, from a local workspace', async (t) => {
  if (!(await hasFunction('sbx_mcp_add'))) return t.skip('this library has no sbx_mcp_add');
  const { spawn } = require('node:child_process');
  const net = require('node:net');
  const port = await new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  const server = spawn(process.execPath, [path.join(SERVERS, 'http-counter-server.js')],
    { env: { PORT: String(port) }, stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => server.kill('SIGKILL'));
  await new Promise((resolve, reject) => {
    server.stdout.once('data', resolve);
    server.once('exit', () => reject(new Error('the HTTP MCP server exited')));
  });
  const url = `http://127.0.0.1:${port}/mcp`;
  await withWorkspace('local', async (ws) => {
    await ws.mcpAdd('web', { type: 'http', url, headers: { Authorization: 'Bearer js-token' } });
    const tools = (await ws.mcpTools('web')).map((tool) => tool.name);
    assert.ok(tools.includes('incr'), tools.join(' '));
    assert.equal((await ws.mcpCall('web', 'incr', {})).content[0].text, '1');
    const headers = (await ws.mcpCall('web', 'headers', {})).content[0].text;
    assert.match(headers, /js-token/);
    const r = await ws.toolCall('mcp__web__incr', {});
    assert.equal(r.ok, true, r.output);
    assert.equal(r.output, '2');
    await assert.rejects(ws.mcpAdd('bad', { type: 'http', url: 'ftp://example.com/' }),
      (err) => err instanceof AgentSbxError && /"url"/.test(err.message));
    await assert.rejects(ws.mcpAdd('bad', { type: 'http', url, headers: { 'X-A': '1\r\nEvil: 2' } }),
      (err) => err instanceof AgentSbxError && /"headers"/.test(err.message));
  });
});
