/* A private host copy of a workspace's files for Glob and Grep where the files are not on this
 * host (snapshot.c). */
#ifndef SBX_TOOLS_SNAPSHOT_H
#define SBX_TOOLS_SNAPSHOT_H

#include <stdbool.h>
#include <agentsbx/agentsbx.h>

/* Whether the workspace's files are elsewhere and its backend hands over its tree. */
bool sbx_tool_can_snapshot(const sbx_workspace *ws);
/* Copies the tree into a new private directory: *root_fd (a directory fd) and *dir (its
 * path), for sbx_tool_snapshot_free(). */
int sbx_tool_snapshot(sbx_workspace *ws, int *root_fd, char **dir);
/* Closes root_fd (-1: none), removes dir and everything in it, frees dir. */
void sbx_tool_snapshot_free(int root_fd, char *dir);

#endif
