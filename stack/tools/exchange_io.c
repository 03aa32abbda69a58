/* SPDX-License-Identifier: MIT
 * perftest / rc_pingpong setup conversation over TCP (see exchange.h for the byte layout).
 */
#include "exchange.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = ev };
	int r;

	do {
		r = poll(&pfd, 1, timeout_ms > 0 ? timeout_ms : -1);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	return 0;
}

/* Our side writes each message with one send() so that a stock perftest, which reads every
 * message with a single read() of exactly its size, gets it whole (TCP delivers a small
 * segment written at once in one piece on a LAN; perftest has the same assumption). */
static int write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n;
		int r = wait_fd(fd, POLLOUT, timeout_ms);

		if (r < 0)
			return r;
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return errno == EPIPE ? -ECONNRESET : -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* We, unlike perftest, tolerate a message split across segments. */
static int read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n;
		int r = wait_fd(fd, POLLIN, timeout_ms);

		if (r < 0)
			return r;
		n = recv(fd, p, len, 0);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int mr_pt_xchg(struct mr_pt_conn *c, const void *mine, void *theirs, size_t len)
{
	int r;

	if (c == NULL || c->fd < 0 || mine == NULL || theirs == NULL || len == 0)
		return -EINVAL;
	/* ctx_xchg_data_ethernet(): the client writes first, the server reads first. */
	if (c->client) {
		r = write_all(c->fd, mine, len, c->timeout_ms);
		if (r == 0)
			r = read_all(c->fd, theirs, len, c->timeout_ms);
	} else {
		r = read_all(c->fd, theirs, len, c->timeout_ms);
		if (r == 0)
			r = write_all(c->fd, mine, len, c->timeout_ms);
	}
	return r;
}

int mr_pt_preamble(struct mr_pt_conn *c, struct mr_pt_preamble *p)
{
	uint8_t mv[MR_PT_VERSION_LEN], rv[MR_PT_VERSION_LEN];
	uint8_t m4[4], r4[4], mm[MR_PT_MTU_LEN], rm[MR_PT_MTU_LEN];
	int r, rem_mtu;

	if (c == NULL || p == NULL)
		return -EINVAL;
	r = mr_pt_mtu_encode(p->mtu, mm);
	if (r < 0)
		return r;
	/* 1. exchange_versions(), unless both sides were told not to (--dont_xchg_versions) */
	if (p->skip_version) {
		mr_pt_version_encode(rv);
		memcpy(p->peer_version_raw, rv, sizeof(rv));
		c->peer_version = 0;
		if (mr_pt_version_decode(rv, &c->peer_version) < 0)
			return -EPROTO;
		goto sys_data;
	}
	if (p->version_out != NULL)
		memcpy(mv, p->version_out, sizeof(mv));
	else
		mr_pt_version_encode(mv);
	r = mr_pt_xchg(c, mv, rv, sizeof(mv));
	if (r < 0)
		return r;
	memcpy(p->peer_version_raw, rv, sizeof(rv));
	if (mr_pt_version_decode(rv, &c->peer_version) < 0 ||
	    c->peer_version < MR_PT_MIN_PEER_VERSION)
		return -EPROTO;
sys_data:
	/* 2. check_sys_data(): cycle buffer, then cache line size; keep the larger of each */
	mr_pt_u32_encode(p->cycle_buffer, m4);
	r = mr_pt_xchg(c, m4, r4, sizeof(m4));
	if (r < 0)
		return r;
	if (mr_pt_u32_decode(r4) > p->cycle_buffer)
		p->cycle_buffer = mr_pt_u32_decode(r4);
	mr_pt_u32_encode(p->cache_line_size, m4);
	r = mr_pt_xchg(c, m4, r4, sizeof(m4));
	if (r < 0)
		return r;
	if (mr_pt_u32_decode(r4) > p->cache_line_size)
		p->cache_line_size = mr_pt_u32_decode(r4);
	/* 3. check_mtu(): 2 bytes since 5.31; an invalid peer MTU is ignored, as perftest does */
	r = mr_pt_xchg(c, mm, rm, sizeof(mm));
	if (r < 0)
		return r;
	rem_mtu = mr_pt_mtu_decode(rm);
	if (rem_mtu > 0 && (uint32_t)rem_mtu < p->mtu)
		p->mtu = (uint32_t)rem_mtu;
	return 0;
}

int mr_pt_hand_shake(struct mr_pt_conn *c, const struct mr_pt_dest *mine, struct mr_pt_dest *theirs)
{
	char m[MR_PT_KEY_LEN_GID], t[MR_PT_KEY_LEN_GID];
	int n, r;

	if (c == NULL || mine == NULL || theirs == NULL)
		return -EINVAL;
	n = mr_pt_dest_encode(mine, c->with_gid, m, sizeof(m));
	if (n < 0)
		return n;
	r = mr_pt_xchg(c, m, t, (size_t)n);
	if (r < 0)
		return r;
	return mr_pt_dest_decode(t, (size_t)n, c->with_gid, theirs) < 0 ? -EPROTO : 0;
}

int mr_pt_xchg_bw_report(struct mr_pt_conn *c, const struct mr_pt_bw_report *mine,
			 struct mr_pt_bw_report *theirs)
{
	uint8_t m[MR_PT_BW_REPORT_STEPS][8], t[MR_PT_BW_REPORT_STEPS][8];
	int r;

	if (c == NULL || mine == NULL || theirs == NULL)
		return -EINVAL;
	mr_pt_u64_encode(mine->size, m[0]);
	mr_pt_u64_encode(mine->iters, m[1]);
	mr_pt_double_encode(mine->bw_peak, m[2]);
	mr_pt_double_encode(mine->bw_avg, m[3]);
	mr_pt_double_encode(mine->msg_rate, m[4]);
	/* xchg_bw_reports(): one ctx_xchg_data per field, iters 8 bytes for peers >= 5.33 */
	for (int i = 0; i < MR_PT_BW_REPORT_STEPS; i++) {
		r = mr_pt_xchg(c, m[i], t[i], 8);
		if (r < 0)
			return r;
	}
	theirs->size = mr_pt_u64_decode(t[0]);
	theirs->iters = mr_pt_u64_decode(t[1]);
	theirs->bw_peak = mr_pt_double_decode(t[2]);
	theirs->bw_avg = mr_pt_double_decode(t[3]);
	theirs->msg_rate = mr_pt_double_decode(t[4]);
	return 0;
}

int mr_pt_close(struct mr_pt_conn *c, const struct mr_pt_dest *mine, struct mr_pt_dest *theirs)
{
	static const char done[MR_PT_DONE_LEN] = "done";
	int r;

	if (c == NULL || c->fd < 0)
		return -EINVAL;
	r = mr_pt_hand_shake(c, mine, theirs);
	/* Both sides write "done\0" and close without reading the peer's: nobody waits for it. */
	if (r == 0)
		r = write_all(c->fd, done, sizeof(done), c->timeout_ms);
	close(c->fd);
	c->fd = -1;
	return r;
}

int mr_pp_exchange(int fd, bool client, int timeout_ms, const struct mr_pp_dest *mine,
		   struct mr_pp_dest *theirs)
{
	return mr_pp_exchange_cb(fd, client, timeout_ms, mine, theirs, NULL, NULL);
}

int mr_pp_exchange_cb(int fd, bool client, int timeout_ms, const struct mr_pp_dest *mine,
		      struct mr_pp_dest *theirs,
		      int (*on_peer)(void *arg, const struct mr_pp_dest *theirs), void *arg)
{
	char m[MR_PP_MSG_LEN], t[MR_PP_MSG_LEN];
	static const char done[MR_PT_DONE_LEN] = "done";
	int r;

	if (fd < 0 || mine == NULL || theirs == NULL)
		return -EINVAL;
	r = mr_pp_dest_encode(mine, m, sizeof(m));
	if (r < 0)
		return r;
	if (client) {
		/* pp_client_exch_dest(): write, read, then "done" tells the server we are RTR */
		r = write_all(fd, m, sizeof(m), timeout_ms);
		if (r == 0)
			r = read_all(fd, t, sizeof(t), timeout_ms);
		if (r == 0 && mr_pp_dest_decode(t, sizeof(t), theirs) < 0)
			return -EPROTO;
		if (r == 0 && on_peer != NULL)
			r = on_peer(arg, theirs);
		if (r == 0)
			r = write_all(fd, done, sizeof(done), timeout_ms);
		return r;
	}
	/* pp_server_exch_dest(): read, (connect,) write ours, then wait for the client's "done" */
	r = read_all(fd, t, sizeof(t), timeout_ms);
	if (r == 0 && mr_pp_dest_decode(t, sizeof(t), theirs) < 0)
		return -EPROTO;
	if (r == 0 && on_peer != NULL)
		r = on_peer(arg, theirs);
	if (r == 0)
		r = write_all(fd, m, sizeof(m), timeout_ms);
	if (r == 0) {
		char d[MR_PT_DONE_LEN];

		r = read_all(fd, d, sizeof(d), timeout_ms);
		if (r == 0 && memcmp(d, done, sizeof(d)) != 0)
			return -EPROTO;
	}
	return r;
}

int mr_pt_accept(uint16_t port, int timeout_ms, void (*listening)(void *arg, uint16_t port),
		 void *arg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
				  .sin_port = htons(port) };
	socklen_t sl = sizeof(sa);
	int one = 1, lfd, fd, r;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
		r = -errno;
		close(lfd);
		return r;
	}
	if (listening != NULL)
		listening(arg, ntohs(sa.sin_port));
	r = wait_fd(lfd, POLLIN, timeout_ms);
	if (r < 0) {
		close(lfd);
		return r;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	r = fd < 0 ? -errno : fd;
	close(lfd);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return r;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mr_pt_connect(const char *host, uint16_t port, int timeout_ms)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char svc[8];
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int r, one = 1;

	if (host == NULL)
		return -EINVAL;
	snprintf(svc, sizeof(svc), "%u", port);
	r = getaddrinfo(host, svc, &hints, &res);
	if (r != 0)
		return -EHOSTUNREACH;
	for (;;) {
		for (struct addrinfo *t = res; t != NULL; t = t->ai_next) {
			int fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC, t->ai_protocol);

			if (fd < 0)
				continue;
			if (connect(fd, t->ai_addr, t->ai_addrlen) == 0) {
				freeaddrinfo(res);
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				return fd;
			}
			r = -errno;
			close(fd);
		}
		if (now_ms() >= deadline)
			break;
		usleep(50 * 1000);
	}
	freeaddrinfo(res);
	return r < 0 ? r : -ECONNREFUSED;
}

int mr_pt_setup_script(enum mr_pt_test t, unsigned num_qps, unsigned *qp_idx, unsigned max,
		       unsigned *connect_after)
{
	unsigned n = 0, conn;

	if (num_qps == 0 || qp_idx == NULL || connect_after == NULL)
		return -EINVAL;
#define PUSH(i)                             \
	do {                                \
		if (n >= max)               \
			return -ENOSPC;     \
		qp_idx[n++] = (i);          \
	} while (0)
	switch (t) {
	case MR_PT_WRITE_BW:
	case MR_PT_READ_BW:
	case MR_PT_ATOMIC_BW:
		/* write_bw.c: per-QP keys, connect, per-QP again (printed), one "after RTR" */
		for (unsigned i = 0; i < num_qps; i++)
			PUSH(i);
		conn = n;
		for (unsigned i = 0; i < num_qps; i++)
			PUSH(i);
		PUSH(0);
		break;
	case MR_PT_SEND_BW:
	case MR_PT_SEND_LAT:
		/* send_bw.c / send_lat.c: per-QP keys, connect, one sync, per-QP again */
		for (unsigned i = 0; i < num_qps; i++)
			PUSH(i);
		conn = n;
		PUSH(0);
		for (unsigned i = 0; i < num_qps; i++)
			PUSH(i);
		break;
	case MR_PT_WRITE_LAT:
	case MR_PT_READ_LAT:
	case MR_PT_ATOMIC_LAT:
		/* write_lat.c: QP 0, per-QP keys, connect, per-QP again, one "after RTR" */
		PUSH(0);
		for (unsigned i = 0; i < num_qps; i++)
			PUSH(i);
		conn = n;
		for (unsigned i = 0; i < num_qps; i++)
			PUSH(i);
		PUSH(0);
		break;
	default:
		return -EINVAL;
	}
#undef PUSH
	*connect_after = conn;
	return (int)n;
}

unsigned mr_pt_tail_flags(enum mr_pt_test t, bool run_all)
{
	switch (t) {
	case MR_PT_WRITE_BW:
	case MR_PT_READ_BW:
	case MR_PT_ATOMIC_BW:
		return MR_PT_TAIL_SERVER_PASSIVE | MR_PT_TAIL_REPORT_XCHG | MR_PT_TAIL_CLOSE;
	case MR_PT_SEND_BW:
		return MR_PT_TAIL_SYNC_PER_SIZE_PRE |
		       (run_all ? MR_PT_TAIL_SYNC_PER_SIZE_POST : 0u) | MR_PT_TAIL_CLOSE;
	case MR_PT_SEND_LAT:
		return MR_PT_TAIL_SYNC_PER_SIZE_PRE | MR_PT_TAIL_CLOSE;
	case MR_PT_WRITE_LAT:
		return 0; /* write_lat.c never closes the connection explicitly */
	case MR_PT_READ_LAT:
	case MR_PT_ATOMIC_LAT:
		return MR_PT_TAIL_SERVER_CLOSE_EARLY | MR_PT_TAIL_CLOSE;
	}
	return 0;
}
