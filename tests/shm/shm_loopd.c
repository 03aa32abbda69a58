/* SPDX-License-Identifier: MIT
 * shm_loopd: a stand-in daemon for tests of installed apps. It hosts the real shm server on a
 * socket path with the fake backend in loopback mode (RC operations between its own QPs are
 * executed by memcpy through the daemon's mappings), exactly as metaroced will host it with
 * the transport. Usage: shm_loopd SOCKET_PATH [SECONDS]   (exits on SIGTERM/SIGINT)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_backend.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static struct fake_backend fb;
	struct mr_shm_server_params p = { 0 };
	struct mr_shm_server *srv;
	time_t end;
	unsigned int idle = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s SOCKET_PATH [SECONDS]\n", argv[0]);
		return 2;
	}
	end = time(NULL) + (argc > 2 ? atoi(argv[2]) : 60);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	fake_init(&fb);
	fb.exec = true;
	p.sock_path = argv[1];
	p.ops = &fake_ops;
	p.backend = &fb;
	p.ctl_every = 16;
	srv = mr_shm_server_create(&p);
	if (srv == NULL) {
		fprintf(stderr, "shm_loopd: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while (!stop && time(NULL) < end) {
		/* The engine-loop pattern: poll, back off when idle. */
		if (mr_shm_server_poll(srv) > 0)
			idle = 0;
		else if (++idle > 1000)
			usleep(200);
	}
	mr_shm_server_destroy(srv);
	fake_fini(&fb);
	return 0;
}
