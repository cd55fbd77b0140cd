'use strict';
// A process started with Workspace#spawn. Its stdout and stderr are Node streams over the
// event loop (no thread is held while the process runs); the C handle behind it is used by one
// call at a time, as the C API requires, through a queue.

const net = require('node:net');
const os = require('node:os');
const { PassThrough } = require('node:stream');
const tty = require('node:tty');
const { bindingError } = require('./errors');

// sbx_process_wait blocks its thread; waiting in slices this long lets kill/signal/closeStdin
// reach the handle in between (the handle must not be used by two threads at once).
const WAIT_SLICE_MS = 100;
const ETIMEDOUT = -110;
const SIGNALS = os.constants.signals;

/** A Node stream over an fd the worker duplicated for us (ours to close), or null. */
function streamOverFd(fd, direction) {
  if (fd < 0) return null;
  const readable = direction === 'read';
  // net.Socket drives a pipe fd through libuv without blocking a thread (fs streams would
  // park a threadpool thread on each read); it closes the fd when destroyed — our duplicate.
  return new net.Socket({ fd, readable, writable: !readable, allowHalfOpen: true });
}

/**
 * The streams of a terminal's master (spawn with pty): libuv drives it as a TTY, and a master
 * whose every slave fd closed reads EIO, which is its end-of-file: the reader sees an end.
 */
function terminalStream(fd, direction) {
  if (fd < 0) return null;
  if (direction === 'write') return new tty.WriteStream(fd);
  const master = new tty.ReadStream(fd);
  const out = new PassThrough();
  master.on('data', (chunk) => out.write(chunk));
  master.on('end', () => out.end());
  master.on('error', (err) => {
    if (err.code === 'EIO') out.end();
    else out.destroy(err);
    master.destroy();
  });
  out.on('close', () => master.destroy());
  return out;
}

// How long a read stream someone is consuming may take to deliver the end of a command that
// has ended (its pipe's EOF is already on the way: the whole tree is gone).
const DRAIN_MS = 2000;

/**
 * Lets a stream that is being read reach its end before it is closed, so that a reader sees
 * the output and a clean end rather than a premature close; one nobody reads is closed now.
 */
function endOrDestroy(stream) {
  if (!stream || stream.destroyed || stream.readableEnded) return undefined;
  if (stream.readableFlowing !== true && stream.listenerCount('readable') === 0) {
    stream.destroy();
    return undefined;
  }
  return new Promise((resolve) => {
    const timer = setTimeout(done, DRAIN_MS);
    function done() {
      clearTimeout(timer);
      stream.destroy();
      resolve();
    }
    stream.once('end', done);
    stream.once('close', done);
  });
}

function brokenPipe() {
  return bindingError('EIO', 'write to stdin: broken pipe (the command closed its stdin)', 'write');
}

function signalNumber(sig) {
  if (typeof sig === 'number') return sig;
  const n = SIGNALS[String(sig).toUpperCase()] ?? SIGNALS[`SIG${String(sig).toUpperCase()}`];
  if (n === undefined) throw bindingError('EINVAL', `unknown signal ${sig}`, 'signal');
  return n;
}

class Process {
  #pool;
  #gate;
  #handle;
  #queue = Promise.resolve();
  #status = null;
  #closing = null;
  #onClose;

  /** @internal — created by Workspace#spawn. */
  constructor(pool, gate, { proc, fds }, onClose, { pty = false } = {}) {
    this.#pool = pool;
    this.#gate = gate;
    this.#handle = proc;
    this.#onClose = onClose;
    /** Whether the command runs on a terminal: stdout is the terminal, stderr is null. */
    this.pty = pty;
    const over = pty ? terminalStream : streamOverFd;
    this.stdin = over(fds[0], 'write');
    this.stdout = over(fds[1], 'read');
    this.stderr = over(fds[2], 'read');
    // A write to a command that closed its stdin surfaces through write(); never as an
    // unhandled 'error' event that would crash the process.
    this.stdin?.on('error', () => {});
  }

  /** Runs op on the handle after the ones before it, sharing the workspace like any call. */
  #call(op, ...args) {
    const run = this.#queue.then(() => {
      if (!this.#handle) throw bindingError('ESTATE', 'the process handle is closed', op);
      return this.#gate.shared(() => this.#pool.run(op, [this.#handle, ...args]));
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Writes data (a string is UTF-8) to the command's stdin; resolves once it is written. */
  write(data) {
    const stdin = this.stdin;
    if (!stdin) return Promise.reject(bindingError('EBADF', 'stdin is closed', 'write'));
    if (stdin.destroyed) return Promise.reject(brokenPipe());
    return new Promise((resolve, reject) => {
      stdin.write(data, (err) => {
        if (!err) resolve();
        else if (err.code === 'EPIPE') reject(brokenPipe());
        else reject(bindingError('EIO', `write to stdin: ${err.message}`, 'write'));
      });
    });
  }

  /** Closes stdin (after what was written has gone out) so the command reads end-of-file. */
  async closeStdin() {
    const stdin = this.stdin;
    if (!stdin) throw bindingError('EBADF', 'stdin is already closed', 'closeStdin');
    this.stdin = null;
    // Both descriptors must close for the command to see EOF: our duplicate and the handle's.
    if (!stdin.destroyed) {
      await new Promise((resolve) => {
        stdin.once('close', resolve);
        // A terminal's stream has no half-close that ends in 'close': destroy it once flushed.
        if (this.pty) stdin.end(() => stdin.destroy());
        else stdin.end();
      });
    }
    await this.#call('processCloseStdin');
  }

  /**
   * Waits for the command to end: { exitCode, signal } (exitCode -1 when a signal killed it).
   * With timeoutMs, rejects with ETIMEDOUT if it still runs by then.
   */
  async wait({ timeoutMs } = {}) {
    const deadline = timeoutMs === undefined || timeoutMs < 0 ? Infinity : Date.now() + timeoutMs;
    while (!this.#status) {
      const left = Math.max(0, deadline - Date.now());
      try {
        this.#status = await this.#call('processWait', Math.min(WAIT_SLICE_MS, left));
      } catch (err) {
        if (err.code !== ETIMEDOUT) throw err;
        if (left === 0) {
          throw bindingError('ETIMEDOUT', `the process still runs after ${timeoutMs} ms`, 'wait');
        }
      }
    }
    return { ...this.#status };
  }

  /**
   * Sets the size of the terminal of a process spawned with pty (since 1.7); the command's
   * foreground process group gets SIGWINCH.
   */
  async resize(rows, cols) {
    for (const [name, v] of [['rows', rows], ['cols', cols]]) {
      if (!Number.isInteger(v) || v < 1 || v > 65535) {
        throw bindingError('EINVAL', `resize: ${name} must be an integer 1..65535, not ${v}`,
          'resize');
      }
    }
    await this.#call('processResize', rows, cols);
  }

  /** Sends a signal (number or name: 'SIGTERM', 'TERM') to the command's process group. */
  async signal(sig) {
    await this.#call('processSignal', signalNumber(sig));
  }

  /** Kills the command and every process it started; wait() then reports how it ended. */
  async kill() {
    await this.#call('processKill');
  }

  /** Kills the command if it still runs, releases the handle and its streams. Idempotent. */
  close() {
    if (!this.#closing) this.#closing = this.#release();
    return this.#closing;
  }

  async #release() {
    try {
      if (!this.#status) {
        await this.kill().catch(() => {});
        await this.wait({ timeoutMs: 10000 }).catch(() => {});
      }
      this.stdin?.destroy();
      await Promise.all([this.stdout, this.stderr].map(endOrDestroy));
      await this.#call('processFree');
    } finally {
      this.#handle = null;
      this.#onClose(this);
    }
  }

  [Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')]() {
    return this.close();
  }
}

module.exports = { Process, signalNumber };
