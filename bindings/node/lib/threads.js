'use strict';
// The main thread's side of the threads that call the library.
//
// Why threads: the library's calls block (an exec lasts as long as its command), and its error
// message is thread-local. koffi's `.async` would keep the event loop free, but it runs the
// call on a koffi pool thread and returns there, so sbx_last_error() could only be read later
// from another thread — the wrong message, or none. Instead each call runs as one job on a Node
// worker thread (lib/worker.js) that makes the call and reads sbx_last_error() right after it,
// synchronously, on that thread. koffi's own async pool is sized by the core count, too, and
// would let two long execs hold up everything else; this pool grows with the load instead.

const path = require('node:path');
const { Worker, MessageChannel } = require('node:worker_threads');
const { AgentSbxError } = require('./errors');

const WORKER_FILE = path.join(__dirname, 'worker.js');
const APPROVAL_FILE = path.join(__dirname, 'approval-thread.js');
// Each running exec holds a thread; jobs beyond this many wait for one to come free.
const MAX_THREADS = Math.max(1, Number(process.env.AGENTSBX_MAX_THREADS) || 64);
// Threads idle this long end (one stays, so the next call does not pay for a start).
const IDLE_MS = 30000;

/** The error a job reported, as the caller should see it. */
function jobError(failure) {
  if (typeof failure.code === 'number') {
    return new AgentSbxError(failure.code, failure.message, failure.fnName);
  }
  const err = new Error(failure.message);
  if (failure.stack) err.stack = failure.stack;
  return err;
}

class CallThread {
  constructor(pool) {
    this.pool = pool;
    this.job = null;
    this.idleTimer = null;
    this.worker = new Worker(WORKER_FILE, { workerData: { libPath: pool.libPath } });
    this.worker.on('message', (msg) => this.onMessage(msg));
    this.worker.on('error', (err) => this.onDeath(err));
    this.worker.on('exit', (code) => this.onDeath(new Error(`exited with code ${code}`)));
    // An idle thread must not keep the process alive; a busy one does (see start()).
    this.worker.unref();
  }

  start(job) {
    clearTimeout(this.idleTimer);
    this.job = job;
    this.worker.ref();
    this.worker.postMessage({ id: job.id, op: job.op, args: job.args }, job.transfer);
  }

  onMessage(msg) {
    const job = this.job;
    if (!job || msg.id !== job.id) return;
    if (msg.event) {
      job.onEvent?.(msg.event);
      return;
    }
    this.job = null;
    this.worker.unref();
    if (msg.error) job.reject(jobError(msg.error));
    else job.resolve(msg.value);
    this.pool.idle(this);
  }

  onDeath(err) {
    if (this.dead) return;
    this.dead = true;
    clearTimeout(this.idleTimer);
    this.pool.forget(this);
    if (this.job) {
      this.job.reject(new Error(`agentsbx: the thread running ${this.job.op} died: ${err.message}`));
      this.job = null;
    }
  }

  retireWhenIdleFor(ms) {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.pool.retire(this), ms);
    this.idleTimer.unref();
  }
}

class WorkerPool {
  constructor(libPath) {
    this.libPath = libPath;
    this.threads = new Set();
    this.free = [];
    this.queue = [];
    this.nextId = 1;
  }

  /**
   * Runs operation `op` of lib/worker.js with args on a thread. `onEvent` receives what the
   * operation streams while it runs; `transfer` lists ArrayBuffers to move, not copy.
   */
  run(op, args, { onEvent, transfer = [] } = {}) {
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, op, args, onEvent, transfer, resolve, reject });
      this.dispatch();
    });
  }

  dispatch() {
    while (this.queue.length) {
      const thread = this.free.pop() || this.spawnThread();
      if (!thread) return;
      thread.start(this.queue.shift());
    }
  }

  spawnThread() {
    if (this.threads.size >= MAX_THREADS) return null;
    const thread = new CallThread(this);
    this.threads.add(thread);
    return thread;
  }

  idle(thread) {
    this.free.push(thread);
    if (this.free.length > 1) thread.retireWhenIdleFor(IDLE_MS);
    this.dispatch();
  }

  retire(thread) {
    if (thread.job || !this.free.includes(thread) || this.free.length <= 1) return;
    this.forget(thread);
    thread.dead = true;
    thread.worker.terminate();
  }

  forget(thread) {
    this.threads.delete(thread);
    this.free = this.free.filter((t) => t !== thread);
    this.dispatch();
  }
}

/**
 * Runs the user's approval handlers for requests the library makes on worker threads (see
 * lib/approval-thread.js). A handler gets the request object and answers true or undefined
 * (allow), false (deny), a string (deny, with that reason for the model), or {allow, reason};
 * it may return a promise. A handler that throws, or answers anything else, denies.
 */
class ApprovalBridge {
  constructor() {
    this.handlers = new Map();
    this.nextKey = 1;
    this.ready = null;
  }

  /** The C function pointer to install with sbx_set_approval_handler. */
  pointer() {
    if (!this.ready) this.ready = this.startThread();
    return this.ready;
  }

  startThread() {
    const worker = new Worker(APPROVAL_FILE);
    const { port1, port2 } = new MessageChannel();
    this.replies = port1;
    this.replies.unref(); // only ever posted to: it must not keep the process alive
    this.signal = new Int32Array(new SharedArrayBuffer(4));
    return new Promise((resolve, reject) => {
      worker.on('error', reject);
      worker.on('message', (msg) => {
        if (msg.pointer === undefined) {
          this.answer(msg);
          return;
        }
        // Once started, this thread never holds the process open (a pending approval does,
        // through the call thread waiting for it). Unref'd only now: the listeners above ref
        // it, and until the pointer arrives something has to keep the process waiting for it.
        worker.unref();
        resolve(msg.pointer);
      });
      worker.postMessage({ replies: port2, signal: this.signal.buffer }, [port2]);
    });
  }

  /** A key for a workspace: the userdata the library hands back with each request. */
  register(handler) {
    const key = this.nextKey++;
    this.handlers.set(key, handler);
    return key;
  }

  unregister(key) {
    this.handlers.delete(key);
  }

  async answer({ id, key, request }) {
    const handler = this.handlers.get(key);
    let reply;
    try {
      // A handler removed while the library was asking: as without one, the call is allowed.
      reply = handler ? verdict(await handler(JSON.parse(request))) : { allow: true };
    } catch (err) {
      reply = { allow: false, reason: `the approval handler failed: ${err?.message ?? err}` };
    }
    this.replies.postMessage({ id, ...reply });
    Atomics.add(this.signal, 0, 1);
    Atomics.notify(this.signal, 0);
  }
}

/** What a handler's answer means (see ApprovalBridge). */
function verdict(answer) {
  if (answer === true || answer === undefined || answer === null) return { allow: true };
  if (answer === false) return { allow: false, reason: '' };
  if (typeof answer === 'string') return { allow: false, reason: answer };
  if (typeof answer === 'object' && typeof answer.allow === 'boolean') {
    return { allow: answer.allow, reason: String(answer.reason ?? '') };
  }
  return { allow: false, reason: 'the approval handler gave an answer that is not a verdict' };
}

module.exports = { WorkerPool, ApprovalBridge, verdict };
