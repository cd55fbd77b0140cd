// A small Streamable HTTP MCP server (no dependencies) for what server-everything does not do:
// answers as plain JSON bodies, a 404 to a session it forgot (as the spec says a server must),
// and an SSE stream with the parts a client must skip or join (comments, other events,
// multi-line data, a notification before the answer, CRLF line ends).
// Usage: PORT=<port> node http-counter-server.js   (prints "listening" once it does)
// Tools: "incr" (a per-session counter), "forget" (drops every session), "tricky-sse",
// "headers" (the request headers it got, as text), "slow" (answers after 3 s).
// Every request to the path /broken gets a 500.
const http = require('http');
const crypto = require('crypto');
const sessions = new Map();

const tools = [
  { name: 'incr', description: 'Adds one', inputSchema: { type: 'object', properties: {} } },
  { name: 'forget', description: 'Forgets all sessions', inputSchema: { type: 'object' } },
  { name: 'tricky-sse', description: 'Answers over an awkward SSE stream',
    inputSchema: { type: 'object' } },
  { name: 'headers', description: 'Shows the request headers', inputSchema: { type: 'object' } },
  { name: 'slow', description: 'Answers after 3 s', inputSchema: { type: 'object' } },
];

function reply(res, status, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

function trickySse(res, id) {
  res.writeHead(200, { 'Content-Type': 'text/event-stream' });
  const answer = JSON.stringify({ jsonrpc: '2.0', id,
    result: { content: [{ type: 'text', text: 'tricky ok' }] } }, null, 1);
  res.write(': a comment, then a ping event\r\n\r\n');
  res.write('event: ping\r\ndata: {"not":"for the client"}\r\n\r\n');
  res.write('data: {"jsonrpc":"2.0","method":"notifications/message",\n' +
            'data: "params":{"level":"info","data":"hi"}}\n\n');
  // The answer spread over many data lines (pretty-printed JSON), sent in pieces.
  const lines = answer.split('\n').map((l) => 'data: ' + l).join('\n') + '\n\n';
  res.write(lines.slice(0, 10));
  setTimeout(() => res.end(lines.slice(10)), 50);
}

function handle(req, res, msg) {
  const sid = req.headers['mcp-session-id'];
  if (msg.method === 'initialize') {
    const id = crypto.randomUUID();
    sessions.set(id, { count: 0 });
    return reply(res, 200, { jsonrpc: '2.0', id: msg.id, result: {
      protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} },
      serverInfo: { name: 'http-counter', version: '1' } } }, { 'Mcp-Session-Id': id });
  }
  if (!sid) return reply(res, 400, { error: 'no session' });
  const s = sessions.get(sid);
  if (!s) return reply(res, 404, { error: 'session not found' });
  if (msg.id === undefined) return reply(res, 202);
  if (msg.method === 'tools/list')
    return reply(res, 200, { jsonrpc: '2.0', id: msg.id, result: { tools } });
  if (msg.method !== 'tools/call')
    return reply(res, 200, { jsonrpc: '2.0', id: msg.id,
      error: { code: -32601, message: 'no such method' } });
  const name = msg.params.name;
  if (name === 'tricky-sse') return trickySse(res, msg.id);
  if (name === 'slow') return setTimeout(() => reply(res, 200, { jsonrpc: '2.0', id: msg.id,
    result: { content: [{ type: 'text', text: 'late' }] } }), 3000);
  let text;
  if (name === 'incr') text = String(++s.count);
  else if (name === 'forget') { sessions.clear(); text = 'forgotten'; }
  else if (name === 'headers') text = JSON.stringify(req.headers);
  else return reply(res, 200, { jsonrpc: '2.0', id: msg.id,
    result: { isError: true, content: [{ type: 'text', text: 'no tool ' + name }] } });
  reply(res, 200, { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text }] } });
}

http.createServer((req, res) => {
  if (req.method === 'DELETE') {
    sessions.delete(req.headers['mcp-session-id']);
    return reply(res, 200);
  }
  if (req.method !== 'POST') return reply(res, 405);
  if (req.url === '/broken') {
    res.writeHead(500, { 'Content-Type': 'text/plain' });
    return res.end('internal trouble');
  }
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    let msg;
    try { msg = JSON.parse(body); } catch (e) { return reply(res, 400, { error: 'not JSON' }); }
    handle(req, res, msg);
  });
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
