/* SPDX-License-Identifier: MIT
 * libmetaroce: the embedded engine (metaroce.h, mrc_progress). With $METAROCE_ENGINE set, the
 * first mrc_open() loads metaroced's engine module (apps/metaroced/embed.c) and starts the
 * daemon inside this process; this library stays free of DPDK, which only the module links.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/un.h>

#include "client_priv.h"

#define ENGINE_MODULE "libmetaroce-engine.so"

int (*mrc_embed_poll_fn)(void);
void (*mrc_embed_kick_fn)(void);
_Atomic uint64_t mrc_embed_polls;
_Atomic uint64_t mrc_embed_posts;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
static void (*g_stop)(void);
static int g_state; /* 0: not tried, 1: running, negative errno: its start failed */

static void stop_at_exit(void)
{
	mrc_embed_poll_fn = NULL;
	mrc_embed_kick_fn = NULL;
	if (g_stop != NULL)
		g_stop();
}

static int start(const char *args)
{
	const char *mod = getenv("METAROCE_ENGINE_MODULE");
	int (*fn_start)(const char *, char *, size_t, _Atomic uint64_t *);
	int (*fn_poll)(void);
	void (*fn_watch)(_Atomic uint64_t *);
	void *h;
	int rc;

	if (mod == NULL || *mod == '\0')
		mod = ENGINE_MODULE;
	h = dlopen(mod, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "libmetaroce: METAROCE_ENGINE: cannot load the engine module %s: "
			"%s (METAROCE_ENGINE_MODULE names it)\n", mod, dlerror());
		return -ELIBACC;
	}
	fn_start = (int (*)(const char *, char *, size_t, _Atomic uint64_t *))dlsym(h,
										  "mrd_embed_start");
	fn_poll = (int (*)(void))dlsym(h, "mrd_embed_poll");
	g_stop = (void (*)(void))dlsym(h, "mrd_embed_stop");
	mrc_embed_kick_fn = (void (*)(void))dlsym(h, "mrd_embed_kick");
	if (fn_start == NULL || fn_poll == NULL || g_stop == NULL || mrc_embed_kick_fn == NULL) {
		mrc_embed_kick_fn = NULL;
		fprintf(stderr, "libmetaroce: METAROCE_ENGINE: %s is not metaroce's engine module\n",
			mod);
		g_stop = NULL;
		return -ELIBBAD;
	}
	rc = fn_start(args, g_sock, sizeof(g_sock), &mrc_embed_polls);
	if (rc < 0) {
		fprintf(stderr, "libmetaroce: METAROCE_ENGINE: the embedded daemon did not start "
			"(%s; its messages above)\n", mrc_strerror(rc));
		g_stop = NULL;
		mrc_embed_kick_fn = NULL;
		return rc;
	}
	/* Optional (a module without it runs its whole iteration on every poll). */
	fn_watch = (void (*)(_Atomic uint64_t *))dlsym(h, "mrd_embed_watch_posts");
	if (fn_watch != NULL)
		fn_watch(&mrc_embed_posts);
	atexit(stop_at_exit);
	mrc_embed_poll_fn = fn_poll;
	return 1;
}

int mrc_embed_open(const char **sock)
{
	const char *args = getenv("METAROCE_ENGINE");
	int rc;

	if (args == NULL || *args == '\0')
		return 0;
	pthread_mutex_lock(&g_lock);
	if (g_state == 0)
		g_state = start(args);
	rc = g_state;
	pthread_mutex_unlock(&g_lock);
	if (rc > 0)
		*sock = g_sock;
	return rc;
}

int mrc_progress(void)
{
	int (*fn)(void) = mrc_embed_poll_fn;

	if (fn == NULL)
		return 0;
	mrc_embed_note_poll();
	return fn();
}
