/* SPDX-License-Identifier: MIT
 * The engine embedded in an app: libmetaroce loads this module when $METAROCE_ENGINE holds a
 * daemon command line ("-c FILE [options] [-- EAL args]") and the app's own thread then runs
 * the daemon's one shard (daemon.c) whenever it polls (mrc_poll_cq, mrc_progress): run to
 * completion, one poller per app as with a NIC's user-space provider, where the daemon needs
 * an engine core beside every polling app (a hand-over between the two on a shared CPU is a
 * context switch: docs/performance.md). The session still speaks the shm protocol to the
 * daemon's socket, so every path of the daemon is the same one.
 *
 * While the app does not poll (blocked in a control request, a socket, an event wait), a
 * helper thread serves the engine instead, so that control requests, ARP, ACKs and timers
 * still run: it checks every BG_CHECK_US how often the app polled since (at once when the app
 * says it is about to block: mrd_embed_kick), and serves in batches with BG_IDLE_US naps while
 * the app polls rarely (bg_main). One thread at a time runs the engine (g_busy;
 * the app only tries it, so a poll never waits).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "shm/shm_server.h"

#define MRD_EMBED_API __attribute__((visibility("default")))
#define MAX_ARGS 64
#define BG_CHECK_US 1000 /* how often the helper looks whether the app still polls */
#define BG_IDLE_US 20    /* its nap between idle batches while it serves */
#define BG_BATCH 64      /* iterations per batch (the lock is released between them) */
#define BG_ACTIVE_POLLS 64 /* app polls per BG_CHECK_US below which the helper serves */
#define BG_BACK_POLLS 8  /* app polls during one served batch and nap that end the serving */
#define CTL_PERIOD_NS 200000ull /* control requests while the app polls (engine.c) */
/* After the app's last kick (a control request of its own, an event wait) the helper looks for
 * control requests on every iteration for this long, and then by the clock (CTL_PERIOD_NS). */
#define KICK_CTL_NS 1000000ull
/* An idle app poll runs the rest of an iteration (shm rings, timers, transmit) at most this
 * often when nothing arrived, the app posted nothing and the last one found no work. */
#define IDLE_REST_NS 1000ull

MRD_EMBED_API int mrd_embed_start(const char *args, char *sock, size_t len,
				  _Atomic uint64_t *app_polls);
MRD_EMBED_API int mrd_embed_poll(void);
MRD_EMBED_API void mrd_embed_stop(void);
MRD_EMBED_API void mrd_embed_kick(void);
MRD_EMBED_API void mrd_embed_watch_posts(_Atomic uint64_t *app_posts);

/* Who runs the engine: a flag, not a mutex: the poll path only tries it (a load, then an
 * exchange) and releases it with a plain store (a mutex's unlock was 8 % of a write_lat
 * client's cycles). */
static atomic_bool g_busy;
static bool g_rest_due;              /* an app's poll ran a receive half only (poll_locked) */
static struct mr_engine_loop g_loop;
/* The app's polls so far, counted by libmetaroce on every mrc_poll_cq / mrc_progress (also
 * those that found completions and ran no iteration): the helper compares. */
static _Atomic uint64_t *g_app_polls;
/* The app's posts so far (libmetaroce, every ring publish; NULL: not told), the count the last
 * rest of an iteration started from, and when that was (poll_locked). */
static _Atomic uint64_t *g_app_posts;
static uint64_t g_posts_seen, g_last_rest;
static atomic_bool g_bg_stop;
static pthread_mutex_t g_bg_mu = PTHREAD_MUTEX_INITIALIZER; /* g_kicks' writes (slow path) */
static pthread_cond_t g_bg_cv;
/* The app's kicks so far (it is about to block: serve now); the helper compares its count. */
static _Atomic uint64_t g_kicks;
static pthread_t g_bg;
static bool g_started;
static char *g_args;                 /* argv's strings (EAL keeps pointers into them) */
static char g_argv0[] = "metaroced";

static void nap_us(unsigned int us)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)us * 1000};

	nanosleep(&ts, NULL);
}

static bool try_take(void)
{
	return !atomic_load_explicit(&g_busy, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&g_busy, true, memory_order_acquire);
}

static void give_back(void)
{
	atomic_store_explicit(&g_busy, false, memory_order_release);
}

static unsigned int iter_locked(struct mr_daemon *d)
{
	unsigned int work = mr_engine_iter(d, &g_loop);

	g_rest_due = false; /* a whole iteration includes the rest an app's poll left */
	if (work == 0 && g_loop.idle < MR_IDLE_SPINS)
		g_loop.idle++;
	return work;
}

/* An idle poll's rest of the iteration can wait: no frame arrived (the caller's receive half),
 * the last rest found no work, nothing waits in the PMD, the app has posted nothing since that
 * rest started, and it started under IDLE_REST_NS ago. Then a poll is the receive half alone,
 * so that a frame arriving while the engine idles is seen within that, not within a whole
 * iteration: the rest (doorbell and rings, timers, transmit) was about 200 ns of every idle
 * iteration (perf, embedded write_lat), a frame's average wait half of it. Timers fire at most
 * IDLE_REST_NS late (the shortest, the delayed ACK, is 4 us: RC_DELAYED_ACK_NS); a post is
 * served at once, or within IDLE_REST_NS when concurrent posts from two threads hid one from
 * the counter. */
static bool rest_can_wait(const struct mr_daemon *d, uint64_t now)
{
	return g_app_posts != NULL && g_loop.idle > 0 && !d->tx_pending &&
	       now - g_last_rest < IDLE_REST_NS &&
	       atomic_load_explicit(g_app_posts, memory_order_relaxed) == g_posts_seen;
}

/* A rest of the iteration starts: it serves every post counted so far. */
static void rest_started(uint64_t now)
{
	if (g_app_posts != NULL)
		g_posts_seen = atomic_load_explicit(g_app_posts, memory_order_relaxed);
	g_last_rest = now;
}

/* The app's poll: an iteration in two calls when its receive half found frames. The data they
 * placed (a WRITE into the app's buffer) is in memory at once, and the app sees it on return,
 * before the rest of the iteration builds and sends the ACK; the app's own reply, posted in
 * between, then leaves in the same transmit burst as that ACK. */
static unsigned int poll_locked(struct mr_daemon *d)
{
	unsigned int work;
	uint64_t now = mr_now_ns();

	if (g_rest_due) {
		g_rest_due = false;
		rest_started(now);
		return mr_engine_iter_rest(d, &g_loop, now, 1);
	}
	d->st.iterations++;
	work = mr_engine_iter_rx(d, now);
	if (work > 0) {
		/* Completions the frames made (an ACK's) reach the app's CQ ring now too. */
		mr_shm_server_poll_data(d->srv);
		g_rest_due = true;
		return work;
	}
	if (rest_can_wait(d, now))
		return 0;
	rest_started(now);
	work = mr_engine_iter_rest(d, &g_loop, now, 0);
	if (work == 0 && g_loop.idle < MR_IDLE_SPINS)
		g_loop.idle++;
	return work;
}

/* Whether the app kicked the helper since *seen (which then catches up). */
static bool took_kick(uint64_t *seen)
{
	uint64_t k = atomic_load_explicit(&g_kicks, memory_order_relaxed);
	bool kicked = k != *seen;

	*seen = k;
	return kicked;
}

/* The helper's wait while the app polls: BG_CHECK_US, or less if the app kicks it (it is about
 * to block: mrc_req_notify_cq before an event wait, a control request). True if kicked. */
static bool wait_kick(uint64_t *seen)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += BG_CHECK_US * 1000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&g_bg_mu);
	if (atomic_load_explicit(&g_kicks, memory_order_relaxed) == *seen)
		pthread_cond_timedwait(&g_bg_cv, &g_bg_mu, &ts);
	pthread_mutex_unlock(&g_bg_mu);
	return took_kick(seen);
}

void mrd_embed_watch_posts(_Atomic uint64_t *app_posts)
{
	g_posts_seen = app_posts != NULL ? atomic_load(app_posts) : 0;
	g_app_posts = app_posts;
}

void mrd_embed_kick(void)
{
	pthread_mutex_lock(&g_bg_mu);
	atomic_fetch_add_explicit(&g_kicks, 1, memory_order_relaxed);
	pthread_cond_signal(&g_bg_cv);
	pthread_mutex_unlock(&g_bg_mu);
}

static uint64_t app_polls(void)
{
	return atomic_load_explicit(g_app_polls, memory_order_relaxed);
}

/* The helper: asleep while the app spins (it polls thousands of times a millisecond and runs
 * the engine itself); serving when the app polls rarely or not at all (blocked in a control
 * call or an event wait, a passive side that only checks now and then, an app that waits on
 * memory without mrc_progress), until the app spins again. */
static void *bg_main(void *arg)
{
	struct mr_daemon *d = arg;
	uint64_t mark = app_polls(), p, kicks_seen = 0, kicked_at = 0;
	bool serving = false;

	while (!atomic_load_explicit(&g_bg_stop, memory_order_relaxed)) {
		unsigned int work = 0, i;

		if (!serving) {
			bool kicked = wait_kick(&kicks_seen);

			if (kicked)
				kicked_at = mr_now_ns();
			p = app_polls();
			serving = kicked || p - mark < BG_ACTIVE_POLLS;
			mark = p;
			continue;
		}
		if (try_take()) {
			uint64_t now = mr_now_ns();

			if (took_kick(&kicks_seen))
				kicked_at = now;
			/* The app kicked us lately: it may be blocked in a control request, which
			 * is then served on every iteration. Otherwise (a passive app, blocked on
			 * its own socket or in a sleep, that kicked long ago) by the clock, as
			 * while the app polls: the socket check is a system call (epoll_wait),
			 * and on every iteration it was a fifth of a passive write_bw server's
			 * helper (perf), the receiving side of a message-rate run. */
			if (now - kicked_at < KICK_CTL_NS) {
				/* First an iteration without control requests: the timers that
				 * came due while the app did not poll (a delayed ACK,
				 * RC_DELAYED_ACK_NS) fire and their frames leave before a
				 * request such as a QP's destroy, which the app sends right
				 * after its last completion, can drop them (the peer then
				 * retried into a closed port: RETRY_EXC_ERR in mr_xfer's
				 * initiator). */
				g_loop.next_ctl = now + CTL_PERIOD_NS;
				work += iter_locked(d);
				g_loop.ctl_now = true;
			}
			for (i = 0; i < BG_BATCH; i++)
				work += iter_locked(d);
			g_loop.ctl_now = false;
			give_back();
		}
		if (work == 0)
			nap_us(BG_IDLE_US);
		p = app_polls();
		if (p - mark >= BG_BACK_POLLS)
			serving = false; /* the app spins again */
		mark = p;
	}
	return NULL;
}

/* A daemon starts long before its apps; an embedded one starts with its app, and a port whose
 * link comes up only when its peer connects (net_memif) would be down at the app's first
 * query_port: wait for it, up to $METAROCE_ENGINE_LINK_WAIT seconds (default 10), running the
 * engine meanwhile (it follows the link). */
static void wait_link(struct mr_daemon *d)
{
	const char *env = getenv("METAROCE_ENGINE_LINK_WAIT");
	long secs = env != NULL ? atol(env) : 10;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (unsigned int i = 0; i < BG_BATCH; i++)
			iter_locked(d);
		if (g_loop.link_seen != UINT32_MAX && (g_loop.link_seen & 1))
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= secs) {
			fprintf(stderr, "metaroced (embedded): the port's link is still down after "
				"%ld s (METAROCE_ENGINE_LINK_WAIT)\n", secs);
			return;
		}
		nap_us(1000);
	}
}

/* args: the daemon's command line without argv[0], split at blanks (no quoting). */
int mrd_embed_start(const char *args, char *sock, size_t len, _Atomic uint64_t *app_polls)
{
	char *argv[MAX_ARGS + 2], *save = NULL, *tok;
	int argc = 0, rc;

	if (g_started)
		return -EALREADY;
	if (args == NULL || sock == NULL || app_polls == NULL)
		return -EINVAL;
	g_app_polls = app_polls;
	g_args = strdup(args);
	if (g_args == NULL)
		return -ENOMEM;
	argv[argc++] = g_argv0;
	for (tok = strtok_r(g_args, " \t\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc > MAX_ARGS) {
			fprintf(stderr, "metaroced (embedded): more than %d arguments\n", MAX_ARGS);
			return -E2BIG;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	rc = mrd_start(argc, argv, true);
	if (rc != 0)
		return rc == 2 || rc < 0 ? -EINVAL : -EIO;
	if (strlen(mrd_sock_path()) >= len) {
		mrd_join();
		mrd_finish(1);
		return -ENAMETOOLONG;
	}
	strcpy(sock, mrd_sock_path());
	mr_engine_loop_init(mrd_shard0(), &g_loop);
	g_loop.ctl_period_ns = CTL_PERIOD_NS;
	wait_link(mrd_shard0());
	atomic_store(&g_bg_stop, false);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&g_bg_cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	/* Created from the app's thread after EAL pinned it: the helper shares that CPU, and
	 * mostly sleeps. */
	rc = pthread_create(&g_bg, NULL, bg_main, mrd_shard0());
	if (rc != 0) {
		mrd_join();
		mrd_finish(1);
		return -rc;
	}
	g_started = true;
	return 0;
}

int mrd_embed_poll(void)
{
	unsigned int work;

	if (!try_take())
		return 0;
	work = poll_locked(mrd_shard0());
	give_back();
	return work > 0;
}

/* The app is ending: what the engine still owes its peers goes out first. An app's poll that
 * ran a receive half only (poll_locked) left that iteration's ACKs unsent, a responder's
 * coalesced ACK waits for its delayed-ACK timer (RC_DELAYED_ACK_NS), and an app often ends
 * right after its last completion: the peer would retry into a closed port until its QP fails
 * (RETRY_EXC_ERR; seen with mr_xfer's target, also while this drain stopped after 64 idle
 * iterations, before that timer). Iterations until DRAIN_QUIET_NS without work, at most
 * DRAIN_NS. */
#define DRAIN_QUIET_NS 1000000ull
#define DRAIN_NS 20000000ull
static void drain(struct mr_daemon *d)
{
	uint64_t t0 = mr_now_ns(), last = t0, now = t0;

	while (!try_take())
		nap_us(BG_IDLE_US);
	while (now - last < DRAIN_QUIET_NS && now - t0 < DRAIN_NS) {
		bool work = iter_locked(d) > 0;

		now = mr_now_ns();
		if (work)
			last = now;
	}
	give_back();
}

void mrd_embed_stop(void)
{
	if (!g_started)
		return;
	g_started = false;
	atomic_store(&g_bg_stop, true);
	mrd_embed_kick();
	pthread_join(g_bg, NULL);
	drain(mrd_shard0());
	mrd_request_stop();
	mrd_join();
	mrd_finish(0);
}
