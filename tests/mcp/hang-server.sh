#!/bin/sh
# An MCP server that reads its requests and never answers.
exec cat >/dev/null
