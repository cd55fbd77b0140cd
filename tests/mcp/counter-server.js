// A minimal stateful MCP server (stdio, no dependencies): "incr" adds one to a counter that
// lives in this process, so a test can tell whether two callers share a server process.
// With MODE=crash-on-call it exits on every tools/call (after initialize worked).
const readline = require('readline');
let count = 0;
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize')
    return send({ id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'counter', version: '1' } } });
  if (m.method === 'tools/list') {
    // Two pages, to exercise the client's cursor handling.
    if (!m.params || !m.params.cursor)
      return send({ id: m.id, result: { tools: [{ name: 'incr', description: 'Adds one',
        inputSchema: { type: 'object', properties: {} } }], nextCursor: 'page2' } });
    return send({ id: m.id, result: { tools: [{ name: 'pid', description: 'Its pid',
      inputSchema: { type: 'object', properties: {} } }] } });
  }
  if (m.method === 'tools/call') {
    if (process.env.MODE === 'crash-on-call') {
      process.stderr.write('counter: crashing as asked\n');
      process.exit(3);
    }
    const text = m.params.name === 'pid' ? String(process.pid) : String(++count);
    return send({ id: m.id, result: { content: [{ type: 'text', text }] } });
  }
  send({ id: m.id, error: { code: -32601, message: 'no such method' } });
});
