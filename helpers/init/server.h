/* The sandbox init's exec server (server.c). */
#ifndef SBX_INIT_SERVER_H
#define SBX_INIT_SERVER_H

/* Serves spawn requests on the control channel until it closes (returns 0) or fails
 * (negative errno). */
int sbx_init_serve(int ctl);

#endif
