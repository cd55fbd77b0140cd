/*
 * libagentsbx — isolated workspaces for AI-agent harnesses.
 *
 * The umbrella header: the only one most users include. It includes every part of the public
 * API, split by concern; a program may include just the parts it uses:
 *   <agentsbx/version.h>    SBX_VERSION_* macros (generated from the project version)
 *   <agentsbx/common.h>     conventions, error codes, library-wide calls, sbx_workspace
 *   <agentsbx/workspace.h>  open, close, reset, network policy, approval hook, audit log
 *   <agentsbx/exec.h>       sbx_exec and long-running processes
 *   <agentsbx/files.h>      files confined to the workspace root
 *   <agentsbx/tools.h>      agent tools, skills, context offload
 *   <agentsbx/mcp.h>        MCP servers inside the workspace
 *   <agentsbx/manager.h>    the workspace manager
 * <agentsbx/backend.h> (the interface of backend plugins) is not included: only backends need it.
 * Threads: docs/threading.md. Configuration keys: docs/config.md.
 */
#ifndef AGENTSBX_H
#define AGENTSBX_H

#include <agentsbx/version.h>
#include <agentsbx/common.h>
#include <agentsbx/workspace.h>
#include <agentsbx/exec.h>
#include <agentsbx/files.h>
#include <agentsbx/tools.h>
#include <agentsbx/mcp.h>
#include <agentsbx/manager.h>

#endif /* AGENTSBX_H */
