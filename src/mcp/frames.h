/* The frames of the gateway's process-stream transport (proto.h), one line each, for the
 * gateway's multiplexer and the host's end: the strict reading both sides share. */
#ifndef SBX_MCP_FRAMES_H
#define SBX_MCP_FRAMES_H

#include <stddef.h>
#include <stdint.h>

/* A frame: "<channel> <line>", or "<channel>" alone (that channel ends). The channel is 1 to
 * 10 decimal digits no larger than UINT32_MAX, nothing before them. Returns 1 with *line and
 * *line_len (the rest after the one space), 0 for a channel alone, -1 for anything else. */
int sbx_mcp_frame_split(const char *frame, size_t len, uint32_t *channel, const char **line,
                        size_t *line_len);

#endif
