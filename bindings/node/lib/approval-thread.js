'use strict';
// The thread that owns the approval callback. The library calls the handler on whichever
// thread makes a tool call, exec or spawn — here, one of the worker threads, blocked inside
// that call. koffi runs a registered JS callback on the thread that registered it, so it is
// registered here, on a thread that never calls the library and so is always free to run it.
// It relays each request to the main thread, where the user's handler runs (and may take its
// time, e.g. asking a person), and blocks — only this thread — until the answer comes back.
// The worker that made the call stays blocked in C the whole time, as the C API requires.

const { parentPort, receiveMessageOnPort } = require('node:worker_threads');
const { koffi } = require('./native');

koffi.proto('int sbx_approval_fn(void *userdata, const char *request_json, void *reason, ' +
  'size_t reason_len)');

const SBX_APPROVE = 0;
const SBX_DENY = 1;

let replies = null;   // MessagePort the main thread answers on
let signal = null;    // Int32Array over a SharedArrayBuffer: bumped after each answer
let nextRequest = 1;

/** Writes reason as a NUL-terminated string into the library's buffer, cut to fit. */
function writeReason(ptr, capacity, reason) {
  const cap = Number(capacity);
  if (!ptr || cap < 1) return;
  const view = new Uint8Array(koffi.view(ptr, cap));
  let bytes = Buffer.from(String(reason ?? ''), 'utf8');
  if (bytes.length > cap - 1) {
    // Cut at a character boundary: never leave half a UTF-8 sequence.
    let end = cap - 1;
    while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
    bytes = bytes.subarray(0, end);
  }
  view.set(bytes);
  view[bytes.length] = 0;
}

/** Sends the request to the main thread and blocks this thread until it answers. */
function askMainThread(userdata, requestJson) {
  const id = nextRequest++;
  let seen = Atomics.load(signal, 0);
  parentPort.postMessage({ id, key: Number(userdata), request: requestJson });
  for (;;) {
    const reply = receiveMessageOnPort(replies);
    if (reply) return reply.message;
    Atomics.wait(signal, 0, seen);
    seen = Atomics.load(signal, 0);
  }
}

function approve(userdata, requestJson, reason, reasonLen) {
  // An exception escaping to koffi would return 0, which is SBX_APPROVE: fail closed instead.
  try {
    const answer = askMainThread(userdata, requestJson);
    if (answer.allow) return SBX_APPROVE;
    writeReason(reason, reasonLen, answer.reason);
    return SBX_DENY;
  } catch (err) {
    try {
      writeReason(reason, reasonLen, `approval failed: ${err.message}`);
    } catch {
      // Nothing more to say: the denial stands without a reason.
    }
    return SBX_DENY;
  }
}

// The listener also keeps this thread alive: the main thread unrefs it instead, so an idle
// approval thread never holds the process open.
parentPort.on('message', (setup) => {
  if (replies) return;
  replies = setup.replies;
  signal = new Int32Array(setup.signal);
  const pointer = koffi.register(approve, 'sbx_approval_fn *');
  parentPort.postMessage({ pointer });
});
