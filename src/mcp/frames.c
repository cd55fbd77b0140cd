/* See frames.h. */
#include "mcp/frames.h"

int sbx_mcp_frame_split(const char *frame, size_t len, uint32_t *channel, const char **line,
                        size_t *line_len)
{
	uint64_t id = 0;
	size_t i = 0;

	while (i < len && i < 10 && frame[i] >= '0' && frame[i] <= '9')
		id = id * 10 + (uint64_t)(frame[i++] - '0');
	if (i == 0 || id > UINT32_MAX || (i < len && frame[i] != ' '))
		return -1;
	*channel = (uint32_t)id;
	if (i == len)
		return 0;
	*line = frame + i + 1;
	*line_len = len - i - 1;
	return 1;
}
