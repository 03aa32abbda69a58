/* SPDX-License-Identifier: MIT
 * shm server: listening socket, sessions, the poll entry points.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm_membarrier.h"
#include "shm_server_priv.h"
#include "shm_sock.h"

/* Control messages read per session per control poll: bounds the time one app can take. */
#define CTL_BUDGET 8

static int bind_path(struct mr_shm_server *srv, const char *path, uint32_t mode)
{
	int fd;

	if (strlen(path) >= sizeof(srv->addr.sun_path))
		return -ENAMETOOLONG;
	srv->addr.sun_family = AF_UNIX;
	strcpy(srv->addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&srv->addr, sizeof(srv->addr)) < 0) {
		/* Replace a stale socket file (daemon crashed) but never steal a live one. */
		int probe, live;

		if (errno != EADDRINUSE)
			goto fail;
		probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		live = probe >= 0 &&
		       connect(probe, (struct sockaddr *)&srv->addr, sizeof(srv->addr)) == 0;
		if (probe >= 0)
			close(probe);
		if (live) {
			close(fd);
			return -EADDRINUSE;
		}
		unlink(path);
		if (bind(fd, (struct sockaddr *)&srv->addr, sizeof(srv->addr)) < 0)
			goto fail;
	}
	if (chmod(path, mode) < 0 || listen(fd, 64) < 0)
		goto fail;
	return fd;
fail:
	{
		int e = errno;

		close(fd);
		return -e;
	}
}

/* The server without its listening socket (lsock -1); NULL + errno. */
static struct mr_shm_server *server_alloc(const struct mr_shm_server_params *p)
{
	struct mr_shm_server *srv;

	if (p->ops->alloc_pd == NULL || p->ops->create_cq == NULL || p->ops->create_qp == NULL ||
	    p->ops->post_send == NULL || p->ops->post_recv == NULL || p->ops->poll_cq == NULL) {
		errno = EINVAL;
		return NULL;
	}
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return NULL;
	srv->lsock = -1;
	srv->ops = p->ops;
	srv->be = p->backend;
	srv->max_sessions = p->max_sessions ? p->max_sessions : 64;
	srv->max_objects = p->max_objects ? p->max_objects : 4096;
	if (srv->max_objects > MR_SHM_HTAB_MAX)
		srv->max_objects = MR_SHM_HTAB_MAX;
	srv->max_session_bytes = p->max_session_bytes ? p->max_session_bytes : 4ull << 30;
	srv->q_pd = p->max_session_pd;
	srv->q_mr = p->max_session_mr;
	srv->q_cq = p->max_session_cq;
	srv->q_qp = p->max_session_qp;
	srv->q_wr = p->max_session_wr;
	srv->q_inline = p->max_session_inline;
	srv->ctl_every = p->ctl_every ? p->ctl_every : 64;
	srv->db_asym = p->db_asym && mr_membarrier_global_ok();
	srv->db_period_ns = (uint64_t)(p->db_barrier_ms ? p->db_barrier_ms : 10) * 1000000u;
	srv->next_id = 1;
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (srv->epfd < 0) {
		int e = errno;

		free(srv);
		errno = e;
		return NULL;
	}
	return srv;
}

struct mr_shm_server *mr_shm_server_create_unbound(const struct mr_shm_server_params *p)
{
	if (p == NULL || p->ops == NULL) {
		errno = EINVAL;
		return NULL;
	}
	return server_alloc(p);
}

struct mr_shm_server *mr_shm_server_create(const struct mr_shm_server_params *p)
{
	struct mr_shm_server *srv;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int rc;

	if (p == NULL || p->sock_path == NULL || p->ops == NULL || p->sock_path[0] == '\0') {
		errno = EINVAL;
		return NULL;
	}
	srv = server_alloc(p);
	if (srv == NULL)
		return NULL;
	srv->lsock = bind_path(srv, p->sock_path, p->sock_mode ? p->sock_mode : 0660);
	if (srv->lsock < 0) {
		rc = srv->lsock;
		close(srv->epfd);
		goto fail;
	}
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->lsock, &ev) < 0) {
		rc = -errno;
		close(srv->lsock);
		unlink(srv->addr.sun_path);
		close(srv->epfd);
		goto fail;
	}
	return srv;
fail:
	free(srv);
	errno = -rc;
	return NULL;
}

static void session_close(struct mr_shm_server *srv, struct mr_shm_session *s)
{
	struct mr_shm_session **pp;

	for (pp = &srv->sessions; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	epoll_ctl(srv->epfd, EPOLL_CTL_DEL, s->sock, NULL);
	close(s->sock);
	mr_shm_session_reclaim(s);
	mr_shm_htab_fini(&s->h);
	if (s->db != NULL)
		munmap(s->db, sizeof(*s->db));
	free(s->mr_hash);
	free(s->db_again);
	free(s->db_pend);
	free(s);
	srv->nsessions--;
	srv->st.sessions_closed++;
}

void mr_shm_server_destroy(struct mr_shm_server *srv)
{
	if (srv == NULL)
		return;
	while (srv->sessions != NULL)
		session_close(srv, srv->sessions);
	if (srv->lsock >= 0) {
		close(srv->lsock);
		unlink(srv->addr.sun_path);
	}
	close(srv->epfd);
	free(srv);
}

/* Makes fd (a connected, non-blocking socket) a session; closes it on failure. */
static int session_add(struct mr_shm_server *srv, int fd)
{
	struct mr_shm_session *s;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };

	if (srv->nsessions >= srv->max_sessions) {
		close(fd); /* the app sees ECONNRESET/EOF at HELLO */
		return -EBUSY;
	}
	s = calloc(1, sizeof(*s));
	/* Salt: handle values differ between sessions (see shm_handle.h). */
	if (s == NULL || mr_shm_htab_init(&s->h, srv->max_objects,
					  (uint16_t)(srv->next_id * 0x6b43u + 0x2f1)) < 0) {
		free(s);
		close(fd);
		return -ENOMEM;
	}
	s->sock = fd;
	s->id = srv->next_id++;
	s->srv = srv;
	ev.data.ptr = s;
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int e = errno;

		mr_shm_htab_fini(&s->h);
		free(s);
		close(fd);
		return -e;
	}
	s->next = srv->sessions;
	srv->sessions = s;
	srv->nsessions++;
	srv->st.sessions_opened++;
	return 0;
}

static void accept_all(struct mr_shm_server *srv)
{
	for (;;) {
		int fd = accept4(srv->lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		(void)session_add(srv, fd);
	}
}

int mr_shm_server_adopt(struct mr_shm_server *srv, int fd)
{
	int fl;

	if (fd < 0)
		return -EINVAL;
	if (srv == NULL) {
		close(fd);
		return -EINVAL;
	}
	/* The session socket is read with MSG_DONTWAIT, but replies must not block the engine
	 * either: whatever the accepting side did, the fd is made non-blocking here. */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)) {
		int e = errno;

		close(fd);
		return -e;
	}
	return session_add(srv, fd);
}

int mr_shm_listen(const char *path, uint32_t mode)
{
	struct mr_shm_server tmp;

	if (path == NULL || path[0] == '\0')
		return -EINVAL;
	memset(&tmp, 0, sizeof(tmp));
	return bind_path(&tmp, path, mode ? mode : 0660);
}

int mr_shm_accept(int lsock)
{
	int fd;

	if (lsock < 0)
		return -EINVAL;
	fd = accept4(lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return fd;
}

/* Returns the number of messages handled, or -1 when the session must be closed. */
static int session_read(struct mr_shm_session *s)
{
	int done = 0;

	while (done < CTL_BUDGET) {
		union {
			struct mrc_ctl_req req;
			uint8_t raw[sizeof(struct mrc_ctl_req) + 64];
		} m;
		struct mrc_ctl_resp resp;
		int fds[MR_SHM_MAX_FDS];
		unsigned int nfds = 0;
		int out_fd = -1, rc;
		ssize_t n = mr_shm_recv(s->sock, &m, sizeof(m), fds, MR_SHM_MAX_FDS, &nfds,
					MSG_DONTWAIT);

		if (n == -EAGAIN || n == -EWOULDBLOCK)
			break;
		if (n == -EMSGSIZE) {
			/* Oversized datagram (already discarded): answered as malformed. */
			n = 1;
			m.raw[0] = 0;
		} else if (n <= 0) {
			return -1; /* EOF, ECONNRESET, ...: the app is gone */
		}
		mr_shm_ctl_handle(s, &m, (size_t)n, fds, nfds, &resp, &out_fd);
		rc = mr_shm_send(s->sock, &resp, sizeof(resp), &out_fd, out_fd >= 0 ? 1 : 0);
		if (out_fd >= 0)
			close(out_fd);
		if (rc < 0 && rc != -EAGAIN)
			return -1;
		done++;
		if (s->closing)
			return -1;
	}
	return done;
}

int mr_shm_server_poll_ctl(struct mr_shm_server *srv)
{
	struct epoll_event ev[16];
	int n, i, work = 0;

	if (srv == NULL)
		return -EINVAL;
	n = epoll_wait(srv->epfd, ev, 16, 0);
	for (i = 0; i < n; i++) {
		struct mr_shm_session *s = ev[i].data.ptr;
		int r;

		if (s == NULL) {
			accept_all(srv);
			work++;
			continue;
		}
		r = session_read(s);
		if (r < 0) {
			/* Later events in this batch may name s: drop them before freeing. */
			int j;

			for (j = i + 1; j < n; j++)
				if (ev[j].data.ptr == s)
					ev[j].data.ptr = NULL, ev[j].events = 0;
			session_close(srv, s);
			work++;
		} else {
			work += r;
		}
	}
	return work;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The fence-free doorbell's barrier (shm_abi.h mrc_db_ring_asym): every QP in a session's
 * pending map had its bit cleared before this call, so after it each is read once more (moved
 * into the retry map). Counted before the call, so that a test that sees the count unchanged
 * knows no barrier has started. If the call fails, the QPs stay pending too and are read again
 * after the next attempt: late, never lost for good. */
static void db_barrier(struct mr_shm_server *srv, uint64_t now)
{
	struct mr_shm_session *s;
	bool ok;

	srv->st.db_barriers++;
	ok = mr_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0;
	if (!ok)
		srv->st.db_barrier_fails++;
	for (s = srv->sessions; s != NULL; s = s->next) {
		struct mr_shm_retry *p = s->db_pend, *a = s->db_again;

		if (p == NULL || !s->db_pend_any)
			continue;
		for (uint32_t w = 0; w < MRC_DB_SLOTS / 4096; w++) {
			for (uint64_t x = p->sum[w]; x != 0; x &= x - 1) {
				uint32_t l = w * 64 + (uint32_t)__builtin_ctzll(x);

				a->leaf[l] |= p->leaf[l];
				if (ok)
					p->leaf[l] = 0;
			}
			a->sum[w] |= p->sum[w];
			if (ok)
				p->sum[w] = 0;
		}
		s->db_pend_any = !ok;
	}
	srv->db_pend_t0 = ok ? 0 : now;
}

/* A barrier is due db_period_ns after a QP first waited for one when the engine is idle, and at
 * twice that when it is busy: about 1 us of the engine's time here, 18 us while an app spins
 * on the other CPU (its interrupt costs that app a few us), so a few per second at most. The
 * clock is read only while a QP waits: on idle polls, and every 64th busy one. */
static void db_barrier_due(struct mr_shm_server *srv, int work)
{
	uint64_t now;

	if (work > 0 && ++srv->db_polls % 64 != 0)
		return;
	now = now_ns();
	if (srv->db_pend_t0 == 0)
		srv->db_pend_t0 = now;
	else if (now - srv->db_pend_t0 >= (work > 0 ? 2 : 1) * srv->db_period_ns)
		db_barrier(srv, now);
}

int mr_shm_server_poll_data(struct mr_shm_server *srv)
{
	struct mr_shm_session *s;
	int work = 0;
	bool pend = false;

	if (srv == NULL)
		return -EINVAL;
	for (s = srv->sessions; s != NULL; s = s->next) {
		work += mr_shm_session_poll_data(s);
		pend |= s->db_pend_any;
	}
	if (pend)
		db_barrier_due(srv, work);
	return work;
}

int mr_shm_server_poll(struct mr_shm_server *srv)
{
	int work;

	if (srv == NULL)
		return -EINVAL;
	work = mr_shm_server_poll_data(srv);
	if (srv->iter++ % srv->ctl_every == 0)
		work += mr_shm_server_poll_ctl(srv);
	return work;
}

int mr_shm_server_fd(const struct mr_shm_server *srv)
{
	return srv != NULL ? srv->epfd : -EINVAL;
}

unsigned int mr_shm_server_nsessions(const struct mr_shm_server *srv)
{
	return srv != NULL ? srv->nsessions : 0;
}

void mr_shm_server_get_stats(const struct mr_shm_server *srv, struct mr_shm_server_stats *st)
{
	if (srv != NULL && st != NULL)
		*st = srv->st;
}
