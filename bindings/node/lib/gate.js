'use strict';
// Shared/exclusive access to one workspace handle. The C library lets calls share a workspace
// (exec, spawn, files, tools) but sbx_workspace_reset and sbx_workspace_close must run alone.
// Shared operations run together; an exclusive one waits for those running to finish, and
// operations that arrive after it wait for it.

class Gate {
  #running = 0;
  #exclusive = null; // settles when the last requested exclusive operation has run
  #drained = null;   // resolves the exclusive operation waiting for #running to reach 0

  async shared(fn) {
    while (this.#exclusive) await this.#exclusive;
    this.#running++;
    try {
      return await fn();
    } finally {
      if (--this.#running === 0 && this.#drained) {
        const wake = this.#drained;
        this.#drained = null;
        wake();
      }
    }
  }

  exclusive(fn) {
    const before = this.#exclusive;
    const run = (async () => {
      if (before) await before;
      if (this.#running) await new Promise((resolve) => { this.#drained = resolve; });
      return fn();
    })();
    const settled = run.then(() => {}, () => {});
    this.#exclusive = settled;
    settled.then(() => {
      if (this.#exclusive === settled) this.#exclusive = null;
    });
    return run;
  }
}

module.exports = { Gate };
