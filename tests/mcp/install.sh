#!/bin/sh
# Installs the MCP servers the tests talk to (tests/mcp/node_modules), from the pinned
# package-lock.json. The MCP tests skip, saying so, when they are missing.
set -eu
cd "$(dirname "$0")"
command -v npm >/dev/null || { echo "npm not found: the MCP tests will skip" >&2; exit 0; }
npm ci --no-audit --no-fund --loglevel=error
