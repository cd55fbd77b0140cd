/* The Engine's multiplexed exec stream, read as it arrives: each frame is a header
 * [type, 0, 0, 0, size as a big-endian u32] and then size bytes of that type's output
 * (0 stdin, 1 stdout, 2 stderr, 3 the engine's own error). Frames come cut anywhere by the
 * reads; the reader keeps a header that is not whole yet, and hands out payload bytes as soon
 * as they are in, so a frame of any announced size costs no memory. */
#ifndef SBX_DOCKER_FRAMES_H
#define SBX_DOCKER_FRAMES_H

#include <stddef.h>

#define DOCKER_FRAME_HEADER 8

struct docker_frames {
	unsigned char header[DOCKER_FRAME_HEADER];
	size_t header_len;                /* bytes of the next header in so far */
	size_t payload_left;              /* bytes of the current frame still to come */
	int type;                         /* the current frame's */
};

/* Called with each piece of a frame's payload, in order; a frame may come in several. */
typedef void (*docker_frame_fn)(void *arg, int type, const char *data, size_t len);

void docker_frames_feed(struct docker_frames *f, const char *data, size_t len,
                        docker_frame_fn fn, void *arg);

#endif
