#!/bin/sh
# An MCP server that floods stdout with notifications and never answers.
exec yes '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}'
