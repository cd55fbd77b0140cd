'use strict';
// Shared by the test files: which backends to run on, scratch directories, small utilities.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { probeBackends, Workspace } = require('..');

// The library keeps each workdir's state folder (and private HOME) below $XDG_STATE_HOME:
// this test process's own, removed at its exit, so that tests leave nothing in the user's.
const STATE_HOME = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-node-state-'));
process.env.XDG_STATE_HOME = STATE_HOME;
process.on('exit', () => fs.rmSync(STATE_HOME, { recursive: true, force: true }));

/** The state folder the library keeps for workdir (src/state.c: base name and the first 16
 * hex digits of the SHA-256 of the canonical path). */
function stateDir(workdir) {
  const real = fs.realpathSync(workdir);
  const digest = crypto.createHash('sha256').update(real).digest('hex').slice(0, 16);
  return path.join(STATE_HOME, 'agentsbx', 'workspaces', `${path.basename(real)}-${digest}`);
}

// The suites that do not depend on isolation run on both: local (commands on the host) and
// ns (the namespace sandbox). A backend this host cannot run is reported as skipped.
const BACKENDS = ['local', 'ns'];

let probed = null;

/** { local: true|'why not', ns: ... } from sbx_backends_probe, asked once. */
async function backendAvailability() {
  if (!probed) {
    probed = probeBackends().then((list) =>
      Object.fromEntries(list.map((b) => [b.backend, b.available ? true : b.detail])));
  }
  return probed;
}

/** Why backend cannot run here, or null when it can. */
async function unavailableReason(backend) {
  const availability = await backendAvailability();
  const a = availability[backend];
  return a === true ? null : `backend ${backend} is not available here: ${a ?? 'unknown'}`;
}

/** A scratch directory removed when the test process exits. */
function scratchDir(prefix = 'agentsbx-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Opens a workspace on backend for the duration of fn, closing it whatever happens. */
async function withWorkspace(backend, fn, extraConfig = {}) {
  const ws = await Workspace.open({ backend, ...extraConfig });
  try {
    return await fn(ws);
  } finally {
    await ws.close();
  }
}

/**
 * Registers `body(t, backend)` as one test per backend, named "name [backend]", skipped where
 * the backend cannot run.
 */
function testOnBackends(test, name, body, options = {}) {
  for (const backend of BACKENDS) {
    test(`${name} [${backend}]`, options, async (t) => {
      const reason = await unavailableReason(backend);
      if (reason) {
        t.skip(reason);
        return;
      }
      await body(t, backend);
    });
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Everything a readable stream yields until it ends, as one Buffer. */
async function readAll(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The repository root (bindings/node/test → ../../..). */
const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

module.exports = {
  BACKENDS, testOnBackends, withWorkspace, scratchDir, sleep, readAll, unavailableReason,
  REPO_ROOT, stateDir,
};
