#!/usr/bin/env node
// An agent loop with a scripted model: the harness gives the "model" the workspace's tools and
// instructions, then runs each tool call the model makes and prints the call and its result.
// The model is a file of tool calls (examples/scripted_session.txt: a tool name, a space, the
// arguments as JSON, one call per line), so it runs anywhere without an API key. It prints the
// same transcript as examples/c/agent_loop.c for the same file.
//
//   node examples/node/agent_loop.mjs [SCRIPT] [CONFIG_JSON]
//
// CONFIG_JSON defaults to $AGENTSBX_CONFIG, then {"backend":"ns"}.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The installed package if there is one (npm install ./bindings/node), else the checkout's.
const { Workspace } = await import('agentsbx').catch((err) => {
  if (err.code !== 'ERR_MODULE_NOT_FOUND') throw err;
  return import('../../bindings/node/index.mjs');
});

const SESSION = 'demo';
const SCRIPT_DEFAULT = fileURLToPath(new URL('../scripted_session.txt', import.meta.url));

/** The script's tool calls: [{ name, args }] with args as the text the model wrote. */
function readScript(path) {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const space = line.indexOf(' ');
      return space < 0 ? { name: line, args: '{}' }
        : { name: line.slice(0, space), args: line.slice(space + 1) };
    });
}

/** A result as "<<< ok|error", the output (ending in a newline), a blank line. */
function printResult(result) {
  const output = result.output ?? '';
  const newline = output !== '' && !output.endsWith('\n') ? '\n' : '';
  process.stdout.write(`<<< ${result.ok ? 'ok' : 'error'}\n${output}${newline}\n`);
}

async function main(argv) {
  const scriptPath = argv[0] ?? SCRIPT_DEFAULT;
  const config = argv[1] ?? process.env.AGENTSBX_CONFIG ?? '{"backend":"ns"}';
  let calls;
  try {
    calls = readScript(scriptPath);
  } catch (err) {
    console.error(`${scriptPath}: ${err.message}`);
    return 2;
  }
  let ws;
  try {
    ws = await Workspace.open(config);
  } catch (err) {
    console.error(`agent_loop: ${err.message}`);
    return 1;
  }
  let rc = 0;
  let done = 0;
  let errors = 0;
  try {
    // What a real harness hands the model with its first request.
    await ws.tools();
    for (const call of calls) {
      done++;
      // Printed before the call runs, so a failing call shows what was asked.
      process.stdout.write(`>>> ${call.name} ${call.args}\n`);
      let result;
      try {
        result = await ws.toolCall(call.name, call.args, { sessionId: SESSION });
      } catch (err) {
        console.error(`agent_loop: ${call.name}: ${err.message}`);
        rc = 1;
        break;
      }
      if (!result.ok) errors++;
      printResult(result);
    }
  } catch (err) {
    console.error(`agent_loop: ${err.message}`);
    rc = 1;
  }
  process.stdout.write(`session: ${done} tool calls, ${errors} errors\n`);
  try {
    await ws.close();
  } catch (err) {
    if (rc === 0) rc = 1;
  }
  return rc;
}

process.exitCode = await main(process.argv.slice(2));
