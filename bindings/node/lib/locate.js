'use strict';
// Finds libagentsbx.so.1: $AGENTSBX_LIB, then the dynamic loader's search path (an installed
// library), then a meson build tree of the repository this package sits in — so the binding
// works from a checkout without installing the C library.

const fs = require('node:fs');
const path = require('node:path');

const SONAME = 'libagentsbx.so.1';

/** The library in a build directory, if it is there. */
function inBuildDir(dir) {
  const candidate = path.join(dir, SONAME);
  return fs.existsSync(candidate) ? candidate : null;
}

/** The newest build*\/libagentsbx.so.1 directly under dir (a repo may hold several builds). */
function newestBuildUnder(dir) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return null;
  }
  const found = entries
    .filter((e) => e.isDirectory() && e.name.startsWith('build'))
    .map((e) => inBuildDir(path.join(dir, e.name)))
    .filter(Boolean)
    .map((file) => ({ file, mtime: fs.statSync(file).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  return found.length ? found[0].file : null;
}

/** Walks up from the package to the repository root looking for a build tree. */
function buildTreeLibrary(startDir) {
  if (process.env.SBX_TEST_BUILD_ROOT) {
    const lib = inBuildDir(process.env.SBX_TEST_BUILD_ROOT);
    if (lib) return lib;
  }
  for (let dir = startDir; ; dir = path.dirname(dir)) {
    const lib = newestBuildUnder(dir);
    if (lib) return lib;
    if (path.dirname(dir) === dir) return null;
  }
}

/**
 * What to hand dlopen: an explicit path, or the bare soname when the loader can find it.
 * `loaderFinds(name)` tries the loader (koffi.load) and reports whether it succeeded.
 */
function locateLibrary(loaderFinds) {
  if (process.env.AGENTSBX_LIB) return process.env.AGENTSBX_LIB;
  if (loaderFinds(SONAME)) return SONAME;
  const lib = buildTreeLibrary(path.resolve(__dirname, '..'));
  if (lib) return lib;
  throw new Error(`${SONAME} not found: install libagentsbx, set AGENTSBX_LIB to its path, ` +
    'or build it with meson in the repository this package belongs to');
}

module.exports = { locateLibrary, SONAME };
