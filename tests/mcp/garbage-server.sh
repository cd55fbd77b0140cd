#!/bin/sh
# An MCP server that answers every line with text that is not JSON.
while read -r line; do echo "this is not JSON: $line"; done
