/* See frames.h. */
#include <string.h>

#include "frames.h"

static size_t take_header(struct docker_frames *f, const char *data, size_t len)
{
	size_t take = DOCKER_FRAME_HEADER - f->header_len;

	take = take < len ? take : len;
	memcpy(f->header + f->header_len, data, take);
	f->header_len += take;
	if (f->header_len == DOCKER_FRAME_HEADER) {
		f->header_len = 0;
		f->type = f->header[0];
		f->payload_left = (size_t)f->header[4] << 24 | (size_t)f->header[5] << 16 |
		                  (size_t)f->header[6] << 8 | (size_t)f->header[7];
	}
	return take;
}

void docker_frames_feed(struct docker_frames *f, const char *data, size_t len,
                        docker_frame_fn fn, void *arg)
{
	while (len) {
		size_t take;

		if (f->payload_left == 0) {
			take = take_header(f, data, len);
		} else {
			take = f->payload_left < len ? f->payload_left : len;
			fn(arg, f->type, data, take);
			f->payload_left -= take;
		}
		data += take;
		len -= take;
	}
}
