/* SPDX-License-Identifier: MIT
 * Queue overflow (more WRs than the depth, a CQ too small for its QP, SENDs with no receive
 * posted) and eventfd games: the app shares the CQ notification fd with the daemon and tries
 * to make the daemon's wake-up write block (issue 8 defect 5). Written for whatever fd type
 * mrc_cq_event_fd() returns: an eventfd (today: the app can clear O_NONBLOCK on the shared open
 * file and fill the counter) or a socket (the app stops reading).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostile.h"

#define BUF_LEN (1u << 20)

static struct mr_send_wr small_write(const struct hside *a, const struct hside *b,
				     uint64_t wr_id)
{
	struct mr_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = MR_WR_RDMA_WRITE;
	w.send_flags = MR_SEND_SIGNALED;
	w.num_sge = 1;
	w.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)a->buf, 64, mrc_mr_lkey(a->mr) };
	w.rdma.remote_addr = (uint64_t)(uintptr_t)b->buf;
	w.rdma.rkey = mrc_mr_rkey(b->mr);
	return w;
}

void case_queue_overflow(void)
{
	struct hside a, b;
	struct mr_send_wr ws[64];
	struct mr_recv_wr rs[64];
	struct mr_wc wc[128];
	int rc, n, bad = 0;
	bool seen[64] = { false };

	/* More WRs than the ring holds, in one batch: the library stops at the depth. */
	hside_open(&a, 0, BUF_LEN, 4, 4, 4, 0x01);
	hside_open(&b, 1, BUF_LEN, 64, 64, 256, 0x02);
	hpair_connect(&a, &b, 16, 7);
	for (int i = 0; i < 64; i++)
		ws[i] = small_write(&a, &b, 0x900 + (uint64_t)i);
	rc = mrc_post_send_batch(a.qp, ws, 64);
	HCHECK(rc == (int)a.qp->sq_size, "post_send_batch of 64 on a %u-entry SQ returned %d",
	       a.qp->sq_size, rc);
	memset(rs, 0, sizeof(rs));
	for (int i = 0; i < 64; i++) {
		rs[i].wr_id = 0xa00 + (uint64_t)i;
		rs[i].num_sge = 1;
		rs[i].sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)a.buf + 4096, 64,
						    mrc_mr_lkey(a.mr) };
	}
	rc = mrc_post_recv_batch(a.qp, rs, 64);
	HCHECK(rc == (int)a.qp->rq_size, "post_recv_batch of 64 on a %u-entry RQ returned %d",
	       a.qp->rq_size, rc);
	/* CQ overrun: a 4-entry CQ under 64 signaled WRITEs, not polled for a while. */
	for (int posted = (int)a.qp->sq_size; posted < 64;) {
		rc = mrc_post_send(a.qp, &ws[posted]);
		if (rc == -ENOMEM) {
			hsleep_ms(1);
			continue;
		}
		HCHECK(rc == 0, "post_send: %d", rc);
		if (rc != 0)
			break;
		posted++;
	}
	hsleep_ms(1000);
	n = hpoll_quiet(a.cq, wc, 128, 500);
	for (int i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id - 0x900;

		if (k >= 64 || seen[k] || wc[i].qp_num != mrc_qp_num(a.qp))
			bad++;
		else
			seen[k] = true;
	}
	HCHECK(bad == 0, "CQ overrun: %d completions with unknown/duplicate wr_ids", bad);
	printf("mr_hostile: CQ overrun: %d of 64 send completions delivered through a 4-entry CQ\n",
	       n);
	hcheck_daemons("queue overflow");
	hside_close(&a);
	hside_close(&b);
	/* SENDs with no receive posted: RNR NAKs (IBA 9.7.5.2.8) until rnr_retry runs out. */
	hside_open(&a, 0, BUF_LEN, 16, 16, 64, 0x01);
	hside_open(&b, 1, BUF_LEN, 16, 16, 64, 0x02);
	hpair_connect(&a, &b, 16, 1);
	ws[0] = small_write(&a, &b, 0xb00);
	ws[0].opcode = MR_WR_SEND;
	HCHECK(mrc_post_send(a.qp, &ws[0]) == 0, "post SEND");
	n = hpoll(a.cq, wc, 1, g_opt->timeout_s * 1000);
	HCHECK(n == 1 && wc[0].status == MR_WC_RNR_RETRY_EXC_ERR,
	       "SEND to a QP without receives: %s status %d, want RNR_RETRY_EXC_ERR",
	       n == 1 ? "completion" : "no completion", n == 1 ? (int)wc[0].status : -1);
	hcheck_daemons("rnr overflow");
	hside_close(&a);
	hside_close(&b);
	hok("queue overflow: batch stops at the depth, CQ overrun survived, RNR retry exceeded");
}

/* Intended (IBA 11.4.2.1, CQ overrun is an error the consumer is told about): a CQ too small
 * for its QP loses completions; the app must learn it (error completion or QP in ERR), not see
 * them vanish silently. */
void case_cq_overrun_report(void)
{
	struct hside a, b;
	struct mr_send_wr w;
	struct mr_wc wc[128];
	struct mrc_qp_attr qa;
	int n, posted = 0;
	bool told = false;

	hside_open(&a, 0, BUF_LEN, 64, 4, 4, 0x01);
	hside_open(&b, 1, BUF_LEN, 64, 64, 256, 0x02);
	hpair_connect(&a, &b, 16, 7);
	while (posted < 64) {
		w = small_write(&a, &b, 0x900 + (uint64_t)posted);
		if (mrc_post_send(a.qp, &w) == 0)
			posted++;
		else
			hsleep_ms(1);
	}
	hsleep_ms(1000);
	n = hpoll_quiet(a.cq, wc, 128, 500);
	for (int i = 0; i < n; i++)
		told |= wc[i].status != MR_WC_SUCCESS;
	memset(&qa, 0, sizeof(qa));
	if (!told && mrc_query_qp(a.qp, &qa) == 0 && qa.qp_state == MR_QPS_ERR)
		told = true;
	HCHECK(n == 64 || told, "CQ overrun: %d of 64 completions delivered, the rest lost "
	       "silently (no error completion, QP state %u)", n, qa.qp_state);
	hcheck_daemons("cq overrun report");
	hside_close(&a);
	hside_close(&b);
}

enum fd_kind { FD_EVENTFD, FD_SOCKET, FD_OTHER };

static enum fd_kind fd_kind_of(int fd)
{
	char link[64], target[64];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
		return FD_SOCKET;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return FD_OTHER;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0 ? FD_EVENTFD : FD_OTHER;
}

struct toggler {
	int fd;
	atomic_bool stop;
	atomic_ulong flips;
};

/* Flips O_NONBLOCK on the shared open file as fast as it can: a daemon that checks the flag and
 * then writes loses the race sooner or later. */
static void *toggle(void *arg)
{
	struct toggler *t = arg;
	int fl = fcntl(t->fd, F_GETFL);

	while (!atomic_load(&t->stop)) {
		fcntl(t->fd, F_SETFL, fl & ~O_NONBLOCK);
		fcntl(t->fd, F_SETFL, fl | O_NONBLOCK);
		atomic_fetch_add(&t->flips, 1);
	}
	return NULL;
}

/* One completion the shm server itself generates (a WR it rejects), with the CQ armed. */
static bool one_event(struct hside *a, uint64_t id, unsigned int timeout_ms)
{
	struct mrc_sqe *e;
	struct mr_wc wc;

	mrc_req_notify_cq(a->cq, false);
	e = hsqe_next(a->qp);
	e->wr_id = id;
	e->opcode = 0xdead;
	e->send_flags = MR_SEND_SIGNALED;
	hsq_publish(a->qp, 1);
	return hpoll(a->cq, &wc, 1, timeout_ms) == 1 && wc.wr_id == id;
}

static void drain_fd(int fd, enum fd_kind k)
{
	uint64_t v;
	char buf[4096];
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (k == FD_EVENTFD)
		(void)!read(fd, &v, sizeof(v));
	else
		while (read(fd, buf, sizeof(buf)) > 0)
			;
}

void case_eventfd_block(void)
{
	struct hside a;
	struct toggler t = { .fd = -1 };
	pthread_t th;
	enum fd_kind kind;
	uint64_t end;
	unsigned int events = 0;
	bool stuck = false;
	int fd, fl;

	hside_open(&a, 0, BUF_LEN, 64, 16, 64, 0x01);
	fd = mrc_cq_event_fd(a.cq);
	kind = fd_kind_of(fd);
	printf("mr_hostile: CQ notification fd %d is %s\n", fd,
	       kind == FD_EVENTFD ? "an eventfd" : kind == FD_SOCKET ? "a socket" : "other");
	/* Game 1: fill it (eventfd counter at its maximum / socket never read) and make it
	 * blocking for good. */
	if (kind == FD_EVENTFD) {
		uint64_t max = 0xfffffffffffffffeull;

		HCHECK(write(fd, &max, sizeof(max)) == sizeof(max), "fill eventfd: %s",
		       strerror(errno));
	} else if (kind == FD_SOCKET) {
		int one = 1;

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &one, sizeof(one));
	}
	fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	for (int i = 0; i < 300 && !stuck; i++) {
		if (!one_event(&a, 0xe000 + (uint64_t)i, 2000))
			stuck = true;
		else
			events++;
	}
	HCHECK(!stuck, "blocking full notification fd: the daemon stopped completing after %u "
	       "events (blocked in its wake-up write?)", events);
	/* Game 2: flip O_NONBLOCK under the daemon's feet while events keep coming. */
	t.fd = fd;
	if (!stuck && pthread_create(&th, NULL, toggle, &t) == 0) {
		end = hnow_ms() + 4000;
		while (hnow_ms() < end && !stuck) {
			if (!one_event(&a, 0xf000 + (uint64_t)events, 2000))
				stuck = true;
			else
				events++;
			if (events % 500 == 0 && hping(0) < 0)
				stuck = true;
		}
		atomic_store(&t.stop, true);
		pthread_join(th, NULL);
		printf("mr_hostile: %u armed events, %lu O_NONBLOCK flips\n", events,
		       (unsigned long)atomic_load(&t.flips));
		HCHECK(!stuck, "O_NONBLOCK flipped on the shared notification fd: the daemon stopped "
		       "answering after %u events (engine blocked in write)", events);
	}
	if (stuck) {
		int rc;

		/* Release the daemon (it is blocked writing to our fd) so that the suite can go
		 * on and report. */
		drain_fd(fd, kind);
		hsleep_ms(200);
		rc = hping(0);
		printf("mr_hostile: after draining the fd the daemon %s\n",
		       rc == 0 ? "answers again (it had been blocked in its write)" :
				 "still does not answer");
	}
	/* Afterwards the wake-up must work again for a well-behaved use of the fd. */
	drain_fd(fd, kind);
	{
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct mr_wc late[8];

		hpoll_quiet(a.cq, late, 8, 300); /* the event that was stuck, if any */
		drain_fd(fd, kind);

		HCHECK(one_event(&a, 0xfeed, 2000), "no completion after the games");
		HCHECK(poll(&pfd, 1, 2000) == 1, "armed CQ: no wake-up after the games");
	}
	if (!stuck)
		hok("notification fd games: %u events, the daemon never blocked", events);
	/* Bad fds at creation: a pipe and a blocking eventfd are refused. */
	{
		struct mrc_ctl_req req;
		struct mrc_ctl_resp resp;
		int p[2], ring = -1, rc;
		int blk = eventfd(0, 0);

		HCHECK(pipe(p) == 0, "pipe");
		memset(&req, 0, sizeof(req));
		req.u.create_cq.depth = 4;
		rc = mrc_rpc(a.s, MRC_CTL_CREATE_CQ, &req, p[1], &resp, &ring);
		HCHECK(rc < 0, "create_cq with a pipe as its notification fd: %d", rc);
		if (ring >= 0)
			close(ring);
		ring = -1;
		rc = mrc_rpc(a.s, MRC_CTL_CREATE_CQ, &req, blk, &resp, &ring);
		HCHECK(rc < 0 || kind != FD_EVENTFD, "create_cq with a blocking eventfd: %d", rc);
		if (ring >= 0)
			close(ring);
		close(p[0]);
		close(p[1]);
		close(blk);
	}
	hcheck_daemons("eventfd games");
	hside_close(&a);
}
