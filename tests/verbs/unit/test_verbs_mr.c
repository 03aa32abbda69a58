/* SPDX-License-Identifier: MIT
 * The metaroce libibverbs (stack/verbs) through its public verbs API, against a daemon:
 * ibv_reg_mr on malloc'd (sharing a page with live heap data), memalign'd, mmap'd and stack
 * memory, data moved and verified between two RC QPs of one daemon (WRITE, READ, SEND with
 * immediate, atomics, the ibv_wr_* API, inline), guard bytes around an MR intact after remote
 * WRITEs at its very edges and rejected ones just beyond them, overlapping and adjacent
 * registrations sharing pages, pages private again after the last deregistration, fork
 * giving the child a private copy, completion channels, shared receive queues, and the
 * documented errors of what
 * metaroce does not support.
 *
 * Usage: test_verbs_mr SHM_LOOPD        (unit suite: starts the loopback stand-in daemon)
 *        test_verbs_mr --sock PATH      (integration: a real metaroced)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <malloc.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	     IBV_ACCESS_REMOTE_ATOMIC)

static char g_sock[256];
static uint8_t g_rd_atomic = 4;   /* max_rd_atomic connect_qp sets at RTS */
static pid_t g_loopd = -1;

struct pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	struct ibv_qp *a, *b;   /* a -> b connected both ways (loopback on one daemon) */
};

static struct ibv_context *open_dev(void)
{
	struct ibv_device **l;
	struct ibv_context *c;
	int n = 0;

	l = ibv_get_device_list(&n);
	assert_non_null(l);
	assert_int_equal(n, 1);
	assert_string_equal(ibv_get_device_name(l[0]), "metaroce0");
	c = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	assert_non_null(c);
	return c;
}

static struct ibv_qp *new_qp(struct pair *p, bool ex)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.send_cq = p->cq;
	a.recv_cq = p->cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = 64;
	a.cap.max_send_sge = 4;
	a.cap.max_recv_sge = 4;
	a.cap.max_inline_data = 64;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = p->pd;
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND_WITH_IMM |
				   IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	}
	qp = ibv_create_qp_ex(p->ctx, &a);
	assert_non_null(qp);
	assert_true(a.cap.max_send_wr >= 64);
	assert_true(a.cap.max_inline_data >= 64);
	return qp;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr at;
	union ibv_gid gid;

	assert_int_equal(ibv_query_gid(qp->context, 1, 1, &gid), 0);  /* ::ffff:IPv4 */
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.pkey_index = 0;
	at.port_num = 1;
	at.qp_access_flags = ACC;
	assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = dqpn;
	at.rq_psn = 0x1234;
	at.max_dest_rd_atomic = 4;
	at.min_rnr_timer = 12;
	at.ah_attr.is_global = 1;
	at.ah_attr.grh.dgid = gid;
	at.ah_attr.grh.sgid_index = 1;
	at.ah_attr.grh.hop_limit = 64;
	at.ah_attr.port_num = 1;
	assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.timeout = 18;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.sq_psn = 0x1234;
	at.max_rd_atomic = g_rd_atomic;
	assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

static void pair_up(struct pair *p, bool ex, bool channel)
{
	memset(p, 0, sizeof(*p));
	p->ctx = open_dev();
	p->pd = ibv_alloc_pd(p->ctx);
	assert_non_null(p->pd);
	if (channel) {
		p->ch = ibv_create_comp_channel(p->ctx);
		assert_non_null(p->ch);
	}
	p->cq = ibv_create_cq(p->ctx, 256, p, p->ch, 0);
	assert_non_null(p->cq);
	p->a = new_qp(p, ex);
	p->b = new_qp(p, ex);
	connect_qp(p->a, p->b->qp_num);
	connect_qp(p->b, p->a->qp_num);
}

static void pair_down(struct pair *p)
{
	assert_int_equal(ibv_destroy_qp(p->a), 0);
	assert_int_equal(ibv_destroy_qp(p->b), 0);
	assert_int_equal(ibv_destroy_cq(p->cq), 0);
	if (p->ch != NULL)
		assert_int_equal(ibv_destroy_comp_channel(p->ch), 0);
	assert_int_equal(ibv_dealloc_pd(p->pd), 0);
	assert_int_equal(ibv_close_device(p->ctx), 0);
}

/* Waits for one completion (5 s); returns it. */
static struct ibv_wc wait_wc(struct pair *p)
{
	struct ibv_wc wc;
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(p->cq, 1, &wc);
		assert_true(n >= 0);
		if (n == 1)
			return wc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			fail_msg("no completion within 5 s");
		usleep(50);
	}
}

static void post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *l, void *laddr,
		      uint32_t len, struct ibv_mr *r, uint64_t raddr, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, l->lkey };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = r->rkey;
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static bool all(const uint8_t *p, size_t n, uint8_t v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* True when [p, p+n) is mapped from the library's shared memfd ("metaroce-mr"). */
static bool shared_with_daemon(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, e = a + n;
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	bool hit = false;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long s, t;

		if (sscanf(line, "%lx-%lx", &s, &t) == 2 && s < e && t > a &&
		    strstr(line, "metaroce-mr") != NULL)
			hit = true;
	}
	fclose(f);
	return hit;
}

/* ---- tests ---- */

static void test_no_daemon(void **state)
{
	struct ibv_device **l;
	int n = -1;

	(void)state;
	setenv("METAROCE_SOCK", "/nonexistent/metaroced.sock", 1);
	errno = 0;
	l = ibv_get_device_list(&n);
	assert_non_null(l);   /* an empty list, like a host without RDMA devices */
	assert_null(l[0]);
	assert_int_equal(n, 0);
	assert_int_not_equal(errno, 0);
	ibv_free_device_list(l);
	setenv("METAROCE_SOCK", g_sock, 1);
}

static void test_heap_neighbours(void **state)
{
	struct pair p;
	uint8_t *a, *b, *c, *d;
	uint8_t ref_a[200], ref_c[200], ref_b[200];
	struct ibv_mr *mb, *md;
	struct ibv_wc wc;

	(void)state;
	pair_up(&p, false, false);
	a = malloc(200);
	b = malloc(200);
	c = malloc(200);
	d = malloc(300);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_non_null(d);
	/* Neighbours in one page: the registration shares it, they must not notice. */
	assert_true(((uintptr_t)a >> 12) == ((uintptr_t)b >> 12) ||
		    ((uintptr_t)c >> 12) == ((uintptr_t)b >> 12));
	fill(a, 200, 1);
	fill(b, 200, 2);
	fill(c, 200, 3);
	memcpy(ref_a, a, 200);
	memcpy(ref_b, b, 200);
	memcpy(ref_c, c, 200);
	mb = ibv_reg_mr(p.pd, b, 200, ACC);
	assert_non_null(mb);
	assert_true(shared_with_daemon(b, 200));
	assert_memory_equal(a, ref_a, 200);
	assert_memory_equal(b, ref_b, 200);
	assert_memory_equal(c, ref_c, 200);
	/* The neighbours stay ordinary, writable heap memory while shared. */
	fill(a, 200, 11);
	fill(c, 200, 13);
	memcpy(ref_a, a, 200);
	memcpy(ref_c, c, 200);
	memset(d, 0, 300);
	md = ibv_reg_mr(p.pd, d, 300, ACC);
	assert_non_null(md);
	post_rdma(p.a, IBV_WR_RDMA_WRITE, mb, b, 200, md, (uintptr_t)d + 50, 7);
	wc = wait_wc(&p);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_memory_equal(d + 50, ref_b, 200);
	assert_true(all(d, 50, 0));
	assert_true(all(d + 250, 50, 0));
	assert_memory_equal(a, ref_a, 200);
	assert_memory_equal(c, ref_c, 200);
	assert_int_equal(ibv_dereg_mr(mb), 0);
	assert_int_equal(ibv_dereg_mr(md), 0);
	/* Private again, contents kept. */
	assert_false(shared_with_daemon(b, 200));
	assert_false(shared_with_daemon(d, 300));
	assert_memory_equal(a, ref_a, 200);
	assert_memory_equal(b, ref_b, 200);
	assert_memory_equal(c, ref_c, 200);
	assert_memory_equal(d + 50, ref_b, 200);
	/* The heap is intact (glibc checks its chunk headers on free and malloc). */
	free(a);
	free(b);
	free(c);
	free(d);
	a = malloc(100000);
	assert_non_null(a);
	free(a);
	assert_int_equal(malloc_trim(0) >= 0, 1);
	pair_down(&p);
}

static void test_memalign_mmap_stack(void **state)
{
	const size_t len = 256 * 1024;
	struct pair p;
	uint8_t *src, *dst, *back, stk[512], stk_ref[512];
	struct ibv_mr *ms, *md, *mk, *mbk;
	struct ibv_wc wc;
	uint64_t *word;

	(void)state;
	pair_up(&p, false, false);
	src = memalign(4096, len);
	assert_non_null(src);
	dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(dst != MAP_FAILED);
	back = malloc(len + 3);   /* unaligned on purpose */
	assert_non_null(back);
	fill(src, len, 42);
	memset(dst, 0xee, len);
	memset(back, 0, len + 3);
	ms = ibv_reg_mr(p.pd, src, len, ACC);
	md = ibv_reg_mr(p.pd, dst, len, ACC);
	mbk = ibv_reg_mr(p.pd, back + 3, len, ACC);
	assert_non_null(ms);
	assert_non_null(md);
	assert_non_null(mbk);
	assert_true(all(dst, len, 0xee));   /* contents preserved by the remap */
	/* In 64 KiB messages: the loopback stand-in daemon bounces data through a buffer of
	 * that size (a real daemon takes any size). */
	for (size_t off = 0; off < len; off += 65536) {
		post_rdma(p.a, IBV_WR_RDMA_WRITE, ms, src + off, 65536, md, (uintptr_t)dst + off,
			  1);
		wc = wait_wc(&p);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	assert_memory_equal(dst, src, len);
	post_rdma(p.a, IBV_WR_RDMA_READ, mbk, back + 3, 65536, md, (uintptr_t)dst + 4096, 2);
	wc = wait_wc(&p);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_memory_equal(back + 3, src + 4096, 65536);
	assert_true(all(back, 3, 0));
	assert_true(all(back + 3 + 65536, len - 65536, 0));
	/* Stack memory, SEND with immediate into it. */
	memset(stk, 0, sizeof(stk));
	mk = ibv_reg_mr(p.pd, stk, sizeof(stk), ACC);
	assert_non_null(mk);
	{
		struct ibv_sge rs = { (uintptr_t)stk, sizeof(stk), mk->lkey };
		struct ibv_recv_wr rw = { .wr_id = 30, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { (uintptr_t)src + 1000, 300, ms->lkey };
		struct ibv_send_wr sw, *sbad;
		int i, got_send = 0, got_recv = 0;

		assert_int_equal(ibv_post_recv(p.b, &rw, &rbad), 0);
		memset(&sw, 0, sizeof(sw));
		sw.wr_id = 31;
		sw.sg_list = &ss;
		sw.num_sge = 1;
		sw.opcode = IBV_WR_SEND_WITH_IMM;
		sw.send_flags = IBV_SEND_SIGNALED;
		sw.imm_data = htonl(0xdeadbeef);
		assert_int_equal(ibv_post_send(p.a, &sw, &sbad), 0);
		for (i = 0; i < 2; i++) {
			wc = wait_wc(&p);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			if (wc.wr_id == 30) {
				got_recv++;
				assert_int_equal(wc.opcode, IBV_WC_RECV);
				assert_int_equal(wc.byte_len, 300);
				assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
				assert_int_equal(ntohl(wc.imm_data), 0xdeadbeef);
				assert_int_equal(wc.qp_num, p.b->qp_num);
			} else {
				got_send++;
				assert_int_equal(wc.wr_id, 31);
				assert_int_equal(wc.opcode, IBV_WC_SEND);
			}
		}
		assert_int_equal(got_send, 1);
		assert_int_equal(got_recv, 1);
		memcpy(stk_ref, src + 1000, 300);
		assert_memory_equal(stk, stk_ref, 300);
		assert_true(all(stk + 300, sizeof(stk) - 300, 0));
	}
	/* Atomics on the mmap'd region (IBA 9.4.5: 8-byte aligned word). */
	word = (uint64_t *)(dst + 4096);
	*word = 100;
	{
		struct ibv_sge s = { (uintptr_t)back + 8, 8, mbk->lkey };
		struct ibv_send_wr w, *bad;

		memset(&w, 0, sizeof(w));
		w.wr_id = 40;
		w.sg_list = &s;
		w.num_sge = 1;
		w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		w.send_flags = IBV_SEND_SIGNALED;
		w.wr.atomic.remote_addr = (uintptr_t)word;
		w.wr.atomic.rkey = md->rkey;
		w.wr.atomic.compare_add = 5;
		assert_int_equal(ibv_post_send(p.a, &w, &bad), 0);
		wc = wait_wc(&p);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_FETCH_ADD);
		assert_int_equal(*word, 105);
		assert_int_equal(*(uint64_t *)(back + 8), 100);
		w.wr_id = 41;
		w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		w.wr.atomic.compare_add = 105;
		w.wr.atomic.swap = 7;
		assert_int_equal(ibv_post_send(p.a, &w, &bad), 0);
		wc = wait_wc(&p);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_COMP_SWAP);
		assert_int_equal(*word, 7);
		assert_int_equal(*(uint64_t *)(back + 8), 105);
	}
	assert_int_equal(ibv_dereg_mr(mk), 0);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(md), 0);
	assert_int_equal(ibv_dereg_mr(mbk), 0);
	assert_false(shared_with_daemon(dst, len));
	assert_int_equal(*word, 7);   /* contents survive deregistration */
	munmap(dst, len);
	free(src);
	free(back);
	pair_down(&p);
}

/* One remote WRITE of len bytes at off from the MR start (off may be outside) on a fresh pair;
 * returns the completion status. */
static enum ibv_wc_status write_at(struct ibv_mr *target_mr_unused, uint8_t *target,
				   size_t mr_len, long off, uint32_t len, uint8_t val)
{
	struct pair p;
	uint8_t *src = malloc(len);
	struct ibv_mr *ms, *mt;
	struct ibv_wc wc;

	(void)target_mr_unused;
	assert_non_null(src);
	pair_up(&p, false, false);
	memset(src, val, len);
	ms = ibv_reg_mr(p.pd, src, len, ACC);
	mt = ibv_reg_mr(p.pd, target, mr_len, ACC);
	assert_non_null(ms);
	assert_non_null(mt);
	post_rdma(p.a, IBV_WR_RDMA_WRITE, ms, src, len, mt, (uintptr_t)target + off, 9);
	wc = wait_wc(&p);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(mt), 0);
	pair_down(&p);
	free(src);
	return wc.status;
}

static void test_guards(void **state)
{
	const size_t guard = 100, mr_len = 5000, total = 3 * 4096;
	uint8_t *big = malloc(total), *mr;

	(void)state;
	assert_non_null(big);
	memset(big, 0x5a, total);
	mr = big + guard;
	memset(mr, 0, mr_len);
	/* The whole MR, then the first and the last byte alone: all inside, all succeed. */
	assert_int_equal(write_at(NULL, mr, mr_len, 0, (uint32_t)mr_len, 0x11), IBV_WC_SUCCESS);
	assert_true(all(mr, mr_len, 0x11));
	assert_int_equal(write_at(NULL, mr, mr_len, 0, 1, 0x22), IBV_WC_SUCCESS);
	assert_int_equal(write_at(NULL, mr, mr_len, (long)mr_len - 1, 1, 0x33), IBV_WC_SUCCESS);
	assert_int_equal(mr[0], 0x22);
	assert_int_equal(mr[mr_len - 1], 0x33);
	/* One byte beyond either edge: the responder refuses (IBA 9.7.4.1.4 / C9-88 R_Key
	 * checks: remote access error), nothing is written. */
	assert_int_equal(write_at(NULL, mr, mr_len, (long)mr_len - 4, 8, 0x44),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(write_at(NULL, mr, mr_len, -1, 2, 0x55), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(write_at(NULL, mr, mr_len, (long)mr_len, 1, 0x66),
			 IBV_WC_REM_ACCESS_ERR);
	/* Guards on both sides untouched, the MR holds only what the accepted WRITEs wrote. */
	assert_true(all(big, guard, 0x5a));
	assert_true(all(mr + mr_len, total - guard - mr_len, 0x5a));
	assert_int_equal(mr[0], 0x22);
	assert_true(all(mr + 1, mr_len - 2, 0x11));
	assert_int_equal(mr[mr_len - 1], 0x33);
	free(big);
}

static void test_overlap(void **state)
{
	struct pair p;
	uint8_t *buf = memalign(4096, 3 * 4096), *src = malloc(64);
	struct ibv_mr *m1, *m2, *m3, *ms;
	struct ibv_wc wc;

	(void)state;
	assert_non_null(buf);
	assert_non_null(src);
	pair_up(&p, false, false);
	fill(buf, 3 * 4096, 5);
	fill(src, 64, 6);
	m1 = ibv_reg_mr(p.pd, buf, 100, ACC);                 /* page 0 */
	m2 = ibv_reg_mr(p.pd, buf + 50, 8000, ACC);           /* pages 0-1, overlaps m1 */
	m3 = ibv_reg_mr(p.pd, buf + 2 * 4096, 10, ACC);       /* page 2, adjacent */
	ms = ibv_reg_mr(p.pd, src, 64, ACC);
	assert_non_null(m1);
	assert_non_null(m2);
	assert_non_null(m3);
	assert_non_null(ms);
	assert_true(m1->rkey != m2->rkey);
	assert_int_equal(ibv_dereg_mr(m1), 0);
	/* Page 0 still shared: m2 covers it, and the daemon still reaches it through m2. */
	assert_true(shared_with_daemon(buf, 4096));
	post_rdma(p.a, IBV_WR_RDMA_WRITE, ms, src, 64, m2, (uintptr_t)buf + 60, 3);
	wc = wait_wc(&p);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(buf + 60, src, 64);
	/* Through m3 too (page 2). */
	post_rdma(p.a, IBV_WR_RDMA_WRITE, ms, src, 10, m3, (uintptr_t)buf + 2 * 4096, 4);
	wc = wait_wc(&p);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(buf + 2 * 4096, src, 10);
	assert_int_equal(ibv_dereg_mr(m2), 0);
	assert_false(shared_with_daemon(buf, 2 * 4096));
	assert_true(shared_with_daemon(buf + 2 * 4096, 4096));
	assert_int_equal(ibv_dereg_mr(m3), 0);
	assert_false(shared_with_daemon(buf, 3 * 4096));
	assert_memory_equal(buf + 60, src, 64);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	pair_down(&p);
	free(buf);
	free(src);
}

static void test_fork(void **state)
{
	struct pair p;
	uint8_t *buf = malloc(10000), ref[10000];
	struct ibv_mr *m;
	pid_t pid;
	int st;

	(void)state;
	assert_non_null(buf);
	pair_up(&p, false, false);
	fill(buf, 10000, 9);
	memcpy(ref, buf, sizeof(ref));
	m = ibv_reg_mr(p.pd, buf, 10000, ACC);
	assert_non_null(m);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The child sees the parent's data and writes its own private copy. */
		int ok = memcmp(buf, ref, sizeof(ref)) == 0 && !shared_with_daemon(buf, 10000);

		memset(buf, 0x77, 10000);
		_exit(ok ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_memory_equal(buf, ref, sizeof(ref));   /* copy-on-write semantics kept */
	assert_true(shared_with_daemon(buf, 10000));
	assert_int_equal(ibv_dereg_mr(m), 0);
	pair_down(&p);
	free(buf);
}

static void test_wr_api_inline_and_events(void **state)
{
	struct pair p;
	uint8_t *dst = calloc(1, 4096), *src = malloc(4096), *rbuf = calloc(1, 256);
	struct ibv_mr *md, *ms, *mr;
	struct ibv_qp_ex *x;
	struct ibv_wc wc;
	struct ibv_cq *ecq;
	void *ectx;
	struct pollfd pfd;
	char msg[48] = "inline payload, copied at set_inline_data";
	int i, n_ok = 0;

	(void)state;
	assert_non_null(dst);
	assert_non_null(src);
	assert_non_null(rbuf);
	pair_up(&p, true, true);
	fill(src, 4096, 77);
	md = ibv_reg_mr(p.pd, dst, 4096, ACC);
	ms = ibv_reg_mr(p.pd, src, 4096, ACC);
	mr = ibv_reg_mr(p.pd, rbuf, 256, ACC);
	assert_non_null(md);
	assert_non_null(ms);
	assert_non_null(mr);
	{
		struct ibv_sge rs = { (uintptr_t)rbuf, 256, mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 50, .sg_list = &rs, .num_sge = 1 }, *bad;

		assert_int_equal(ibv_post_recv(p.b, &rw, &bad), 0);
	}
	assert_int_equal(ibv_req_notify_cq(p.cq, 0), 0);
	x = ibv_qp_to_qp_ex(p.a);
	assert_non_null(x);
	ibv_wr_start(x);
	x->wr_id = 51;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, md->rkey, (uintptr_t)dst + 100);
	ibv_wr_set_sge(x, ms->lkey, (uintptr_t)src, 1000);
	x->wr_id = 52;
	ibv_wr_send_imm(x, htonl(0x01020304));
	ibv_wr_set_inline_data(x, msg, sizeof(msg));
	memset(msg, 0, sizeof(msg));   /* verbs: the buffer is free once the call returned */
	assert_int_equal(ibv_wr_complete(x), 0);
	/* The channel fd is pollable and names our CQ. */
	pfd.fd = p.ch->fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(ibv_get_cq_event(p.ch, &ecq, &ectx), 0);
	assert_ptr_equal(ecq, p.cq);
	assert_ptr_equal(ectx, &p);
	ibv_ack_cq_events(ecq, 1);
	for (i = 0; i < 3; i++) {
		wc = wait_wc(&p);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (wc.wr_id == 50) {
			assert_int_equal(wc.byte_len, 48);
			assert_int_equal(ntohl(wc.imm_data), 0x01020304);
			assert_memory_equal(rbuf, "inline payload, copied at set_inline_data", 42);
		}
		n_ok++;
	}
	assert_int_equal(n_ok, 3);
	assert_memory_equal(dst + 100, src, 1000);
	assert_true(all(dst, 100, 0));
	/* A builder metaroce lacks fails the batch at wr_complete, nothing posted. */
	ibv_wr_start(x);
	ibv_wr_local_inv(x, 1);
	assert_int_equal(ibv_wr_complete(x), EOPNOTSUPP);
	assert_int_equal(ibv_dereg_mr(md), 0);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	pair_down(&p);
	free(dst);
	free(src);
	free(rbuf);
}

static void test_rejects(void **state)
{
	struct pair p;
	struct ibv_qp_init_attr ia;
	struct ibv_srq_init_attr sa;
	struct ibv_ah_attr aa;
	struct ibv_qp_attr at;
	union ibv_gid gid;
	void *shm, *gone;

	(void)state;
	pair_up(&p, false, false);
	/* MAP_SHARED memory: re-mapping would cut it off from its other users. */
	shm = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(shm != MAP_FAILED);
	errno = 0;
	assert_null(ibv_reg_mr(p.pd, shm, 8192, ACC));
	assert_int_equal(errno, EOPNOTSUPP);
	munmap(shm, 8192);
	/* Unmapped memory. */
	gone = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(gone != MAP_FAILED);
	munmap(gone, 8192);
	errno = 0;
	assert_null(ibv_reg_mr(p.pd, gone, 100, ACC));
	assert_int_equal(errno, EFAULT);
	/* IBA 10.6.3.1: remote write needs local write. */
	errno = 0;
	assert_null(ibv_reg_mr(p.pd, &gid, sizeof(gid), IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	/* hugetlb memory, when the host has huge pages at all. */
	shm = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (shm != MAP_FAILED) {
		errno = 0;
		assert_null(ibv_reg_mr(p.pd, shm, 4096, ACC));
		assert_int_equal(errno, EOPNOTSUPP);
		munmap(shm, 2 << 20);
	}
	/* SRQ sizes beyond the device's limits. */
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 0;
	errno = 0;
	assert_null(ibv_create_srq(p.pd, &sa));
	assert_int_equal(errno, EINVAL);
	sa.attr.max_wr = 16;
	sa.attr.srq_limit = 17;
	errno = 0;
	assert_null(ibv_create_srq(p.pd, &sa));
	assert_int_equal(errno, EINVAL);
	/* Unsupported QP types. */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = p.cq;
	ia.recv_cq = p.cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	errno = 0;
	assert_null(ibv_create_qp(p.pd, &ia));
	assert_int_equal(errno, EOPNOTSUPP);
	memset(&aa, 0, sizeof(aa));
	errno = 0;
	assert_null(ibv_create_ah(p.pd, &aa));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_alloc_mw(p.pd, IBV_MW_TYPE_1));
	assert_int_equal(errno, EOPNOTSUPP);
	/* GID table bounds; RoCE without a GRH. */
	assert_int_equal(ibv_query_gid(p.ctx, 1, 0, &gid), 0);
	assert_int_equal(gid.raw[0], 0xfe);
	assert_int_equal(gid.raw[1], 0x80);
	assert_int_equal(ibv_query_gid(p.ctx, 1, 1, &gid), 0);
	assert_int_equal(gid.raw[10], 0xff);
	assert_int_equal(gid.raw[11], 0xff);
	assert_int_not_equal(ibv_query_gid(p.ctx, 1, 99, &gid), 0);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = p.cq;
	ia.recv_cq = p.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	{
		struct ibv_qp *q = ibv_create_qp(p.pd, &ia);

		assert_non_null(q);
		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_INIT;
		at.port_num = 1;
		at.qp_access_flags = ACC;
		assert_int_equal(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_RTR;
		at.path_mtu = IBV_MTU_1024;
		at.dest_qp_num = p.a->qp_num;
		at.ah_attr.is_global = 0;
		assert_int_equal(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
				 EINVAL);
		assert_int_equal(q->state, IBV_QPS_INIT);
		assert_int_equal(ibv_destroy_qp(q), 0);
	}
	/* An initiator depth above the device's (perftest passes the peer's: rxe says 128) is
	 * clamped to max_qp_rd_atom, not refused (a real daemon's transport refuses more than
	 * its 16, so RTS itself is the check there; the stand-in daemon does not report it). */
	{
		struct ibv_device_attr da;
		struct ibv_qp_init_attr qi;
		struct ibv_qp *q = new_qp(&p, false);

		assert_int_equal(ibv_query_device(p.ctx, &da), 0);
		g_rd_atomic = 128;
		connect_qp(q, p.b->qp_num);
		g_rd_atomic = 4;
		assert_int_equal(ibv_query_qp(q, &at, IBV_QP_MAX_QP_RD_ATOMIC, &qi), 0);
		assert_int_equal(at.qp_state, IBV_QPS_RTS);
		assert_true(at.max_rd_atomic <= da.max_qp_rd_atom);
		assert_int_equal(qi.cap.max_send_wr >= 64, 1);
		assert_int_equal(ibv_destroy_qp(q), 0);
	}
	/* ibv_destroy_cq while QPs use it: EBUSY, nothing destroyed. */
	assert_int_equal(ibv_destroy_cq(p.cq), EBUSY);
	pair_down(&p);
}

/* An application that closes the device with MRs still registered gets its pages back as
 * private memory with their contents. */
static void test_close_with_mrs(void **state)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	uint8_t *buf = malloc(20000), ref[20000];

	(void)state;
	assert_non_null(pd);
	assert_non_null(buf);
	fill(buf, sizeof(ref), 21);
	memcpy(ref, buf, sizeof(ref));
	assert_non_null(ibv_reg_mr(pd, buf, 20000, ACC));
	assert_non_null(ibv_reg_mr(pd, buf + 100, 50, ACC));
	assert_true(shared_with_daemon(buf, 20000));
	assert_int_equal(ibv_close_device(c), 0);
	assert_false(shared_with_daemon(buf, 20000));
	assert_memory_equal(buf, ref, sizeof(ref));
	free(buf);
}

/* Shared receive queue: two QPs (a <-> b) take their receives from one SRQ, in posting
 * order, each completion naming the QP that received; the documented errors. The stand-in
 * daemon (unit suite) has no SRQ backend: there ibv_create_srq must say EOPNOTSUPP. */
static void test_srq(void **state)
{
	enum { N = 8, LEN = 512 };
	struct pair p;
	struct ibv_srq_init_attr sa;
	struct ibv_srq_attr q;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;
	struct ibv_srq *srq;
	struct ibv_pd *pd2;
	struct ibv_qp *qa_, *qb;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct ibv_recv_wr rw[N], *bad;
	struct ibv_sge rs[N], ss;
	struct ibv_send_wr sw, *sbad;
	uint8_t *buf = calloc(2 * N, LEN);   /* [0, N): receive buffers, [N, 2N): sources */
	uint64_t next_wr = 100;
	int i, got_a = 0, got_b = 0, sends = 0, recvs = 0;

	(void)state;
	assert_non_null(buf);
	pair_up(&p, false, false);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = N;
	sa.attr.max_sge = 1;
	sa.attr.srq_limit = 2;
	sa.srq_context = &p;
	errno = 0;
	srq = ibv_create_srq(p.pd, &sa);
	if (srq == NULL && g_loopd > 0) {
		assert_int_equal(errno, EOPNOTSUPP);
		pair_down(&p);
		free(buf);
		return;
	}
	assert_non_null(srq);
	assert_ptr_equal(srq->srq_context, &p);
	assert_true(sa.attr.max_wr >= N);
	assert_int_equal(ibv_query_srq(srq, &q), 0);
	assert_int_equal(q.max_wr, sa.attr.max_wr);
	assert_int_equal(q.max_sge, 1);
	assert_int_equal(q.srq_limit, 2);
	q.srq_limit = 5;
	assert_int_equal(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT), 0);
	memset(&q, 0, sizeof(q));
	assert_int_equal(ibv_query_srq(srq, &q), 0);
	assert_int_equal(q.srq_limit, 5);
	q.srq_limit = q.max_wr + 1;
	assert_int_equal(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT), EINVAL);
	q.max_wr = 2 * N;
	assert_int_equal(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR), EOPNOTSUPP);
	/* Two QPs on the SRQ, connected to each other. */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = p.cq;
	ia.recv_cq = p.cq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qa_ = ibv_create_qp(p.pd, &ia);
	assert_non_null(qa_);
	assert_int_equal(ia.cap.max_recv_wr, 0);   /* receives are the SRQ's */
	qb = ibv_create_qp(p.pd, &ia);
	assert_non_null(qb);
	assert_ptr_equal(qb->srq, srq);
	assert_int_equal(ibv_query_qp(qb, &qa, 0, &qi), 0);
	assert_ptr_equal(qi.srq, srq);
	/* IBA 10.2.9.1: the SRQ belongs to the QP's PD. */
	pd2 = ibv_alloc_pd(p.ctx);
	assert_non_null(pd2);
	errno = 0;
	assert_null(ibv_create_qp(pd2, &ia));
	assert_int_equal(errno, EINVAL);
	connect_qp(qa_, qb->qp_num);
	connect_qp(qb, qa_->qp_num);
	mr = ibv_reg_mr(p.pd, buf, 2 * N * LEN, ACC);
	assert_non_null(mr);
	for (i = 0; i < N; i++)
		fill(buf + (N + i) * LEN, LEN, 1000 + i);
	/* A chain of N receives in one call; the ring holds exactly them. */
	for (i = 0; i < N; i++) {
		rs[i] = (struct ibv_sge){ (uintptr_t)(buf + i * LEN), LEN, mr->lkey };
		rw[i] = (struct ibv_recv_wr){ .wr_id = next_wr + i, .sg_list = &rs[i], .num_sge = 1,
					      .next = i + 1 < N ? &rw[i + 1] : NULL };
	}
	assert_int_equal(ibv_post_srq_recv(srq, rw, &bad), 0);
	/* Not through the QP's own RQ. */
	rw[0].next = NULL;
	bad = NULL;
	assert_int_equal(ibv_post_recv(qb, rw, &bad), EINVAL);
	assert_ptr_equal(bad, &rw[0]);
	/* Too many SGEs for the SRQ: refused, that WR reported. */
	{
		struct ibv_sge two[2] = { rs[0], rs[1] };
		struct ibv_recv_wr w2 = { .wr_id = 1, .sg_list = two, .num_sge = 2 };

		bad = NULL;
		assert_int_not_equal(ibv_post_srq_recv(srq, &w2, &bad), 0);
		assert_ptr_equal(bad, &w2);
	}
	/* Still in use. */
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	/* N SENDs, alternately a -> b and b -> a, one at a time: the i-th message lands in the
	 * i-th posted receive (posting order), on the QP it was sent to. */
	for (i = 0; i < N; i++) {
		struct ibv_qp *from = (i & 1) ? qb : qa_, *to = (i & 1) ? qa_ : qb;
		int k, seen_recv = 0;

		ss = (struct ibv_sge){ (uintptr_t)(buf + (N + i) * LEN), LEN - i, mr->lkey };
		memset(&sw, 0, sizeof(sw));
		sw.wr_id = 10 + i;
		sw.sg_list = &ss;
		sw.num_sge = 1;
		sw.opcode = IBV_WR_SEND;
		sw.send_flags = IBV_SEND_SIGNALED;
		assert_int_equal(ibv_post_send(from, &sw, &sbad), 0);
		for (k = 0; k < 2; k++) {
			wc = wait_wc(&p);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			if (wc.opcode == IBV_WC_SEND) {
				assert_int_equal(wc.wr_id, 10 + i);
				assert_int_equal(wc.qp_num, from->qp_num);
				sends++;
				continue;
			}
			assert_int_equal(wc.opcode, IBV_WC_RECV);
			assert_int_equal(wc.wr_id, next_wr + i);
			assert_int_equal(wc.qp_num, to->qp_num);
			assert_int_equal(wc.byte_len, LEN - i);
			assert_memory_equal(buf + i * LEN, buf + (N + i) * LEN, LEN - i);
			if (to == qa_)
				got_a++;
			else
				got_b++;
			seen_recv++;
			recvs++;
		}
		assert_int_equal(seen_recv, 1);
	}
	assert_int_equal(sends, N);
	assert_int_equal(recvs, N);
	assert_int_equal(got_a, N / 2);
	assert_int_equal(got_b, N / 2);
	assert_int_equal(ibv_destroy_qp(qa_), 0);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);   /* qb still uses it */
	assert_int_equal(ibv_destroy_qp(qb), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	pair_down(&p);
	free(buf);
}

static void stop_loopd(void)
{
	if (g_loopd > 0) {
		kill(g_loopd, SIGTERM);
		waitpid(g_loopd, NULL, 0);
		g_loopd = -1;
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_daemon),
		cmocka_unit_test(test_heap_neighbours),
		cmocka_unit_test(test_memalign_mmap_stack),
		cmocka_unit_test(test_guards),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_wr_api_inline_and_events),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_close_with_mrs),
		cmocka_unit_test(test_srq),
	};
	char dir[] = "/tmp/mr-verbs-XXXXXX";
	struct stat st;
	int rc, i;

	if (argc == 3 && strcmp(argv[1], "--sock") == 0) {
		snprintf(g_sock, sizeof(g_sock), "%s", argv[2]);
	} else if (argc == 2) {
		if (mkdtemp(dir) == NULL)
			return 1;
		snprintf(g_sock, sizeof(g_sock), "%s/loopd.sock", dir);
		g_loopd = fork();
		if (g_loopd == 0) {
			execl(argv[1], argv[1], g_sock, "300", (char *)NULL);
			_exit(127);
		}
		for (i = 0; i < 200 && stat(g_sock, &st) != 0; i++)
			usleep(10000);
		if (stat(g_sock, &st) != 0) {
			fprintf(stderr, "%s did not create %s\n", argv[1], g_sock);
			stop_loopd();
			return 1;
		}
	} else {
		fprintf(stderr, "usage: %s SHM_LOOPD | --sock PATH\n", argv[0]);
		return 2;
	}
	setenv("METAROCE_SOCK", g_sock, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	stop_loopd();
	if (g_loopd < 0 && argc == 2) {
		unlink(g_sock);
		rmdir(dir);
	}
	return rc;
}
