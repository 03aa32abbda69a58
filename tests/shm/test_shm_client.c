/* SPDX-License-Identifier: MIT
 * libmetaroce against the real shm server with a fake backend: control calls reach the
 * backend with the right arguments, work requests cross the rings with the right fields and
 * untranslated addresses, completions come back in order, event fds wake up, bad calls fail
 * with the documented errno, sessions are isolated, a killed app is reclaimed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <stdio.h>

#include "harness.h"
#include "metaroce/metaroce.h"
#include "metaroce/shm_abi.h"
#include "shm/client_priv.h"
#include "shm/shm_membarrier.h"
#include "shm/shm_sock.h"

#define ACC_ALL (MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | \
		 MR_ACCESS_REMOTE_ATOMIC)

struct env {
	struct mrc_session *s;
	struct mrc_pd *pd;
	uint8_t *buf;
	struct mrc_mr *mr;
	struct mrc_cq *cq;
	struct mrc_qp *qp;
};

/* A harness with the server parameters of q (harness_start_quota; NULL: the defaults). */
static int setup_with(void **state, const struct mr_shm_server_params *q)
{
	struct harness *h = calloc(1, sizeof(*h));

	if (h == NULL || harness_start_quota(h, q) < 0)
		return -1;
	*state = h;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, NULL);
}

static int teardown(void **state)
{
	struct harness *h = *state;

	harness_stop(h);
	free(h);
	return 0;
}

static struct mrc_qp *make_qp(struct mrc_pd *pd, struct mrc_cq *cq, uint32_t wr)
{
	struct mrc_qp_init_attr init = {
		.qp_type = MRC_QPT_RC, .send_cq = cq, .recv_cq = cq, .max_send_wr = wr,
		.max_recv_wr = wr, .max_send_sge = 4, .max_recv_sge = 4, .max_inline_data = 128,
	};

	return mrc_create_qp(pd, &init);
}

static void to_rts_mtu(struct mrc_qp *qp, uint32_t dest, uint32_t mtu)
{
	struct mrc_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	a.qp_access_flags = ACC_ALL;
	assert_int_equal(mrc_modify_qp(qp, &a, MRC_QP_STATE | MRC_QP_ACCESS_FLAGS |
				       MRC_QP_PKEY_INDEX), 0);
	a.qp_state = MR_QPS_RTR;
	a.dest_qp_num = dest;
	a.rq_psn = 0x123456;
	a.path_mtu = mtu;
	memcpy(a.path.dgid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x00\x00\x02", 16);
	a.path.udp_sport = 0xc001;
	assert_int_equal(mrc_modify_qp(qp, &a, MRC_QP_STATE | MRC_QP_PATH | MRC_QP_PATH_MTU |
				       MRC_QP_DEST_QPN | MRC_QP_RQ_PSN |
				       MRC_QP_MAX_DEST_RD_ATOMIC | MRC_QP_MIN_RNR_TIMER), 0);
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = 0xabcdef;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	assert_int_equal(mrc_modify_qp(qp, &a, MRC_QP_STATE | MRC_QP_SQ_PSN | MRC_QP_TIMEOUT |
				       MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY |
				       MRC_QP_MAX_QP_RD_ATOMIC), 0);
}

static void to_rts(struct mrc_qp *qp, uint32_t dest)
{
	to_rts_mtu(qp, dest, 1024);
}

static void env_open(struct harness *h, struct env *e, uint32_t cq_depth, bool rts)
{
	memset(e, 0, sizeof(*e));
	e->s = mrc_open(h->path);
	assert_non_null(e->s);
	e->pd = mrc_alloc_pd(e->s);
	assert_non_null(e->pd);
	e->buf = mrc_alloc_buf(e->s, 16384);
	assert_non_null(e->buf);
	e->mr = mrc_reg_mr(e->pd, e->buf, 16384, ACC_ALL);
	assert_non_null(e->mr);
	e->cq = mrc_create_cq(e->s, cq_depth);
	assert_non_null(e->cq);
	e->qp = make_qp(e->pd, e->cq, 16);
	assert_non_null(e->qp);
	if (rts)
		to_rts(e->qp, 0x77);
}

static void env_close(struct env *e)
{
	assert_int_equal(mrc_destroy_qp(e->qp), 0);
	assert_int_equal(mrc_destroy_cq(e->cq), 0);
	assert_int_equal(mrc_dereg_mr(e->mr), 0);
	assert_int_equal(mrc_free_buf(e->s, e->buf), 0);
	assert_int_equal(mrc_dealloc_pd(e->pd), 0);
	assert_int_equal(mrc_close(e->s), 0);
}

static bool cond_sends(struct harness *h, void *arg)
{
	return h->fb.n_sends >= *(unsigned int *)arg;
}

static bool cond_recvs(struct harness *h, void *arg)
{
	return h->fb.n_recvs >= *(unsigned int *)arg;
}

static bool cond_all_reclaimed(struct harness *h, void *arg)
{
	(void)arg;
	return h->fb.live_qp == 0 && h->fb.live_mr == 0 && h->fb.live_cq == 0 &&
	       h->fb.live_pd == 0 && mr_shm_server_nsessions(h->srv) == 0;
}

/* After writing a ring index by hand, as the library does after every post (shm_abi.h). */
static void ring_db(struct mrc_qp *qp)
{
	if (qp->o.s->db != NULL)
		mrc_db_ring(qp->o.s->db, qp->db_slot);
}

/* Polls the CQ until n completions arrived (or ~5 s). */
static int poll_n(struct mrc_cq *cq, struct mr_wc *wc, int n)
{
	int got = 0, spins = 0;

	while (got < n && spins++ < 50000) {
		int r = mrc_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (r == 0)
			usleep(100);
	}
	return got;
}

/* ---------------------------------------------------------------------------------------- */

static void test_open_query(void **state)
{
	struct harness *h = *state;
	struct mrc_port_attr pa;
	struct mrc_session *s;

	assert_null(mrc_open("/tmp/mrshm-no-such-daemon.sock"));
	assert_int_equal(errno, ENOENT);
	setenv("METAROCE_SOCK", h->path, 1);
	s = mrc_open(NULL);
	unsetenv("METAROCE_SOCK");
	assert_non_null(s);
	memset(&pa, 0, sizeof(pa));
	assert_int_equal(mrc_query_port(s, &pa), 0);
	assert_int_equal(pa.state, MRC_PORT_ACTIVE);
	assert_int_equal(pa.active_mtu, 1024);
	assert_int_equal(pa.gid_count, 2);
	assert_memory_equal(pa.mac, "\x02\x00\x00\x00\x00\x01", 6);
	assert_memory_equal(pa.gid[1], "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x00\x00\x01", 16);
	assert_int_equal(pa.max_inline_data, 448);
	assert_int_equal(mrc_query_port(s, NULL), -EINVAL);
	assert_int_equal(mr_shm_server_nsessions(h->srv), 1);
	assert_int_equal(mrc_close(s), 0);
}

static void test_mem_mr(void **state)
{
	struct harness *h = *state;
	struct mrc_session *s = mrc_open(h->path);
	struct mrc_pd *pd;
	struct mrc_mr *mr;
	uint8_t *buf, *host;
	char *heap;

	assert_non_null(s);
	pd = mrc_alloc_pd(s);
	assert_non_null(pd);
	buf = mrc_alloc_buf(s, 10000); /* rounded up to 3 pages */
	assert_non_null(buf);
	assert_int_equal((uintptr_t)buf % 4096, 0);
	assert_int_equal(buf[12287], 0);
	mr = mrc_reg_mr(pd, buf + 4096, 100, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ);
	assert_non_null(mr);

	fake_lock(&h->fb);
	assert_int_equal(h->fb.n_mr, 1);
	assert_int_equal(h->fb.mrs[0].iova, (uint64_t)(uintptr_t)(buf + 4096)); /* app address */
	assert_int_equal(h->fb.mrs[0].len, 100);
	assert_int_equal(h->fb.mrs[0].access, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ);
	host = h->fb.mrs[0].host;
	assert_ptr_not_equal(host, buf + 4096); /* the daemon's own mapping ... */
	assert_int_equal(mrc_mr_lkey(mr), h->fb.mrs[0].lkey);
	assert_int_equal(mrc_mr_rkey(mr), h->fb.mrs[0].rkey);
	fake_unlock(&h->fb);
	/* ... of the same memory, both ways (zero copy). */
	memcpy(buf + 4096, "zero-copy", 10);
	assert_memory_equal(host, "zero-copy", 10);
	memcpy(host + 50, "from-engine", 12);
	assert_memory_equal(buf + 4096 + 50, "from-engine", 12);

	/* Memory the daemon cannot reach. */
	heap = malloc(4096);
	assert_null(mrc_reg_mr(pd, heap, 4096, MR_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EFAULT);
	assert_non_null(strstr(mrc_last_error(s), "mrc_alloc_buf"));
	free(heap);
	assert_null(mrc_reg_mr(pd, buf + 8192, 8192, MR_ACCESS_LOCAL_WRITE)); /* runs off end */
	assert_int_equal(errno, EFAULT);
	assert_null(mrc_reg_mr(pd, buf, 64, MR_ACCESS_REMOTE_WRITE)); /* IBA 10.6.3.1 */
	assert_int_equal(errno, EINVAL);
	assert_null(mrc_reg_mr(pd, buf, 0, MR_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EINVAL);

	assert_int_equal(mrc_free_buf(s, buf), -EBUSY);
	assert_int_equal(mrc_free_buf(s, buf + 1), -EINVAL);
	assert_int_equal(mrc_dealloc_pd(pd), -EBUSY); /* the daemon refuses: MR uses it */
	assert_int_equal(mrc_dereg_mr(mr), 0);
	assert_int_equal(mrc_free_buf(s, buf), 0);
	assert_int_equal(mrc_dealloc_pd(pd), 0);

	/* Many same-size buffers: consecutive mappings abut (the kernel places each new mapping
	 * right below the previous one), so one buffer's end address is the next one's start.
	 * Freeing in allocation order must find each buffer by its start. Run in a child: in this
	 * process the harness's server maps the same memfds in between and breaks the adjacency. */
	{
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (pid == 0) {
			struct mrc_session *cs = mrc_open(h->path);
			uint8_t *many[8];
			int bad = cs == NULL;

			for (int i = 0; i < 8 && !bad; i++)
				bad = (many[i] = mrc_alloc_buf(cs, 65536)) == NULL;
			for (int i = 0; i < 8 && !bad; i++)
				bad = mrc_free_buf(cs, many[i]) != 0;
			_exit(bad);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	fake_lock(&h->fb);
	assert_int_equal(h->fb.live_mr, 0);
	assert_int_equal(h->fb.live_pd, 0);
	fake_unlock(&h->fb);
	assert_int_equal(mrc_close(s), 0);
}

static void test_qp_modify_query(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mrc_qp_attr q;
	struct mr_send_wr wr = { .opcode = MR_WR_SEND };
	struct mrc_qp *q2;

	env_open(h, &e, 8, false);
	fake_lock(&h->fb);
	assert_int_equal(h->fb.qps[0].caps.max_send_wr, 16);
	assert_int_equal(h->fb.qps[0].caps.max_send_sge, 4);
	assert_int_equal(h->fb.qps[0].caps.max_inline_data, 128);
	assert_ptr_equal(h->fb.qps[0].scq, h->fb.cqs[0]);
	assert_ptr_equal(h->fb.qps[0].pd, &h->fb.pds[0]);
	fake_unlock(&h->fb);
	assert_int_equal(mrc_qp_num(e.qp), 0x100);
	/* Sends are refused before RTS (IBA 10.8.2), receives before INIT. */
	assert_int_equal(mrc_post_send(e.qp, &wr), -EINVAL);
	assert_int_equal(mrc_post_recv(e.qp, &(struct mr_recv_wr){ .wr_id = 1 }), -EINVAL);
	to_rts(e.qp, 0x77);
	fake_lock(&h->fb);
	assert_int_equal(h->fb.qps[0].modifies, 3);
	assert_int_equal(h->fb.qps[0].last_mask, MRC_QP_STATE | MRC_QP_SQ_PSN | MRC_QP_TIMEOUT |
			 MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY | MRC_QP_MAX_QP_RD_ATOMIC);
	assert_int_equal(h->fb.qps[0].attr.qp_state, MR_QPS_RTS);
	assert_int_equal(h->fb.qps[0].attr.dest_qp_num, 0x77);
	assert_int_equal(h->fb.qps[0].attr.rq_psn, 0x123456);
	assert_int_equal(h->fb.qps[0].attr.sq_psn, 0xabcdef);
	assert_int_equal(h->fb.qps[0].attr.path.udp_sport, 0xc001);
	assert_memory_equal(h->fb.qps[0].attr.path.dgid,
			    "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x00\x00\x02", 16);
	fake_unlock(&h->fb);
	memset(&q, 0, sizeof(q));
	assert_int_equal(mrc_query_qp(e.qp, &q), 0);
	assert_int_equal(q.qp_state, MR_QPS_RTS);
	assert_int_equal(q.sq_psn, 0xabcdef);
	assert_int_equal(q.timeout, 14);
	/* MetaRoCE attributes travel only with MRC_QP_TRANSPORT; without it the backend never
	 * sees them (an old 88-byte attr is not over-read). */
	q.transport = MRC_TRANSPORT_METAROCE;
	q.n_entropies = 16;
	q.cc = MRC_CC_METAROCE;
	assert_int_equal(mrc_modify_qp(e.qp, &q, MRC_QP_TIMEOUT), 0);
	fake_lock(&h->fb);
	assert_int_equal(h->fb.qps[0].attr.transport, MRC_TRANSPORT_RC);
	assert_int_equal(h->fb.qps[0].attr.n_entropies, 0);
	fake_unlock(&h->fb);
	assert_int_equal(mrc_modify_qp(e.qp, &q, MRC_QP_TRANSPORT), 0);
	fake_lock(&h->fb);
	assert_int_equal(h->fb.qps[0].last_mask, MRC_QP_TRANSPORT);
	assert_int_equal(h->fb.qps[0].attr.transport, MRC_TRANSPORT_METAROCE);
	assert_int_equal(h->fb.qps[0].attr.n_entropies, 16);
	assert_int_equal(h->fb.qps[0].attr.cc, MRC_CC_METAROCE);
	fake_unlock(&h->fb);
	/* Out-of-range transport values are refused in the library. */
	q.n_entropies = 0;
	assert_int_equal(mrc_modify_qp(e.qp, &q, MRC_QP_TRANSPORT), -EINVAL);
	q.n_entropies = 257;
	assert_int_equal(mrc_modify_qp(e.qp, &q, MRC_QP_TRANSPORT), -EINVAL);
	q.n_entropies = 4;
	q.cc = 3;
	assert_int_equal(mrc_modify_qp(e.qp, &q, MRC_QP_TRANSPORT), -EINVAL);
	q.cc = MRC_CC_NONE;
	q.transport = 2;
	assert_int_equal(mrc_modify_qp(e.qp, &q, MRC_QP_TRANSPORT), -EINVAL);
	fake_lock(&h->fb);
	assert_int_equal(h->fb.qps[0].modifies, 5);
	fake_unlock(&h->fb);
	/* Bad masks never reach the daemon; CQ in use cannot go. */
	assert_int_equal(mrc_modify_qp(e.qp, &q, 0), -EINVAL);
	assert_int_equal(mrc_modify_qp(e.qp, &q, 1u << 20), -EINVAL);
	assert_int_equal(mrc_modify_qp(e.qp, NULL, MRC_QP_STATE), -EINVAL);
	assert_int_equal(mrc_destroy_cq(e.cq), -EBUSY);
	/* Capabilities out of range. */
	q2 = mrc_create_qp(e.pd, &(struct mrc_qp_init_attr){ .qp_type = MRC_QPT_RC,
		.send_cq = e.cq, .recv_cq = e.cq, .max_send_wr = 4, .max_send_sge = 17 });
	assert_null(q2);
	assert_int_equal(errno, EINVAL);
	q2 = mrc_create_qp(e.pd, &(struct mrc_qp_init_attr){ .qp_type = 3,
		.send_cq = e.cq, .recv_cq = e.cq, .max_send_wr = 4 });
	assert_null(q2);
	assert_int_equal(errno, EOPNOTSUPP);
	env_close(&e);
}

static void test_post_send_kinds(void **state)
{
	struct harness *h = *state;
	struct env e;
	uint64_t base;
	unsigned int want;
	struct mr_send_wr w;
	struct mr_recv_wr r;
	int i;
	static const struct { enum mr_wr_opcode op; uint32_t flags; } kinds[] = {
		{ MR_WR_SEND, MR_SEND_SIGNALED },
		{ MR_WR_SEND_WITH_IMM, 0 },
		{ MR_WR_RDMA_WRITE, MR_SEND_SIGNALED | MR_SEND_FENCE },
		{ MR_WR_RDMA_WRITE_WITH_IMM, MR_SEND_SIGNALED | MR_SEND_SOLICITED },
		{ MR_WR_RDMA_READ, MR_SEND_SIGNALED },
		{ MR_WR_ATOMIC_CMP_AND_SWP, MR_SEND_SIGNALED },
		{ MR_WR_ATOMIC_FETCH_AND_ADD, 0 },
		{ MR_WR_SEND_WITH_INV, MR_SEND_SIGNALED },
	};

	env_open(h, &e, 32, true);
	base = (uint64_t)(uintptr_t)e.buf;
	for (i = 0; i < 8; i++) {
		memset(&w, 0, sizeof(w));
		w.wr_id = 1000 + (uint64_t)i;
		w.opcode = kinds[i].op;
		w.send_flags = kinds[i].flags;
		w.num_sge = 1;
		w.sg_list[0].addr = base + 64 * (uint64_t)i;
		w.sg_list[0].length = (kinds[i].op == MR_WR_ATOMIC_CMP_AND_SWP ||
				       kinds[i].op == MR_WR_ATOMIC_FETCH_AND_ADD) ? 8 : 100 + i;
		w.sg_list[0].lkey = mrc_mr_lkey(e.mr);
		w.imm_data = 0xdead0000u + (uint32_t)i;
		w.invalidate_rkey = 0x4242;
		w.rdma.remote_addr = 0x7f0000001000ull + (uint64_t)i;
		w.rdma.rkey = 0x5555;
		w.atomic.remote_addr = 0x7f0000002000ull;
		w.atomic.rkey = 0x6666;
		w.atomic.compare_add = 0x1111222233334444ull;
		w.atomic.swap = 0x5555666677778888ull;
		assert_int_equal(mrc_post_send(e.qp, &w), 0);
	}
	/* Inline: two pieces from ordinary (unregistered) memory, copied at post time. */
	{
		char a[40] = "inline-part-one/", b[40] = "part-two";

		memset(&w, 0, sizeof(w));
		w.wr_id = 2000;
		w.opcode = MR_WR_SEND;
		w.send_flags = MR_SEND_INLINE | MR_SEND_SIGNALED;
		w.num_sge = 2;
		w.sg_list[0].addr = (uint64_t)(uintptr_t)a;
		w.sg_list[0].length = 16;
		w.sg_list[1].addr = (uint64_t)(uintptr_t)b;
		w.sg_list[1].length = 9;
		assert_int_equal(mrc_post_send(e.qp, &w), 0);
		memset(a, 'X', sizeof(a)); /* the app may reuse its buffers at once */
	}
	/* A receive with two SGEs. */
	memset(&r, 0, sizeof(r));
	r.wr_id = 3000;
	r.num_sge = 2;
	r.sg_list[0] = (struct mr_sge){ base + 8192, 512, mrc_mr_lkey(e.mr) };
	r.sg_list[1] = (struct mr_sge){ base + 12288, 256, mrc_mr_lkey(e.mr) };
	assert_int_equal(mrc_post_recv(e.qp, &r), 0);

	want = 9;
	assert_true(harness_wait(h, cond_sends, &want, 5000));
	want = 1;
	assert_true(harness_wait(h, cond_recvs, &want, 5000));
	fake_lock(&h->fb);
	assert_int_equal(h->fb.n_sends, 9);
	for (i = 0; i < 8; i++) {
		const struct mr_send_wr *g = &h->fb.sends[i];
		bool atomic = kinds[i].op == MR_WR_ATOMIC_CMP_AND_SWP ||
			      kinds[i].op == MR_WR_ATOMIC_FETCH_AND_ADD;

		assert_int_equal(g->wr_id, 1000 + (uint64_t)i);
		assert_int_equal(g->opcode, kinds[i].op);
		assert_int_equal(g->send_flags, kinds[i].flags);
		assert_int_equal(g->num_sge, 1);
		/* Addresses reach the backend untranslated: they are the MR's iova. */
		assert_int_equal(g->sg_list[0].addr, base + 64 * (uint64_t)i);
		assert_int_equal(g->sg_list[0].length, atomic ? 8 : 100 + (uint32_t)i);
		assert_int_equal(g->sg_list[0].lkey, h->fb.mrs[0].lkey);
		assert_int_equal(g->imm_data, 0xdead0000u + (uint32_t)i);
		assert_int_equal(g->invalidate_rkey, 0x4242);
		if (atomic) {
			assert_int_equal(g->atomic.remote_addr, 0x7f0000002000ull);
			assert_int_equal(g->atomic.rkey, 0x6666);
			assert_int_equal(g->atomic.compare_add, 0x1111222233334444ull);
			assert_int_equal(g->atomic.swap, 0x5555666677778888ull);
		} else {
			assert_int_equal(g->rdma.remote_addr, 0x7f0000001000ull + (uint64_t)i);
			assert_int_equal(g->rdma.rkey, 0x5555);
		}
	}
	assert_int_equal(h->fb.sends[8].wr_id, 2000);
	assert_int_equal(h->fb.sends[8].send_flags, MR_SEND_INLINE | MR_SEND_SIGNALED);
	assert_int_equal(h->fb.sends[8].num_sge, 1);
	assert_int_equal(h->fb.sends[8].sg_list[0].length, 25);
	assert_memory_equal(h->fb.inline_copy[8], "inline-part-one/part-two", 25);
	assert_int_equal(h->fb.recvs[0].wr_id, 3000);
	assert_int_equal(h->fb.recvs[0].num_sge, 2);
	assert_int_equal(h->fb.recvs[0].sg_list[1].addr, base + 12288);
	assert_int_equal(h->fb.recvs[0].sg_list[1].length, 256);
	fake_unlock(&h->fb);
	env_close(&e);
}

static void test_completions_order(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mr_wc wc[16];
	int i, got = 0;

	env_open(h, &e, 4, true); /* ring of 4: 10 completions must wrap and wait */
	for (i = 0; i < 10; i++) {
		struct mr_wc w = {
			.wr_id = 500 + (uint64_t)i, .status = i == 7 ? MR_WC_REM_ACCESS_ERR : 0,
			.opcode = i % 2 ? MR_WC_RECV : MR_WC_RDMA_WRITE, .byte_len = 100u * i,
			.imm_data = 0xabc0u + (uint32_t)i, .qp_num = 0x100, .src_qp = 0x77,
			.wc_flags = i % 2 ? MR_WC_WITH_IMM : 0,
		};

		assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	}
	while (got < 10) {
		int r = poll_n(e.cq, wc + got, 3 < 10 - got ? 3 : 10 - got);

		assert_true(r > 0);
		got += r;
	}
	for (i = 0; i < 10; i++) {
		assert_int_equal(wc[i].wr_id, 500 + (uint64_t)i);
		assert_int_equal(wc[i].status, i == 7 ? MR_WC_REM_ACCESS_ERR : MR_WC_SUCCESS);
		assert_int_equal(wc[i].opcode, i % 2 ? MR_WC_RECV : MR_WC_RDMA_WRITE);
		assert_int_equal(wc[i].byte_len, 100u * (uint32_t)i);
		assert_int_equal(wc[i].imm_data, 0xabc0u + (uint32_t)i);
		assert_int_equal(wc[i].qp_num, 0x100);
		assert_int_equal(wc[i].src_qp, 0x77);
		assert_int_equal(wc[i].wc_flags, i % 2 ? MR_WC_WITH_IMM : 0);
	}
	assert_int_equal(mrc_poll_cq(e.cq, 16, wc), 0);
	assert_int_equal(mrc_poll_cq(e.cq, -1, wc), -EINVAL);
	assert_int_equal(mrc_poll_cq(NULL, 1, wc), -EINVAL);
	env_close(&e);
}

static bool cond_events(struct harness *h, void *arg)
{
	struct mr_shm_server_stats st;

	mr_shm_server_get_stats(h->srv, &st);
	return st.events >= *(uint64_t *)arg;
}

static void test_event_fd(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mr_wc w = { .wr_id = 9, .opcode = MR_WC_SEND }, out;
	struct pollfd pfd;

	env_open(h, &e, 8, true);
	pfd.fd = mrc_cq_event_fd(e.cq);
	pfd.events = POLLIN;
	assert_true(pfd.fd >= 0);
	/* Not armed: the entry arrives, no event. */
	assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	assert_int_equal(poll_n(e.cq, &out, 1), 1);
	assert_int_equal(poll(&pfd, 1, 100), 0);
	assert_int_equal(mrc_cq_ack_events(e.cq), 0);
	/* Armed: exactly one wake-up. */
	assert_int_equal(mrc_req_notify_cq(e.cq, false), 0);
	assert_int_equal(mrc_poll_cq(e.cq, 1, &out), 0);
	w.wr_id = 10;
	assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(mrc_cq_ack_events(e.cq), 1);
	assert_int_equal(mrc_poll_cq(e.cq, 1, &out), 1);
	assert_int_equal(out.wr_id, 10);
	w.wr_id = 11;
	assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	assert_int_equal(poll_n(e.cq, &out, 1), 1);
	assert_int_equal(poll(&pfd, 1, 100), 0); /* the arm was used up */
	/* Solicited only: a send completion does not wake, a receive does. */
	assert_int_equal(mrc_req_notify_cq(e.cq, true), 0);
	w.wr_id = 12;
	assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	assert_int_equal(poll_n(e.cq, &out, 1), 1);
	assert_int_equal(poll(&pfd, 1, 100), 0);
	w.wr_id = 13;
	w.opcode = MR_WC_RECV;
	assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(mrc_cq_ack_events(e.cq), 1);
	/* An app that makes its fd blocking still gets its wake-ups: the daemon's end is another
	 * socket, sent on with MSG_DONTWAIT (the engine never blocks, test_event_fd_flood). */
	{
		int fl = fcntl(pfd.fd, F_GETFL);
		struct mr_shm_server_stats st;
		uint64_t want;

		assert_int_equal(fcntl(pfd.fd, F_SETFL, fl & ~O_NONBLOCK), 0);
		assert_int_equal(mrc_req_notify_cq(e.cq, false), 0);
		w.wr_id = 14;
		assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
		assert_int_equal(poll_n(e.cq, &out, 1), 1);
		assert_int_equal(poll(&pfd, 1, 5000), 1);
		assert_int_equal(mrc_cq_ack_events(e.cq), 1); /* drains without blocking */
		assert_int_equal(mrc_cq_ack_events(e.cq), 0);
		want = 3; /* counted by the server thread just after the send */
		assert_true(harness_wait(h, cond_events, &want, 5000));
		mr_shm_server_get_stats(h->srv, &st);
		assert_int_equal(st.events_refused, 0);
		assert_int_equal(st.events, 3);
		assert_int_equal(fcntl(pfd.fd, F_SETFL, fl), 0);
	}
	assert_int_equal(mrc_req_notify_cq(NULL, false), -EINVAL);
	assert_int_equal(mrc_cq_event_fd(NULL), -EINVAL);
	env_close(&e);
}

static void wait_ready(struct mrc_cq *cq, int n)
{
	int i;

	for (i = 0; i < 5000 && mrc_cq_ready(cq) < n; i++)
		usleep(1000);
	assert_int_equal(mrc_cq_ready(cq), n);
}

/* IBA 11.4.2.2 and rxe: an arm raises an event for the next completion, never for entries
 * already in the ring. Issue 9 (stock ib_send_lat -e): an arm that found unpolled entries
 * used to wake the app at once; perftest takes one entry per event, so the extra event made
 * it skip a wait, run ahead and fail (exit 17). An armed CQ whose ring is full while newer
 * completions wait in the engine still wakes the app (they came after the arm). */
static void test_event_armed_with_pending(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mr_wc w = { .wr_id = 20, .opcode = MR_WC_SEND }, out[16];
	struct pollfd pfd;
	int i;

	env_open(h, &e, 8, true);
	pfd.fd = mrc_cq_event_fd(e.cq);
	pfd.events = POLLIN;
	/* Two entries published while unarmed: no event. */
	assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	w.wr_id = 21;
	assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	wait_ready(e.cq, 2);
	assert_int_equal(poll(&pfd, 1, 100), 0);
	/* perftest's loop: arm, then poll one. The arm finds an entry left: no event. */
	assert_int_equal(mrc_req_notify_cq(e.cq, false), 0);
	assert_int_equal(mrc_poll_cq(e.cq, 1, &out[0]), 1);
	assert_int_equal(out[0].wr_id, 20);
	assert_int_equal(poll(&pfd, 1, 200), 0);
	/* The next completion wakes it, exactly once. */
	w.wr_id = 22;
	assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(mrc_cq_ack_events(e.cq), 1);
	assert_int_equal(poll_n(e.cq, out, 2), 2);
	assert_int_equal(out[0].wr_id, 21);
	assert_int_equal(out[1].wr_id, 22);
	assert_int_equal(poll(&pfd, 1, 100), 0);
	/* Solicited only: a send completion does not wake (IBA 11.4.2.2). */
	assert_int_equal(mrc_req_notify_cq(e.cq, true), 0);
	w.wr_id = 23;
	assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	wait_ready(e.cq, 1);
	assert_int_equal(poll(&pfd, 1, 100), 0);
	assert_int_equal(poll_n(e.cq, out, 1), 1);
	/* The ring fills and two more completions wait in the engine (the solicited-only arm
	 * above is still set: no event); arming again for every completion wakes the app
	 * although nothing new reached the ring. */
	for (i = 0; i < 10; i++) {
		w.wr_id = 100 + (uint64_t)i;
		assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
	}
	wait_ready(e.cq, 8);
	assert_int_equal(poll(&pfd, 1, 200), 0);
	assert_int_equal(mrc_req_notify_cq(e.cq, false), 0);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(mrc_cq_ack_events(e.cq), 1);
	assert_int_equal(mrc_poll_cq(e.cq, 16, out), 8);
	assert_int_equal(out[0].wr_id, 100);
	wait_ready(e.cq, 2);
	assert_int_equal(mrc_poll_cq(e.cq, 16, out), 2);
	assert_int_equal(out[1].wr_id, 109);
	env_close(&e);
}

/* Issue 8 defect 5a: an app that makes its end of the wake-up blocking and never drains it,
 * while arming and getting completions far more often than the socket buffer holds, cannot
 * stall the engine: later completions still arrive at once, another CQ's wake-ups still
 * work, and the events it did not read are still there to be acknowledged. */
static void test_event_fd_flood(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mrc_cq *cq2;
	struct mr_wc w = { .wr_id = 1, .opcode = MR_WC_SEND }, out;
	struct pollfd pfd;
	struct mr_shm_server_stats st;
	uint64_t want;
	int fl, i, n;

	env_open(h, &e, 8, true);
	cq2 = mrc_create_cq(e.s, 8);
	assert_non_null(cq2);
	pfd.fd = mrc_cq_event_fd(e.cq);
	pfd.events = POLLIN;
	fl = fcntl(pfd.fd, F_GETFL);
	assert_int_equal(fcntl(pfd.fd, F_SETFL, fl & ~O_NONBLOCK), 0);
	for (i = 0; i < 2000; i++) {
		assert_int_equal(mrc_req_notify_cq(e.cq, false), 0);
		w.wr_id = 100 + (uint64_t)i;
		assert_int_equal(fake_cq_push(&h->fb, 0, &w), 0);
		assert_int_equal(poll_n(e.cq, &out, 1), 1);
		assert_int_equal(out.wr_id, 100 + (uint64_t)i);
	}
	/* The engine went on: the second CQ (backend CQ 1) is served and woken. */
	mr_shm_server_get_stats(h->srv, &st);
	want = st.events + 1;
	assert_int_equal(mrc_req_notify_cq(cq2, false), 0);
	w.wr_id = 7;
	assert_int_equal(fake_cq_push(&h->fb, 1, &w), 0);
	assert_int_equal(poll_n(cq2, &out, 1), 1);
	assert_int_equal(out.wr_id, 7);
	assert_true(harness_wait(h, cond_events, &want, 5000));
	pfd.fd = mrc_cq_event_fd(cq2);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(mrc_cq_ack_events(cq2), 1);
	/* The flooded fd: readable, drains without blocking (some of the 2000 were dropped when
	 * its buffer was full, which is fine: one pending event is all a waiter needs). */
	pfd.fd = mrc_cq_event_fd(e.cq);
	assert_int_equal(poll(&pfd, 1, 0), 1);
	n = mrc_cq_ack_events(e.cq);
	assert_true(n >= 1 && n <= 2000);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	mr_shm_server_get_stats(h->srv, &st);
	assert_int_equal(st.events_refused, 0);
	assert_int_equal(fcntl(pfd.fd, F_SETFL, fl), 0);
	assert_int_equal(mrc_destroy_cq(cq2), 0);
	env_close(&e);
}

static struct mrc_qp *quota_qp(struct mrc_pd *pd, struct mrc_cq *cq, uint32_t wr,
				uint32_t inl)
{
	struct mrc_qp_init_attr init;

	memset(&init, 0, sizeof(init));
	init.qp_type = MRC_QPT_RC;
	init.send_cq = init.recv_cq = cq;
	init.max_send_wr = init.max_recv_wr = wr;
	init.max_inline_data = inl;
	return mrc_create_qp(pd, &init);
}

/* Issue 8 defect 4: per-session quotas (PDs, MRs, CQs, QPs, WRs + CQEs, inline bytes). One
 * session reaching them gets -EDQUOT with the metaroced field named in mrc_last_error;
 * freeing makes room again; another session is not affected. */
static void test_session_quotas(void **state)
{
	struct mr_shm_server_params q = {
		.max_session_pd = 2, .max_session_mr = 2, .max_session_cq = 3,
		.max_session_qp = 2, .max_session_wr = 160, .max_session_inline = 1024,
	};
	struct harness h;
	struct mrc_session *a, *b;
	struct mrc_pd *pd, *pd2, *bpd;
	struct mrc_mr *mr1, *mr2;
	struct mrc_cq *cq1, *cq2, *cq3, *bcq;
	struct mrc_qp *qp1, *qp2, *qp3, *bqp;
	uint8_t *buf;

	(void)state;
	assert_int_equal(harness_start_quota(&h, &q), 0);
	a = mrc_open(h.path);
	assert_non_null(a);
	pd = mrc_alloc_pd(a);
	pd2 = mrc_alloc_pd(a);
	assert_non_null(pd);
	assert_non_null(pd2);
	assert_null(mrc_alloc_pd(a));
	assert_int_equal(errno, EDQUOT);
	assert_non_null(strstr(mrc_last_error(a), "session_max_pd"));
	buf = mrc_alloc_buf(a, 16384);
	assert_non_null(buf);
	mr1 = mrc_reg_mr(pd, buf, 4096, ACC_ALL);
	mr2 = mrc_reg_mr(pd, buf + 4096, 4096, ACC_ALL);
	assert_non_null(mr1);
	assert_non_null(mr2);
	assert_null(mrc_reg_mr(pd, buf + 8192, 4096, ACC_ALL));
	assert_int_equal(errno, EDQUOT);
	assert_non_null(strstr(mrc_last_error(a), "session_max_mr"));
	cq1 = mrc_create_cq(a, 16);
	cq2 = mrc_create_cq(a, 16);
	assert_non_null(cq1);
	assert_non_null(cq2);
	/* 32 CQEs + 128 WRs of one QP: 160. */
	qp1 = quota_qp(pd, cq1, 64, 16); /* inline 64 x 16 = 1024 bytes: all of it */
	assert_non_null(qp1);
	assert_null(quota_qp(pd, cq1, 1, 16)); /* one more inline byte budget: refused */
	assert_int_equal(errno, EDQUOT);
	assert_non_null(strstr(mrc_last_error(a), "session_max_inline"));
	assert_null(mrc_create_cq(a, 1)); /* WR budget exhausted */
	assert_int_equal(errno, EDQUOT);
	assert_non_null(strstr(mrc_last_error(a), "session_max_wr"));
	assert_int_equal(mrc_destroy_qp(qp1), 0);
	qp1 = quota_qp(pd, cq1, 16, 0);
	qp2 = quota_qp(pd, cq2, 16, 0);
	assert_non_null(qp1);
	assert_non_null(qp2);
	assert_null(quota_qp(pd, cq2, 1, 0));
	assert_int_equal(errno, EDQUOT);
	assert_non_null(strstr(mrc_last_error(a), "session_max_qp"));
	cq3 = mrc_create_cq(a, 1);
	assert_non_null(cq3);
	assert_null(mrc_create_cq(a, 1));
	assert_int_equal(errno, EDQUOT);
	assert_non_null(strstr(mrc_last_error(a), "session_max_cq"));
	/* Freeing gives the quota back. */
	assert_int_equal(mrc_destroy_qp(qp2), 0);
	qp3 = quota_qp(pd, cq2, 16, 0);
	assert_non_null(qp3);
	/* Another session has its own quotas. */
	b = mrc_open(h.path);
	assert_non_null(b);
	bpd = mrc_alloc_pd(b);
	assert_non_null(bpd);
	bcq = mrc_create_cq(b, 16);
	assert_non_null(bcq);
	bqp = quota_qp(bpd, bcq, 16, 16);
	assert_non_null(bqp);
	assert_int_equal(mrc_close(b), 0);
	assert_int_equal(mrc_close(a), 0);
	(void)mr1;
	(void)mr2;
	(void)cq3;
	(void)qp3;
	harness_stop(&h);
}

/* Issue 8 defect 5b at the API: an RC READ needing more than 2^23 - 1 response PSNs (only
 * possible at path MTU 256) is refused at post with a message, never queued to stall. */
static void test_read_beyond_psn_space(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mr_send_wr wr;

	env_open(h, &e, 8, false);
	to_rts_mtu(e.qp, 0x77, 256);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = MR_WR_RDMA_READ;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)e.buf;
	wr.sg_list[0].lkey = mrc_mr_lkey(e.mr);
	wr.sg_list[0].length = 1u << 31;
	assert_int_equal(mrc_post_send(e.qp, &wr), -EINVAL);
	assert_non_null(strstr(mrc_last_error(e.s), "2^23-1 response packets at path MTU 256"));
	wr.sg_list[0].length = 4096;
	assert_int_equal(mrc_post_send(e.qp, &wr), 0);
	env_close(&e);
}

static void test_bad_calls(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mr_send_wr w;
	struct mr_recv_wr r;
	int i, rc;

	env_open(h, &e, 8, true);
	/* NULL objects. */
	assert_null(mrc_alloc_pd(NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(mrc_alloc_buf(NULL, 10));
	assert_null(mrc_alloc_buf(e.s, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(mrc_create_cq(e.s, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(mrc_create_cq(e.s, MRC_RING_MAX_ENTRIES + 1));
	assert_null(mrc_create_qp(NULL, NULL));
	assert_null(mrc_create_qp(e.pd, NULL));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(mrc_close(NULL), -EINVAL);
	assert_int_equal(mrc_dealloc_pd(NULL), -EINVAL);
	assert_int_equal(mrc_dereg_mr(NULL), -EINVAL);
	assert_int_equal(mrc_destroy_cq(NULL), -EINVAL);
	assert_int_equal(mrc_destroy_qp(NULL), -EINVAL);
	assert_int_equal(mrc_post_send(NULL, &w), -EINVAL);
	assert_int_equal(mrc_post_send(e.qp, NULL), -EINVAL);
	assert_int_equal(mrc_post_recv(e.qp, NULL), -EINVAL);
	assert_int_equal(mrc_free_buf(e.s, NULL), -EINVAL);
	/* Malformed work requests. */
	memset(&w, 0, sizeof(w));
	w.opcode = (enum mr_wr_opcode)7;
	assert_int_equal(mrc_post_send(e.qp, &w), -EINVAL);
	assert_non_null(strstr(mrc_last_error(e.s), "opcode"));
	w.opcode = MR_WR_SEND;
	w.send_flags = 1u << 7;
	assert_int_equal(mrc_post_send(e.qp, &w), -EINVAL);
	w.send_flags = 0;
	w.num_sge = 5; /* QP allows 4 */
	assert_int_equal(mrc_post_send(e.qp, &w), -EINVAL);
	w.num_sge = 1;
	w.send_flags = MR_SEND_INLINE;
	w.sg_list[0].addr = (uint64_t)(uintptr_t)e.buf;
	w.sg_list[0].length = 129; /* max_inline_data 128 */
	assert_int_equal(mrc_post_send(e.qp, &w), -EINVAL);
	w.opcode = MR_WR_RDMA_READ;
	w.sg_list[0].length = 8;
	assert_int_equal(mrc_post_send(e.qp, &w), -EINVAL); /* READ cannot be inline */
	w.send_flags = 0;
	w.opcode = MR_WR_ATOMIC_FETCH_AND_ADD;
	w.atomic.remote_addr = 0x1004; /* misaligned */
	assert_int_equal(mrc_post_send(e.qp, &w), -EINVAL);
	w.atomic.remote_addr = 0x1000;
	w.sg_list[0].length = 4;
	assert_int_equal(mrc_post_send(e.qp, &w), -EINVAL);
	memset(&r, 0, sizeof(r));
	r.num_sge = 5;
	assert_int_equal(mrc_post_recv(e.qp, &r), -EINVAL);
	/* Full send queue: the backend pushes back, the ring (16) fills, the app gets -ENOMEM. */
	fake_lock(&h->fb);
	h->fb.post_send_rc = -ENOMEM;
	fake_unlock(&h->fb);
	memset(&w, 0, sizeof(w));
	w.opcode = MR_WR_SEND;
	for (i = 0; i < 16; i++)
		assert_int_equal(mrc_post_send(e.qp, &w), 0);
	rc = mrc_post_send(e.qp, &w);
	assert_int_equal(rc, -ENOMEM);
	assert_non_null(strstr(mrc_last_error(e.s), "full"));
	fake_lock(&h->fb);
	h->fb.post_send_rc = 0;
	fake_unlock(&h->fb);
	{
		unsigned int want = 16;

		assert_true(harness_wait(h, cond_sends, &want, 5000)); /* backlog drains */
	}
	assert_string_equal(mrc_strerror(-EFAULT),
			    "memory is not daemon-shared (allocate it with mrc_alloc_buf)");
	env_close(&e);
}

/* WRs the daemon rejects (foreign lkey, out-of-range SGE, backend error, forged ring entry)
 * complete with an error status, in order, and never reach the backend. */
static void test_server_rejects(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mr_send_wr w;
	struct mr_wc wc[4];
	struct mrc_sqe *sqe;
	struct mr_shm_server_stats st;

	env_open(h, &e, 8, true);
	memset(&w, 0, sizeof(w));
	w.wr_id = 1;
	w.opcode = MR_WR_SEND;
	w.num_sge = 1;
	w.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)e.buf, 64, 0xbad };
	assert_int_equal(mrc_post_send(e.qp, &w), 0);
	w.wr_id = 2;
	w.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)e.buf + 16000, 1000,
					mrc_mr_lkey(e.mr) };
	assert_int_equal(mrc_post_send(e.qp, &w), 0);
	assert_int_equal(poll_n(e.cq, wc, 2), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, MR_WC_LOC_PROT_ERR);
	assert_int_equal(wc[0].opcode, MR_WC_SEND);
	assert_int_equal(wc[0].qp_num, mrc_qp_num(e.qp));
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, MR_WC_LOC_PROT_ERR);
	/* Backend refuses the WR. */
	fake_lock(&h->fb);
	h->fb.post_send_rc = -EINVAL;
	fake_unlock(&h->fb);
	w.wr_id = 3;
	w.sg_list[0].length = 10;
	assert_int_equal(mrc_post_send(e.qp, &w), 0);
	assert_int_equal(poll_n(e.cq, wc, 1), 1);
	assert_int_equal(wc[0].wr_id, 3);
	assert_int_equal(wc[0].status, MR_WC_LOC_QP_OP_ERR);
	assert_int_equal(wc[0].vendor_err, EINVAL);
	fake_lock(&h->fb);
	h->fb.post_send_rc = 0;
	fake_unlock(&h->fb);
	/* A forged entry written straight into the ring (bypassing the library's checks). */
	sqe = mrc_ring_entry(e.qp->sq, e.qp->sq_prod, e.qp->sq_size - 1, sizeof(*sqe));
	memset(sqe, 0, sizeof(*sqe));
	sqe->wr_id = 4;
	sqe->opcode = MR_WR_SEND;
	sqe->num_sge = 200;
	mrc_ring_publish(e.qp->sq, ++e.qp->sq_prod);
	ring_db(e.qp);
	assert_int_equal(poll_n(e.cq, wc, 1), 1);
	assert_int_equal(wc[0].wr_id, 4);
	assert_int_equal(wc[0].status, MR_WC_LOC_QP_OP_ERR);
	fake_lock(&h->fb);
	assert_int_equal(h->fb.n_sends, 0);
	fake_unlock(&h->fb);
	/* An impossible producer index: the QP is no longer served, nothing crashes. */
	atomic_store(&e.qp->sq->prod, e.qp->sq_prod + 1000);
	ring_db(e.qp);
	usleep(20000);
	mr_shm_server_get_stats(h->srv, &st);
	assert_int_equal(st.ring_corrupt, 1);
	assert_int_equal(st.wr_rejected, 4);
	env_close(&e);
}

/* Raw control socket: the protocol rejects foreign handles and malformed messages. */
static int raw_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	strcpy(a.sun_path, path);
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static int raw_call(int fd, uint16_t op, struct mrc_ctl_req *req, int fd_in)
{
	struct mrc_ctl_resp resp;
	int fds[2];
	unsigned int nfds, i;

	req->hdr.version = req->hdr.version ? req->hdr.version : MRC_ABI_VERSION;
	req->hdr.op = op;
	req->hdr.seq = 77;
	assert_int_equal(mr_shm_send(fd, req, sizeof(*req), &fd_in, fd_in >= 0), 0);
	assert_int_equal(mr_shm_recv(fd, &resp, sizeof(resp), fds, 2, &nfds, 0), sizeof(resp));
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	return resp.hdr.status;
}

static void test_isolation(void **state)
{
	struct harness *h = *state;
	struct env a;
	struct mrc_ctl_req req;
	struct mrc_session *b;
	struct mrc_cq *bcq;
	struct mrc_qp_init_attr init;
	int fd, mfd, pfd[2], efd;
	unsigned int n_sends;
	uint32_t handles[5];
	uint16_t ops[5] = { MRC_CTL_DESTROY_QP, MRC_CTL_DESTROY_CQ, MRC_CTL_DEREG_MR,
			    MRC_CTL_DEALLOC_PD, MRC_CTL_UNMAP_BUF };
	int i;

	env_open(h, &a, 8, true);
	handles[0] = a.qp->o.handle;
	handles[1] = a.cq->o.handle;
	handles[2] = a.mr->o.handle;
	handles[3] = a.pd->o.handle;
	handles[4] = 0;
	for (struct mrc_obj *o = a.s->objs.next; o != &a.s->objs; o = o->next)
		if (o->type == MRC_OBJ_BUF)
			handles[4] = o->handle;
	assert_int_not_equal(handles[4], 0);

	fd = raw_connect(h->path);
	memset(&req, 0, sizeof(req));
	assert_int_equal(raw_call(fd, MRC_CTL_ALLOC_PD, &req, -1), -EPROTO); /* before HELLO */
	memset(&req, 0, sizeof(req));
	req.u.hello.abi_version = MRC_ABI_VERSION;
	assert_int_equal(raw_call(fd, MRC_CTL_HELLO, &req, -1), 0);
	for (i = 0; i < 5; i++) {
		memset(&req, 0, sizeof(req));
		req.u.obj.handle = handles[i];
		assert_int_equal(raw_call(fd, ops[i], &req, -1), -ENOENT);
	}
	memset(&req, 0, sizeof(req));
	req.u.modify_qp.qp = handles[0];
	req.u.modify_qp.mask = MRC_QP_STATE;
	req.u.modify_qp.attr.qp_state = MR_QPS_ERR;
	assert_int_equal(raw_call(fd, MRC_CTL_MODIFY_QP, &req, -1), -ENOENT);
	memset(&req, 0, sizeof(req));
	req.u.reg_mr.pd = handles[3];
	req.u.reg_mr.buf = handles[4];
	req.u.reg_mr.len = 4096;
	req.u.reg_mr.access = MR_ACCESS_LOCAL_WRITE;
	assert_int_equal(raw_call(fd, MRC_CTL_REG_MR, &req, -1), -ENOENT);
	memset(&req, 0, sizeof(req));
	req.u.create_qp.pd = handles[3];
	req.u.create_qp.send_cq = req.u.create_qp.recv_cq = handles[1];
	req.u.create_qp.qp_type = MRC_QPT_RC;
	req.u.create_qp.max_send_wr = 4;
	assert_int_equal(raw_call(fd, MRC_CTL_CREATE_QP, &req, -1), -ENOENT);
	/* Malformed requests. */
	memset(&req, 0, sizeof(req));
	req.hdr.version = 99;
	assert_int_equal(raw_call(fd, MRC_CTL_ALLOC_PD, &req, -1), -EPROTO);
	memset(&req, 0, sizeof(req));
	assert_int_equal(raw_call(fd, 200, &req, -1), -EPROTO);
	memset(&req, 0, sizeof(req));
	req.u.map_buf.len = 4096;
	req.u.map_buf.app_addr = 0x10000;
	assert_int_equal(raw_call(fd, MRC_CTL_MAP_BUF, &req, -1), -EBADF); /* fd missing */
	mfd = memfd_create("unsealed", 0);
	assert_int_equal(ftruncate(mfd, 4096), 0);
	assert_int_equal(raw_call(fd, MRC_CTL_MAP_BUF, &req, mfd), -EPERM); /* not sealed */
	close(mfd);
	assert_int_equal(pipe(pfd), 0);
	memset(&req, 0, sizeof(req));
	req.u.create_cq.depth = 4;
	assert_int_equal(raw_call(fd, MRC_CTL_CREATE_CQ, &req, pfd[1]), -EBADF); /* a pipe */
	close(pfd[0]);
	close(pfd[1]);
	/* An eventfd (its O_NONBLOCK is the app's to change) and a stream socket are refused;
	 * a datagram socket is taken even in blocking mode (the daemon sends MSG_DONTWAIT). */
	efd = eventfd(0, EFD_NONBLOCK);
	memset(&req, 0, sizeof(req));
	req.u.create_cq.depth = 4;
	assert_int_equal(raw_call(fd, MRC_CTL_CREATE_CQ, &req, efd), -EBADF);
	close(efd);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, pfd), 0);
	memset(&req, 0, sizeof(req));
	req.u.create_cq.depth = 4;
	assert_int_equal(raw_call(fd, MRC_CTL_CREATE_CQ, &req, pfd[1]), -EBADF);
	close(pfd[0]);
	close(pfd[1]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, pfd), 0);
	memset(&req, 0, sizeof(req));
	req.u.create_cq.depth = 4;
	assert_int_equal(raw_call(fd, MRC_CTL_CREATE_CQ, &req, pfd[1]), 0);
	close(pfd[0]);
	close(pfd[1]);
	{
		char shortmsg[8] = { 1, 0, 2, 0 };
		struct mrc_ctl_resp resp;
		unsigned int nfds;

		assert_int_equal(send(fd, shortmsg, sizeof(shortmsg), 0), 8);
		assert_int_equal(mr_shm_recv(fd, &resp, sizeof(resp), NULL, 0, &nfds, 0),
				 sizeof(resp));
		assert_int_equal(resp.hdr.status, -EPROTO);
	}
	close(fd);

	/* Through the API: a QP of session B cannot use session A's CQ. */
	b = mrc_open(h->path);
	assert_non_null(b);
	bcq = mrc_create_cq(b, 4);
	assert_non_null(bcq);
	assert_int_not_equal(bcq->o.handle, a.cq->o.handle);
	memset(&init, 0, sizeof(init));
	init.qp_type = MRC_QPT_RC;
	init.send_cq = a.cq;
	init.recv_cq = bcq;
	init.max_send_wr = 4;
	assert_null(mrc_create_qp(a.pd, &init));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(mrc_destroy_cq(bcq), 0);
	assert_int_equal(mrc_close(b), 0);

	/* Session A's objects are intact and still work. */
	fake_lock(&h->fb);
	assert_int_equal(h->fb.live_qp, 1);
	assert_int_equal(h->fb.live_mr, 1);
	assert_int_equal(h->fb.qps[0].attr.qp_state, MR_QPS_RTS);
	n_sends = h->fb.n_sends;
	fake_unlock(&h->fb);
	{
		struct mr_send_wr w = { .wr_id = 5, .opcode = MR_WR_SEND };

		assert_int_equal(mrc_post_send(a.qp, &w), 0);
		n_sends++;
		assert_true(harness_wait(h, cond_sends, &n_sends, 5000));
	}
	env_close(&a);
}

/* An app killed with SIGKILL: everything it created is reclaimed through the backend (QPs via
 * ERR), the server carries on serving another session. */
static void test_crash_reclaim(void **state)
{
	struct harness *h = *state;
	struct env a;
	int ready[2];
	pid_t pid;
	char c;
	unsigned int want;

	env_open(h, &a, 8, true);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct env e;
		int k;

		close(ready[0]);
		memset(&e, 0, sizeof(e));
		e.s = mrc_open(h->path);
		e.pd = e.s ? mrc_alloc_pd(e.s) : NULL;
		e.buf = e.pd ? mrc_alloc_buf(e.s, 8192) : NULL;
		e.mr = e.buf ? mrc_reg_mr(e.pd, e.buf, 8192, MR_ACCESS_LOCAL_WRITE) : NULL;
		e.cq = e.mr ? mrc_create_cq(e.s, 8) : NULL;
		e.qp = e.cq ? make_qp(e.pd, e.cq, 8) : NULL;
		for (k = 0; k < 2 && e.qp; k++)
			e.qp = make_qp(e.pd, e.cq, 8) ? e.qp : NULL;
		c = e.qp != NULL ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(c, 'y');
	fake_lock(&h->fb);
	assert_int_equal(h->fb.live_qp, 4);
	assert_int_equal(h->fb.live_mr, 2);
	assert_int_equal(h->fb.live_cq, 2);
	assert_int_equal(h->fb.live_pd, 2);
	fake_unlock(&h->fb);
	assert_int_equal(mr_shm_server_nsessions(h->srv), 2);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	/* Wait for the child's objects to go; session A's remain. */
	for (want = 0; want < 500; want++) {
		bool done;

		fake_lock(&h->fb);
		done = h->fb.live_qp == 1 && h->fb.live_mr == 1 && h->fb.live_cq == 1 &&
		       h->fb.live_pd == 1;
		fake_unlock(&h->fb);
		if (done)
			break;
		usleep(10000);
	}
	fake_lock(&h->fb);
	assert_int_equal(h->fb.live_qp, 1);
	assert_int_equal(h->fb.live_mr, 1);
	assert_int_equal(h->fb.live_cq, 1);
	assert_int_equal(h->fb.live_pd, 1);
	assert_int_equal(h->fb.destroyed_after_err, 3); /* each child QP went through ERR */
	assert_true(h->fb.qps[0].live);                 /* session A's QP untouched */
	assert_int_equal(h->fb.qps[0].attr.qp_state, MR_QPS_RTS);
	fake_unlock(&h->fb);
	assert_int_equal(mr_shm_server_nsessions(h->srv), 1);
	/* A carries on. */
	{
		struct mr_send_wr w = { .wr_id = 6, .opcode = MR_WR_SEND };

		assert_int_equal(mrc_post_send(a.qp, &w), 0);
		want = 1;
		assert_true(harness_wait(h, cond_sends, &want, 5000));
	}
	env_close(&a);
	/* And A's orderly close leaves nothing behind either. */
	assert_true(harness_wait(h, cond_all_reclaimed, NULL, 5000));
}

/* mrc_close with objects still open: the daemon reclaims them, the library frees its side. */
static void test_close_reclaims(void **state)
{
	struct harness *h = *state;
	struct env e;

	env_open(h, &e, 8, true);
	assert_int_equal(mrc_close(e.s), 0);
	assert_true(harness_wait(h, cond_all_reclaimed, NULL, 5000));
	fake_lock(&h->fb);
	assert_int_equal(h->fb.destroyed_after_err, 1);
	fake_unlock(&h->fb);
}

/* e opened with the fake transport executing RC operations, and a second QP connected to e's:
 * returns it. */
/* The fake transport executes WRs from now on: data moves between the app's buffers. */
static void fake_exec_on(struct harness *h)
{
	fake_lock(&h->fb);
	h->fb.exec = true;
	fake_unlock(&h->fb);
}

static struct mrc_qp *loopback_pair(struct harness *h, struct env *e)
{
	struct mrc_qp *qb;

	fake_exec_on(h);
	env_open(h, e, 16, false);
	qb = make_qp(e->pd, e->cq, 16);
	assert_non_null(qb);
	to_rts(e->qp, mrc_qp_num(qb));
	to_rts(qb, mrc_qp_num(e->qp));
	return qb;
}

/* Loopback execution by the fake transport: data really moves between app buffers through
 * the daemon's mappings (WRITE with immediate, SEND/RECV, READ, atomics). */
static void test_loopback_data(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mrc_qp *qb;
	struct mr_send_wr w;
	struct mr_recv_wr r;
	struct mr_wc wc[4];
	uint64_t base, old;
	uint32_t lkey, rkey;

	qb = loopback_pair(h, &e);
	base = (uint64_t)(uintptr_t)e.buf;
	lkey = mrc_mr_lkey(e.mr);
	rkey = mrc_mr_rkey(e.mr);

	/* WRITE with immediate: 3000 bytes, two SGEs. */
	for (int i = 0; i < 3000; i++)
		e.buf[i] = (uint8_t)(i * 7);
	memset(&r, 0, sizeof(r));
	r.wr_id = 50;
	assert_int_equal(mrc_post_recv(qb, &r), 0);
	memset(&w, 0, sizeof(w));
	w.wr_id = 51;
	w.opcode = MR_WR_RDMA_WRITE_WITH_IMM;
	w.send_flags = MR_SEND_SIGNALED;
	w.num_sge = 2;
	w.sg_list[0] = (struct mr_sge){ base, 1000, lkey };
	w.sg_list[1] = (struct mr_sge){ base + 1000, 2000, lkey };
	w.imm_data = 0x12345678;
	w.rdma.remote_addr = base + 8192;
	w.rdma.rkey = rkey;
	usleep(5000); /* let the receive land first */
	assert_int_equal(mrc_post_send(e.qp, &w), 0);
	assert_int_equal(poll_n(e.cq, wc, 2), 2);
	assert_memory_equal(e.buf + 8192, e.buf, 3000);
	assert_int_equal(wc[0].wr_id, 50); /* the receive completes first in the fake */
	assert_int_equal(wc[0].opcode, MR_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc[0].imm_data, 0x12345678);
	assert_int_equal(wc[0].byte_len, 3000);
	assert_int_equal(wc[1].wr_id, 51);
	assert_int_equal(wc[1].status, MR_WC_SUCCESS);

	/* Inline SEND into a posted receive. */
	memset(&r, 0, sizeof(r));
	r.wr_id = 60;
	r.num_sge = 1;
	r.sg_list[0] = (struct mr_sge){ base + 12288, 256, lkey };
	assert_int_equal(mrc_post_recv(qb, &r), 0);
	usleep(5000);
	memset(&w, 0, sizeof(w));
	w.wr_id = 61;
	w.opcode = MR_WR_SEND;
	w.send_flags = MR_SEND_INLINE | MR_SEND_SIGNALED;
	w.num_sge = 1;
	w.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)"inline hello", 13, 0 };
	assert_int_equal(mrc_post_send(e.qp, &w), 0);
	assert_int_equal(poll_n(e.cq, wc, 2), 2);
	assert_string_equal((char *)e.buf + 12288, "inline hello");
	assert_int_equal(wc[0].wr_id, 60);
	assert_int_equal(wc[0].byte_len, 13);

	/* READ back 3000 bytes, then fetch-and-add and compare-and-swap on one word. */
	memset(&w, 0, sizeof(w));
	w.wr_id = 70;
	w.opcode = MR_WR_RDMA_READ;
	w.send_flags = MR_SEND_SIGNALED;
	w.num_sge = 1;
	w.sg_list[0] = (struct mr_sge){ base + 4096, 3000, lkey };
	w.rdma.remote_addr = base + 8192;
	w.rdma.rkey = rkey;
	assert_int_equal(mrc_post_send(e.qp, &w), 0);
	assert_int_equal(poll_n(e.cq, wc, 1), 1);
	assert_int_equal(wc[0].opcode, MR_WC_RDMA_READ);
	assert_memory_equal(e.buf + 4096, e.buf, 3000);
	old = 40;
	memcpy(e.buf + 16376, &old, 8);
	memset(&w, 0, sizeof(w));
	w.wr_id = 80;
	w.opcode = MR_WR_ATOMIC_FETCH_AND_ADD;
	w.send_flags = MR_SEND_SIGNALED;
	w.num_sge = 1;
	w.sg_list[0] = (struct mr_sge){ base + 16368, 8, lkey };
	w.atomic.remote_addr = base + 16376;
	w.atomic.rkey = rkey;
	w.atomic.compare_add = 2;
	assert_int_equal(mrc_post_send(e.qp, &w), 0);
	w.wr_id = 81;
	w.opcode = MR_WR_ATOMIC_CMP_AND_SWP;
	w.atomic.compare_add = 42;
	w.atomic.swap = 1000;
	assert_int_equal(mrc_post_send(e.qp, &w), 0);
	assert_int_equal(poll_n(e.cq, wc, 2), 2);
	assert_int_equal(wc[0].opcode, MR_WC_FETCH_ADD);
	assert_int_equal(wc[1].opcode, MR_WC_COMP_SWAP);
	memcpy(&old, e.buf + 16376, 8);
	assert_int_equal(old, 1000);
	memcpy(&old, e.buf + 16368, 8);
	assert_int_equal(old, 42); /* CAS returned the value FAA left */
	assert_int_equal(mrc_destroy_qp(qb), 0);
	env_close(&e);
}

/* Batches: valid WRs before the first bad one are posted and published together. */
static void test_post_batch(void **state)
{
	struct harness *h = *state;
	struct env e;
	struct mr_send_wr w[5];
	struct mr_recv_wr r[3];
	unsigned int want;
	int i;

	env_open(h, &e, 8, true);
	memset(w, 0, sizeof(w));
	memset(r, 0, sizeof(r));
	for (i = 0; i < 5; i++) {
		w[i].wr_id = 100 + (uint64_t)i;
		w[i].opcode = i == 3 ? (enum mr_wr_opcode)8 : MR_WR_SEND;
	}
	for (i = 0; i < 3; i++)
		r[i].wr_id = 200 + (uint64_t)i;
	assert_int_equal(mrc_post_send_batch(e.qp, w, 5), 3);
	assert_non_null(strstr(mrc_last_error(e.s), "opcode"));
	assert_int_equal(mrc_post_send_batch(e.qp, w + 3, 2), -EINVAL); /* none posted */
	assert_int_equal(mrc_post_send_batch(e.qp, w, 0), 0);
	assert_int_equal(mrc_post_send_batch(NULL, w, 1), -EINVAL);
	assert_int_equal(mrc_post_recv_batch(e.qp, r, 3), 3);
	want = 3;
	assert_true(harness_wait(h, cond_sends, &want, 5000));
	assert_true(harness_wait(h, cond_recvs, &want, 5000));
	usleep(10000);
	fake_lock(&h->fb);
	assert_int_equal(h->fb.n_sends, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(h->fb.sends[i].wr_id, 100 + (uint64_t)i);
		assert_int_equal(h->fb.recvs[i].wr_id, 200 + (uint64_t)i);
	}
	fake_unlock(&h->fb);
	env_close(&e);
}

/* The socket path: a live server is never displaced, a stale socket file is replaced, and an
 * app speaking another ABI version is refused and disconnected. */
static void test_socket_path_and_version(void **state)
{
	struct harness *h = *state;
	struct mr_shm_server_params p = { .ops = &fake_ops, .backend = &h->fb };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct mr_shm_server *srv2;
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	char stale[128];
	unsigned int nfds;
	int fd;

	p.sock_path = h->path;
	assert_null(mr_shm_server_create(&p));
	assert_int_equal(errno, EADDRINUSE);
	p.sock_path = NULL;
	assert_null(mr_shm_server_create(&p));
	assert_int_equal(errno, EINVAL);
	/* A socket file nobody listens on (a crashed daemon's). */
	snprintf(stale, sizeof(stale), "%.90s.stale", h->path);
	strcpy(a.sun_path, stale);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
	p.sock_path = stale;
	srv2 = mr_shm_server_create(&p);
	assert_non_null(srv2);
	mr_shm_server_destroy(srv2);
	assert_int_equal(access(stale, F_OK), -1); /* unlinked on destroy */

	fd = raw_connect(h->path);
	memset(&req, 0, sizeof(req));
	req.u.hello.abi_version = MRC_ABI_VERSION + 1;
	assert_int_equal(raw_call(fd, MRC_CTL_HELLO, &req, -1), -EPROTO);
	assert_int_equal(mr_shm_recv(fd, &resp, sizeof(resp), NULL, 0, &nfds, 0), 0); /* hung up */
	close(fd);
}

struct stress_arg {
	struct harness *h;
	int id;
	int errors;
};

/* One app thread: its own session, two loopback QPs, many WRITEs through a small ring with a
 * distinct byte pattern per op; checks completion order and every byte. */
static void *stress_app(void *argp)
{
	struct stress_arg *sa = argp;
	struct mrc_session *s = mrc_open(sa->h->path);
	struct mrc_pd *pd = s ? mrc_alloc_pd(s) : NULL;
	uint8_t *buf = pd ? mrc_alloc_buf(s, 65536) : NULL;
	struct mrc_mr *mr = buf ? mrc_reg_mr(pd, buf, 65536, ACC_ALL) : NULL;
	struct mrc_cq *cq = mr ? mrc_create_cq(s, 8) : NULL;
	struct mrc_qp *qa = cq ? make_qp(pd, cq, 8) : NULL, *qb = cq ? make_qp(pd, cq, 8) : NULL;
	uint64_t next_wc = 0, posted = 0;
	const uint64_t n = 1500;

	if (qa == NULL || qb == NULL) {
		sa->errors++;
		return NULL;
	}
	to_rts(qa, mrc_qp_num(qb));
	to_rts(qb, mrc_qp_num(qa));
	while (next_wc < n) {
		struct mr_wc wc[8];
		int k, got;

		while (posted < n && posted - next_wc < 8) {
			uint32_t slot = (uint32_t)(posted % 8);
			struct mr_send_wr w = {
				.wr_id = posted, .opcode = MR_WR_RDMA_WRITE,
				.send_flags = MR_SEND_SIGNALED, .num_sge = 1,
			};

			memset(buf + slot * 1024, (int)(posted * 31 + (uint64_t)sa->id), 1024);
			w.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)(buf + slot * 1024), 1024,
							mrc_mr_lkey(mr) };
			w.rdma.remote_addr = (uint64_t)(uintptr_t)(buf + 32768 + slot * 1024);
			w.rdma.rkey = mrc_mr_rkey(mr);
			if (mrc_post_send(qa, &w) != 0)
				break;
			posted++;
		}
		got = mrc_poll_cq(cq, 8, wc);
		for (k = 0; k < got; k++, next_wc++) {
			uint32_t slot = (uint32_t)(next_wc % 8);
			uint8_t want = (uint8_t)(next_wc * 31 + (uint64_t)sa->id);
			const uint8_t *d = buf + 32768 + slot * 1024;

			if (wc[k].wr_id != next_wc || wc[k].status != MR_WC_SUCCESS ||
			    d[0] != want || d[1023] != want || memcmp(d, d + 1, 1023) != 0)
				sa->errors++;
		}
		if (got == 0)
			usleep(20);
	}
	mrc_close(s);
	return NULL;
}

static void test_stress_sessions(void **state)
{
	struct harness *h = *state;
	struct stress_arg args[4];
	pthread_t t[4];
	int i;

	fake_exec_on(h);
	for (i = 0; i < 4; i++) {
		args[i] = (struct stress_arg){ .h = h, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, stress_app, &args[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(args[i].errors, 0);
	}
	fake_lock(&h->fb);
	assert_int_equal(h->fb.n_sends, FAKE_LOG); /* log saturates; all 6000 went through */
	fake_unlock(&h->fb);
	assert_true(harness_wait(h, cond_all_reclaimed, NULL, 5000));
}

/* A SEND of 64 bytes from e's buffer written into e's SQ by hand and published, not rung. */
static void sqe_by_hand(struct env *e, uint64_t wr_id)
{
	struct mrc_sqe *sqe = mrc_ring_entry(e->qp->sq, e->qp->sq_prod, e->qp->sq_size - 1,
					     sizeof(*sqe));

	memset(sqe, 0, sizeof(*sqe));
	sqe->wr_id = wr_id;
	sqe->opcode = MR_WR_SEND;
	sqe->num_sge = 1;
	sqe->u.sge[0] = (struct mr_sge){ (uint64_t)(uintptr_t)e->buf, 64, mrc_mr_lkey(e->mr) };
	mrc_ring_publish(e->qp->sq, ++e->qp->sq_prod);
}

static unsigned int sends_now(struct harness *h)
{
	unsigned int n;

	fake_lock(&h->fb);
	n = h->fb.n_sends;
	fake_unlock(&h->fb);
	return n;
}

/* The doorbell (shm_abi.h): the daemon serves a doorbell session's QPs only when rung, so an
 * entry published without a ring waits for it; bits that name no QP (here: every bit of the
 * region, as a hostile app could set them) are ignored; a session opened with
 * METAROCE_NO_DOORBELL=1 has no doorbell and its rings are scanned. */
/* True once every word of db is 0 (within timeout_ms). */
static bool db_quiet(struct mrc_doorbell *db, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t++) {
		uint64_t any = 0;

		for (uint32_t i = 0; i < MRC_DB_SLOTS / 4096; i++)
			any |= atomic_load(&db->sum[i]);
		for (uint32_t i = 0; i < MRC_DB_SLOTS / 64; i++)
			any |= atomic_load(&db->leaf[i]);
		if (any == 0)
			return true;
		usleep(1000);
	}
	return false;
}

/* Spins about ns nanoseconds (no syscall: the gaps must be shorter than the daemon's idle
 * polls before it clears a bit, and longer). */
static void spin_ns(long ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

/* The daemon clears a QP's doorbell bit once the QP was idle for some polls, and the app does
 * not ring a bit it finds set (shm_abi.h): a post that lands around a clear must still be
 * served. 20000 one-WR round trips, with gaps of 0 to ~40 us before each post so that posts
 * fall before, into and after the clear, against a busy-polling daemon: a lost post is a
 * round trip that never completes. Each WRITE carries its number, checked at the target. */
/* Opens e's session fenced (METAROCE_NO_DB_ASYM=1: every post fences, the daemon issues no
 * barrier) or fence-free (shm_abi.h mrc_db_ring_asym), and checks that it got what it asked. */
static void db_mode_open(struct harness *h, struct env *e, bool fenced, struct mrc_qp **qb)
{
	if (fenced)
		setenv("METAROCE_NO_DB_ASYM", "1", 1);
	if (qb != NULL) {
		*qb = loopback_pair(h, e);
	} else {
		fake_exec_on(h);
		env_open(h, e, 64, false);
	}
	unsetenv("METAROCE_NO_DB_ASYM");
	assert_true(mrc_features(e->s) & MRC_FEAT_DOORBELL);
	assert_int_equal(e->s->db_asym, !fenced && mr_membarrier_global_ok());
}

/* The server's counter at byte offset off of struct mr_shm_server_stats, now. */
static uint64_t stat_now(struct harness *h, size_t off)
{
	struct mr_shm_server_stats st;
	uint64_t v;

	mr_shm_server_get_stats(h->srv, &st);
	memcpy(&v, (const char *)&st + off, sizeof(v));
	return v;
}

/* After a fence-free run: the barriers the daemon issued all succeeded. */
static void db_mode_check(struct harness *h)
{
	assert_int_equal(stat_now(h, offsetof(struct mr_shm_server_stats, db_barrier_fails)), 0);
}

static void doorbell_clear_race(void **state, bool fenced)
{
	struct harness *h = *state;
	struct env e;
	struct mrc_qp *qb;
	struct mr_send_wr w;
	struct mr_wc wc;
	uint64_t base;
	uint32_t x = 12345;
	int lost = 0, bad = 0;

	atomic_store(&h->busy, true);
	db_mode_open(h, &e, fenced, &qb);
	base = (uint64_t)(uintptr_t)e.buf;
	memset(&w, 0, sizeof(w));
	w.opcode = MR_WR_RDMA_WRITE;
	w.send_flags = MR_SEND_SIGNALED;
	w.num_sge = 1;
	w.sg_list[0] = (struct mr_sge){ base, 8, mrc_mr_lkey(e.mr) };
	w.rdma.remote_addr = base + 8192;
	w.rdma.rkey = mrc_mr_rkey(e.mr);
	for (uint64_t i = 1; i <= 20000 && lost == 0; i++) {
		struct timespec t0, t1;
		int got = 0;

		x = x * 1103515245u + 12345u;
		spin_ns((long)((x >> 16) % 40000));
		memcpy(e.buf, &i, 8);
		w.wr_id = i;
		assert_int_equal(mrc_post_send(e.qp, &w), 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			got = mrc_poll_cq(e.cq, 1, &wc);
			clock_gettime(CLOCK_MONOTONIC, &t1);
		} while (got == 0 && t1.tv_sec - t0.tv_sec < 5);
		if (got != 1)
			lost++;
		else if (wc.wr_id != i || wc.status != MR_WC_SUCCESS ||
			 memcmp(e.buf + 8192, &i, 8) != 0)
			bad++;
	}
	atomic_store(&h->busy, false);
	assert_int_equal(lost, 0);
	assert_int_equal(bad, 0);
	db_mode_check(h);
	assert_int_equal(mrc_destroy_qp(qb), 0);
	env_close(&e);
}

static void test_doorbell_clear_race(void **state)
{
	doorbell_clear_race(state, false);
}

static void test_doorbell_clear_race_fenced(void **state)
{
	doorbell_clear_race(state, true);
}

/* The same with 16 QPs of one session, all in one leaf word of the doorbell (as stock
 * ibv_srq_pingpong's 16 QPs): each round posts one 8-byte WRITE on 1-3 of the 8 senders after
 * a gap of 0 to ~40 us, so that some QPs stay rung while others go idle and have their bits
 * cleared, and the leaf word and its summary bit are cleared and set again around posts. Every
 * WRITE must complete, with its own wr_id, and its bytes must be at its target. */
static void doorbell_many_qps(void **state, bool fenced)
{
	enum { NQ = 8, ROUNDS = 10000 };
	struct harness *h = *state;
	struct env e;
	struct mrc_qp *src[NQ], *dst[NQ];
	uint32_t x = 777, lkey, rkey;
	uint64_t base;
	int lost = 0, bad = 0;

	atomic_store(&h->busy, true);
	db_mode_open(h, &e, fenced, NULL);
	base = (uint64_t)(uintptr_t)e.buf;
	lkey = mrc_mr_lkey(e.mr);
	rkey = mrc_mr_rkey(e.mr);
	for (int q = 0; q < NQ; q++) {
		src[q] = q == 0 ? e.qp : make_qp(e.pd, e.cq, 16);
		dst[q] = make_qp(e.pd, e.cq, 16);
		assert_non_null(src[q]);
		assert_non_null(dst[q]);
		to_rts(src[q], mrc_qp_num(dst[q]));
		to_rts(dst[q], mrc_qp_num(src[q]));
	}
	for (uint64_t r = 1; r <= ROUNDS && lost == 0; r++) {
		uint64_t posted[3];
		int m, done = 0;
		struct timespec t0, t1;

		x = x * 1103515245u + 12345u;
		m = 1 + (int)((x >> 8) % 3);
		spin_ns((long)((x >> 16) % 40000));
		for (int j = 0; j < m; j++) {
			int q = (int)((x + (uint32_t)j) % NQ);
			struct mr_send_wr w;

			posted[j] = r * NQ + (uint64_t)q;
			memcpy(e.buf + q * 16, &posted[j], 8);
			memset(&w, 0, sizeof(w));
			w.wr_id = posted[j];
			w.opcode = MR_WR_RDMA_WRITE;
			w.send_flags = MR_SEND_SIGNALED;
			w.num_sge = 1;
			w.sg_list[0] = (struct mr_sge){ base + (uint64_t)q * 16, 8, lkey };
			w.rdma.remote_addr = base + 8192 + (uint64_t)q * 16;
			w.rdma.rkey = rkey;
			assert_int_equal(mrc_post_send(src[q], &w), 0);
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			struct mr_wc wc;

			if (mrc_poll_cq(e.cq, 1, &wc) == 1) {
				uint64_t q = wc.wr_id % NQ;
				bool mine = false;

				for (int j = 0; j < m; j++)
					mine |= wc.wr_id == posted[j];
				if (!mine || wc.status != MR_WC_SUCCESS ||
				    memcmp(e.buf + 8192 + q * 16, &wc.wr_id, 8) != 0)
					bad++;
				done++;
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
		} while (done < m && t1.tv_sec - t0.tv_sec < 5);
		if (done < m)
			lost++;
	}
	atomic_store(&h->busy, false);
	assert_int_equal(lost, 0);
	assert_int_equal(bad, 0);
	db_mode_check(h);
	for (int q = 0; q < NQ; q++) {
		if (q > 0)
			assert_int_equal(mrc_destroy_qp(src[q]), 0);
		assert_int_equal(mrc_destroy_qp(dst[q]), 0);
	}
	env_close(&e);
}

static void test_doorbell_many_qps(void **state)
{
	doorbell_many_qps(state, false);
}

static void test_doorbell_many_qps_fenced(void **state)
{
	doorbell_many_qps(state, true);
}

static int setup_slow_barrier(void **state)
{
	const struct mr_shm_server_params q = { .db_barrier_ms = 200 };

	return setup_with(state, &q);
}

/* True once the counter at off is above `above` (within timeout_ms). */
static bool wait_stat(struct harness *h, size_t off, uint64_t above, int timeout_ms)
{
	for (int t = 0; t < timeout_ms * 10; t++) {
		if (stat_now(h, off) > above)
			return true;
		usleep(100);
	}
	return false;
}

/* The fence-free doorbell's guarantee, played without a race (shm_abi.h mrc_db_ring_asym): a
 * post whose index store was still in its CPU's store buffer when the daemon cleared the bit
 * and read the QP for the last polls (the store found the bit set, so it did not ring) must be
 * served by the read after the daemon's next barrier, and not before it. Each round: a rung
 * post is served; the daemon clears the idle QP's bit, reads it DB_HOT_POLLS more times and
 * marks it pending (db_pends); only then is an entry published without a ring, the late store.
 * It must be served, and the barrier count must have moved first (counted before the call). A
 * round in which a barrier started before the store is not counted (it is rung to recover):
 * the barrier period is 200 ms here, so that is rare. Fails on a daemon without the pending
 * map (never served) and on one that reads it again without waiting for a barrier. */
static void test_doorbell_asym_late_store(void **state)
{
	enum { ROUNDS = 8 };
	struct harness *h = *state;
	const size_t o_pends = offsetof(struct mr_shm_server_stats, db_pends);
	const size_t o_bars = offsetof(struct mr_shm_server_stats, db_barriers);
	struct env e;
	unsigned int want = 0;
	int counted = 0;

	if (!mr_membarrier_global_ok())
		skip(); /* no MEMBARRIER_CMD_GLOBAL_EXPEDITED: the feature is never granted */
	env_open(h, &e, 64, true);
	assert_true(mrc_features(e.s) & MRC_FEAT_DB_ASYM);
	assert_true(e.s->db_asym);
	for (int r = 0; r < ROUNDS; r++) {
		struct mr_send_wr w;
		uint64_t pends = stat_now(h, o_pends), bars;

		memset(&w, 0, sizeof(w));
		w.wr_id = 100 + (uint64_t)r;
		w.opcode = MR_WR_SEND;
		w.num_sge = 1;
		w.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)e.buf, 64, mrc_mr_lkey(e.mr) };
		assert_int_equal(mrc_post_send(e.qp, &w), 0);
		want++;
		assert_true(harness_wait(h, cond_sends, &want, 5000));
		/* Cleared, read DB_HOT_POLLS more times, now waiting for the barrier. */
		assert_true(wait_stat(h, o_pends, pends, 5000));
		bars = stat_now(h, o_bars);
		sqe_by_hand(&e, 200 + (uint64_t)r);
		want++;
		if (stat_now(h, o_bars) != bars) {
			ring_db(e.qp);
			assert_true(harness_wait(h, cond_sends, &want, 5000));
			continue;
		}
		assert_true(harness_wait(h, cond_sends, &want, 5000));
		assert_true(stat_now(h, o_bars) > bars);
		counted++;
	}
	assert_true(counted >= ROUNDS / 2);
	assert_int_equal(stat_now(h, offsetof(struct mr_shm_server_stats, db_barrier_fails)), 0);
	env_close(&e);
}

static void test_doorbell(void **state)
{
	struct harness *h = *state;
	struct env e, f;
	unsigned int want;

	env_open(h, &e, 8, true);
	assert_true(mrc_features(e.s) & MRC_FEAT_DOORBELL);
	assert_non_null(e.s->db);
	sqe_by_hand(&e, 1);
	usleep(50000);
	assert_int_equal(sends_now(h), 0);
	ring_db(e.qp);
	want = 1;
	assert_true(harness_wait(h, cond_sends, &want, 5000));
	/* Every bit set: one more real entry is served once, nothing else happens. */
	sqe_by_hand(&e, 2);
	for (uint32_t i = 0; i < MRC_DB_SLOTS / 4096; i++)
		atomic_store(&e.s->db->sum[i], ~0ull);
	for (uint32_t i = 0; i < MRC_DB_SLOTS / 64; i++)
		atomic_store(&e.s->db->leaf[i], ~0ull);
	want = 2;
	assert_true(harness_wait(h, cond_sends, &want, 5000));
	usleep(50000);
	assert_int_equal(sends_now(h), 2);
	/* The daemon clears what it was given: bits naming no QP at once, the QP's own after
	 * its rings stayed empty, then the summary words (shm_abi.h). */
	assert_true(db_quiet(e.s->db, 5000));
	assert_int_equal(sends_now(h), 2);
	/* The library rings on every post. */
	{
		struct mr_send_wr w;

		memset(&w, 0, sizeof(w));
		w.wr_id = 3;
		w.opcode = MR_WR_SEND;
		w.num_sge = 1;
		w.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)e.buf, 64, mrc_mr_lkey(e.mr) };
		assert_int_equal(mrc_post_send(e.qp, &w), 0);
		want = 3;
		assert_true(harness_wait(h, cond_sends, &want, 5000));
	}
	/* Without a doorbell: scanned, served without a ring. */
	setenv("METAROCE_NO_DOORBELL", "1", 1);
	env_open(h, &f, 8, true);
	unsetenv("METAROCE_NO_DOORBELL");
	assert_false(mrc_features(f.s) & MRC_FEAT_DOORBELL);
	assert_null(f.s->db);
	sqe_by_hand(&f, 4);
	want = 4;
	assert_true(harness_wait(h, cond_sends, &want, 5000));
	env_close(&f);
	env_close(&e);
}

/* The daemon finds an SGE's MR by L_Key in a per-session hash that grows with the MRs (shm_
 * server_priv.h mr_shm_mr_find): with 200 MRs (a re-hash at 129), every live L_Key is accepted
 * whatever the registration order, and deregistered ones are refused (IBA 10.6.3 / C10-10). */
static void test_many_mrs(void **state)
{
	enum { NMR = 200 };
	struct harness *h = *state;
	struct mrc_mr *mrs[NMR];
	struct env e;
	struct mr_send_wr w;
	struct mr_wc wc[4];
	unsigned int want = 0;

	env_open(h, &e, 64, true);
	for (int i = 0; i < NMR; i++) {
		mrs[i] = mrc_reg_mr(e.pd, e.buf + (i % 64) * 64, 64, ACC_ALL);
		assert_non_null(mrs[i]);
	}
	for (int i = 0; i < NMR; i += 3)
		assert_int_equal(mrc_dereg_mr(mrs[i]), 0);
	memset(&w, 0, sizeof(w));
	w.opcode = MR_WR_SEND;
	w.num_sge = 1;
	for (int i = NMR - 1; i >= 0; i -= 7) {
		w.wr_id = (uint64_t)i;
		w.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)(e.buf + (i % 64) * 64), 64,
						i % 3 == 0 ? 0 : mrc_mr_lkey(mrs[i]) };
		if (i % 3 == 0) {
			/* a stale L_Key: the number it had is no longer any MR's */
			w.sg_list[0].lkey = 0;
			assert_int_equal(mrc_post_send(e.qp, &w), 0);
			assert_int_equal(poll_n(e.cq, wc, 1), 1);
			assert_int_equal(wc[0].wr_id, (uint64_t)i);
			assert_int_equal(wc[0].status, MR_WC_LOC_PROT_ERR);
		} else {
			assert_int_equal(mrc_post_send(e.qp, &w), 0);
			want++;
			assert_true(harness_wait(h, cond_sends, &want, 5000));
		}
	}
	for (int i = 0; i < NMR; i++)
		if (i % 3 != 0)
			assert_int_equal(mrc_dereg_mr(mrs[i]), 0);
	env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_query, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mem_mr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_modify_query, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_send_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_completions_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_armed_with_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_fd_flood, setup, teardown),
		cmocka_unit_test(test_session_quotas),
		cmocka_unit_test_setup_teardown(test_read_beyond_psn_space, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_rejects, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doorbell, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doorbell_clear_race, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doorbell_clear_race_fenced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doorbell_many_qps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doorbell_many_qps_fenced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doorbell_asym_late_store, setup_slow_barrier,
						teardown),
		cmocka_unit_test_setup_teardown(test_many_mrs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_isolation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_reclaim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_reclaims, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loopback_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_path_and_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stress_sessions, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
