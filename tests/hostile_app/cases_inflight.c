/* SPDX-License-Identifier: MIT
 * Deregistration, unmap and destroy while work is in flight, and an app killed mid-transfer
 * (issue 8 defect 2). IBA 10.6.7: deregistering a region with outstanding operations must not
 * let them touch the memory afterwards; either they complete (in error or not) before the
 * memory goes, or the deregistration waits/fails. Whatever the daemon chooses, the hostile app
 * checks: every WR completes (no hang), a successful WRITE/READ placed the right bytes, and no
 * byte of memory mapped after the deregistration (filled with SECRET, standing for another
 * app's data that the daemon may map at the freed address) is sent or overwritten.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostile.h"

#define BIG (16u << 20)
#define NWR 8
#define SECRET 0x5e
#define POISON 0xee
#define NSECRET 4

/* Time between posting and deregistering: the WRs are queued, in the middle of their packets,
 * or partly acknowledged. Every in-flight case runs once per delay. */
static const unsigned int delays_ms[] = { 0, 3, 15 };
#define NDELAYS (sizeof(delays_ms) / sizeof(delays_ms[0]))

/* Payload bytes are 0x80..0xbc: never SECRET, never POISON. */
static uint8_t pat(size_t i)
{
	return (uint8_t)(0x80 | ((i * 13u) % 61u));
}

static void fill_pat(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(i);
}

/* Buffers mapped and registered after the deregistration: the daemon may place them where the
 * freed memory was. */
struct secrets {
	uint8_t *buf[NSECRET];
	struct mrc_mr *mr[NSECRET];
};

static void secrets_map(struct hside *h, struct secrets *sc)
{
	for (int i = 0; i < NSECRET; i++) {
		sc->buf[i] = mrc_alloc_buf(h->s, BIG);
		sc->mr[i] = NULL;
		if (sc->buf[i] == NULL)
			continue;
		memset(sc->buf[i], SECRET, BIG);
		sc->mr[i] = mrc_reg_mr(h->pd, sc->buf[i], BIG, MR_ACCESS_LOCAL_WRITE);
	}
}

static size_t secrets_changed(const struct secrets *sc)
{
	size_t bad = 0;

	for (int i = 0; i < NSECRET; i++)
		for (size_t k = 0; sc->buf[i] != NULL && k < BIG; k++)
			bad += sc->buf[i][k] != SECRET;
	return bad;
}

/* Dereg (raw: the library would refuse to unmap afterwards) and unmap h's MR and buffer.
 * Returns the dereg status; -EBUSY is an acceptable answer (the memory stays alive). */
static int dereg_unmap(struct hside *h, const char *what)
{
	int rc = hctl_obj(h->s, MRC_CTL_DEREG_MR, h->mr->o.handle);
	int rc2 = -1;

	if (rc == 0)
		rc2 = hctl_obj(h->s, MRC_CTL_UNMAP_BUF, h->mr->buf->o.handle);
	if (rc != 0 && rc != -EBUSY)
		hfail("%s: dereg_mr with work in flight: %d (want 0 or -EBUSY)", what, rc);
	if (rc == 0 && rc2 != 0 && rc2 != -EBUSY)
		hfail("%s: unmap_buf after dereg: %d (want 0 or -EBUSY)", what, rc2);
	printf("mr_hostile: %s: dereg_mr -> %d, unmap_buf -> %d\n", what, rc, rc2);
	return rc;
}

static void post_rdma(struct hside *a, struct hside *b, uint32_t opcode, uint32_t n,
		      uint32_t len)
{
	for (uint32_t i = 0; i < n; i++) {
		struct mrc_sqe *e = hsqe_next(a->qp);

		e->wr_id = 0x800 + i;
		e->opcode = opcode;
		e->send_flags = MR_SEND_SIGNALED;
		e->num_sge = 1;
		e->u.sge[0] = (struct mr_sge){ (uint64_t)(uintptr_t)a->buf + (uint64_t)i * len, len,
					       mrc_mr_lkey(a->mr) };
		e->rkey = mrc_mr_rkey(b->mr);
		e->remote_addr = (uint64_t)(uintptr_t)b->buf + (uint64_t)i * len;
		a->qp->sq_prod++;
	}
	mrc_ring_publish(a->qp->sq, a->qp->sq_prod);
	hring(a->qp);
}

/* Waits for n completions; returns a bit mask of the WRs that succeeded. */
static uint32_t wait_wrs(struct hside *a, uint32_t n, const char *what)
{
	struct mr_wc wc[32];
	uint32_t ok = 0;
	int got = hpoll(a->cq, wc, (int)n, 3 * g_opt->timeout_s * 1000);
	int nerr = 0, first_err = -1;

	HCHECK(got == (int)n, "%s: %d of %u WRs completed (a WR in flight hangs)", what, got, n);
	for (int i = 0; i < got; i++) {
		if (wc[i].status == MR_WC_SUCCESS && wc[i].wr_id >= 0x800 && wc[i].wr_id < 0x800 + n)
			ok |= 1u << (wc[i].wr_id - 0x800);
		else if (nerr++ == 0)
			first_err = (int)wc[i].status;
	}
	printf("mr_hostile: %s: %d completed, %d ok, %d in error (first status %d)\n", what, got,
	       got - nerr, nerr, first_err);
	return ok;
}

/* dst (peer copy of a's buffer, len bytes per WR) holds, per WR, the payload if it succeeded,
 * and payload or poison otherwise; never anything else. */
static void check_dst(const uint8_t *dst, uint32_t n, uint32_t len, uint32_t ok,
		      const char *what)
{
	size_t foreign = 0, missing = 0, first = 0, secret = 0;

	for (uint32_t i = 0; i < n; i++)
		for (size_t k = (size_t)i * len; k < (size_t)(i + 1) * len; k++) {
			if (dst[k] == pat(k))
				continue;
			if (dst[k] != POISON && foreign++ == 0)
				first = k;
			if (dst[k] == SECRET)
				secret++;
			if (dst[k] == POISON && (ok & (1u << i)))
				missing++;
		}
	HCHECK(foreign == 0, "%s: %zu destination bytes are neither the payload nor untouched "
	       "(%zu of them SECRET, memory mapped after the dereg; first at offset %zu: 0x%02x)",
	       what, foreign, secret, first, foreign ? dst[first] : 0);
	HCHECK(missing == 0, "%s: %zu bytes of WRs that completed successfully never arrived", what,
	       missing);
}

static void pair_big(struct hside *a, struct hside *b, bool a_src)
{
	hside_open(a, 0, BIG, 32, 16, 128, POISON);
	hside_open(b, 1, BIG, 32, 16, 128, POISON);
	fill_pat(a_src ? a->buf : b->buf, BIG);
	hpair_connect(a, b, 16, 7);
}

static void dereg_write_once(unsigned int delay)
{
	char what[96];
	struct hside a, b;
	struct secrets sc;
	uint32_t ok;
	int rc;

	snprintf(what, sizeof(what), "dereg source MR %u ms into 8 x 2 MiB WRITEs", delay);
	pair_big(&a, &b, true);
	post_rdma(&a, &b, MR_WR_RDMA_WRITE, NWR, BIG / NWR);
	hsleep_ms(delay);
	rc = dereg_unmap(&a, what);
	secrets_map(&a, &sc);
	ok = wait_wrs(&a, NWR, what);
	check_dst(b.buf, NWR, BIG / NWR, ok, what);
	HCHECK(secrets_changed(&sc) == 0, "%s: memory mapped after the dereg was modified", what);
	if (rc == -EBUSY)
		HCHECK(dereg_unmap(&a, "dereg after completion") == 0, "%s: dereg still refused "
		       "after every WR completed", what);
	hcheck_daemons(what);
	hside_close(&a);
	hside_close(&b);
}

void case_dereg_inflight_write(void)
{
	for (size_t d = 0; d < NDELAYS; d++)
		dereg_write_once(delays_ms[d]);
}

static void dereg_remote_once(unsigned int delay)
{
	char what[96];
	struct hside a, b;
	struct secrets sc;

	snprintf(what, sizeof(what), "peer deregisters the target %u ms into 8 x 2 MiB WRITEs",
		 delay);
	pair_big(&a, &b, true);
	post_rdma(&a, &b, MR_WR_RDMA_WRITE, NWR, BIG / NWR);
	hsleep_ms(delay + 2); /* a WRITE is open at the responder */
	dereg_unmap(&b, what);
	secrets_map(&b, &sc);
	wait_wrs(&a, NWR, what);
	HCHECK(secrets_changed(&sc) == 0, "%s: the peer's WRITE landed in memory mapped after the "
	       "dereg (%zu bytes)", what, secrets_changed(&sc));
	hcheck_daemons(what);
	hside_close(&a);
	hside_close(&b);
}

void case_dereg_inflight_remote(void)
{
	for (size_t d = 0; d < NDELAYS; d++)
		dereg_remote_once(delays_ms[d]);
}

static void dereg_read_sink_once(unsigned int delay)
{
	char what[96];
	struct hside a, b;
	struct secrets sc;

	snprintf(what, sizeof(what), "dereg the sink MR %u ms into 4 x 4 MiB READs", delay);
	pair_big(&a, &b, false);
	post_rdma(&a, &b, MR_WR_RDMA_READ, 4, BIG / 4);
	hsleep_ms(delay);
	dereg_unmap(&a, what);
	secrets_map(&a, &sc);
	wait_wrs(&a, 4, what);
	HCHECK(secrets_changed(&sc) == 0, "%s: READ responses written into memory mapped after "
	       "the dereg (%zu bytes)", what, secrets_changed(&sc));
	hcheck_daemons(what);
	hside_close(&a);
	hside_close(&b);
}

static void dereg_read_source_once(unsigned int delay)
{
	char what[96];
	struct hside a, b;
	struct secrets sc;
	uint32_t ok;

	snprintf(what, sizeof(what), "peer deregisters the source %u ms into 4 x 4 MiB READs",
		 delay);
	pair_big(&a, &b, false);
	post_rdma(&a, &b, MR_WR_RDMA_READ, 4, BIG / 4);
	hsleep_ms(delay + 2);
	dereg_unmap(&b, what);
	secrets_map(&b, &sc);
	ok = wait_wrs(&a, 4, what);
	check_dst(a.buf, 4, BIG / 4, ok, what);
	hcheck_daemons(what);
	hside_close(&a);
	hside_close(&b);
}

void case_dereg_inflight_read(void)
{
	for (size_t d = 0; d < NDELAYS; d++) {
		dereg_read_sink_once(delays_ms[d]);
		dereg_read_source_once(delays_ms[d]);
	}
}

static bool write_verified(struct hside *a, struct hside *b, const char *what)
{
	struct mr_wc wc;

	post_rdma(a, b, MR_WR_RDMA_WRITE, 1, 65536);
	if (hpoll(a->cq, &wc, 1, g_opt->timeout_s * 1000) != 1 || wc.status != MR_WC_SUCCESS) {
		hfail("%s: a fresh pair's WRITE failed", what);
		return false;
	}
	for (size_t k = 0; k < 65536; k++)
		if (b->buf[k] != pat(k)) {
			hfail("%s: a fresh pair's WRITE placed wrong bytes", what);
			return false;
		}
	return true;
}

void case_destroy_qp_inflight(void)
{
	struct hside a, b;
	uint32_t qh;
	int rc;

	{
		const char *what = "destroy a QP with 16 x 1 MiB WRITEs posted";

		pair_big(&a, &b, true);
		post_rdma(&a, &b, MR_WR_RDMA_WRITE, 16, BIG / 16);
		qh = a.qp->o.handle;
		rc = hctl_obj(a.s, MRC_CTL_DESTROY_QP, qh);
		HCHECK(rc == 0, "%s: %d", what, rc);
		hsleep_ms(200);
		hcheck_daemons(what);
		hside_close(&a);
		hside_close(&b);
		pair_big(&a, &b, true);
		write_verified(&a, &b, what);
		hside_close(&a);
		hside_close(&b);
	}
	{
		const char *what = "the peer destroys its QP under 16 x 1 MiB WRITEs";
		struct mr_wc wc[16];
		int n, nerr = 0;

		hside_open(&a, 0, BIG, 32, 16, 128, POISON);
		hside_open(&b, 1, BIG, 32, 16, 128, POISON);
		fill_pat(a.buf, BIG);
		hpair_connect(&a, &b, 12, 3); /* 16.8 ms x 4 tries: the loss shows quickly */
		post_rdma(&a, &b, MR_WR_RDMA_WRITE, 16, BIG / 16);
		rc = hctl_obj(b.s, MRC_CTL_DESTROY_QP, b.qp->o.handle);
		HCHECK(rc == 0, "%s: %d", what, rc);
		n = hpoll(a.cq, wc, 16, 3 * g_opt->timeout_s * 1000);
		for (int i = 0; i < n; i++)
			nerr += wc[i].status != MR_WC_SUCCESS;
		HCHECK(n == 16, "%s: %d of 16 WRs completed", what, n);
		printf("mr_hostile: %s: %d completed, %d in error\n", what, n, nerr);
		hcheck_daemons(what);
		hside_close(&a);
		hside_close(&b);
	}
}

/* A child process sets up a pair, posts WRITEs and READs, tells us, and is SIGKILLed with them
 * in flight (its sessions on both daemons die at once). */
void case_crash_midflight(void)
{
	for (int round = 0; round < 3; round++) {
		int p[2];
		pid_t c;
		char x;

		if (pipe(p) < 0) {
			hfail("pipe: %s", strerror(errno));
			return;
		}
		c = fork();
		if (c == 0) {
			struct hside a, b;

			close(p[0]);
			pair_big(&a, &b, true);
			post_rdma(&a, &b, MR_WR_RDMA_WRITE, 8, BIG / 8);
			post_rdma(&b, &a, MR_WR_RDMA_READ, 4, BIG / 4);
			if (write(p[1], "x", 1) != 1)
				_exit(2);
			for (;;)
				pause();
		}
		close(p[1]);
		if (c < 0 || read(p[0], &x, 1) != 1) {
			hfail("crash child %d did not start its transfers", (int)c);
			close(p[0]);
			if (c > 0)
				kill(c, SIGKILL), waitpid(c, NULL, 0);
			return;
		}
		close(p[0]);
		hsleep_ms((unsigned int)(round * 20));
		kill(c, SIGKILL);
		waitpid(c, NULL, 0);
		hcheck_daemons("app killed with WRITEs and READs in flight");
	}
	hok("3 apps SIGKILLed with 16 MiB of WRITEs and READs in flight; daemons answer");
}
