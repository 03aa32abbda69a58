/* SPDX-License-Identifier: MIT
 * One app tries to take every QP, every MR, and as much daemon memory as QPs can commit (issue
 * 8 defect 4: per-session quotas with defaults that leave room for others, bounded per-QP
 * memory). The hostile app must get a clean negative errno at its limit, and another app must
 * still get a modest set of resources (16 QPs of 256 WRs, 64 MRs) while the hostile one holds
 * everything it got. With --hold FILE the hostile app then keeps its resources until FILE
 * exists, so that the driving script can check that other apps keep transferring.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hostile.h"

/* Errnos that say "limit reached" clearly. */
static bool clean_limit_errno(int e)
{
	return e == ENOSPC || e == ENOMEM || e == EDQUOT || e == EAGAIN || e == EMFILE ||
	       e == EBUSY || e == ENOBUFS || e == EUSERS;
}

static void hold(void)
{
	struct stat st;
	uint64_t end = hnow_ms() + 180000;

	if (g_opt->hold == NULL)
		return;
	printf("mr_hostile: holding until %s exists\n", g_opt->hold);
	fflush(stdout);
	while (stat(g_opt->hold, &st) != 0 && hnow_ms() < end)
		hsleep_ms(50);
}

/* Another, modest app on daemon A: 16 QPs of 256 WRs and 64 MRs. */
static void modest_app(const char *what)
{
	struct mrc_session *s = mrc_open(g_opt->sock[0]);
	struct mrc_pd *pd = s != NULL ? mrc_alloc_pd(s) : NULL;
	struct mrc_cq *cq = pd != NULL ? mrc_create_cq(s, 1024) : NULL;
	uint8_t *buf = cq != NULL ? mrc_alloc_buf(s, 64 * 4096) : NULL;
	int qps = 0, mrs = 0;

	for (int i = 0; buf != NULL && i < 16; i++) {
		struct mrc_qp_init_attr init = { .qp_type = MRC_QPT_RC, .send_cq = cq, .recv_cq = cq,
						 .max_send_wr = 256, .max_recv_wr = 256,
						 .max_send_sge = 1, .max_recv_sge = 1 };

		qps += mrc_create_qp(pd, &init) != NULL;
	}
	for (int i = 0; buf != NULL && i < 64; i++)
		mrs += mrc_reg_mr(pd, buf + 4096 * i, 4096, MR_ACCESS_LOCAL_WRITE) != NULL;
	HCHECK(qps == 16 && mrs == 64, "%s: another app got %d of 16 QPs and %d of 64 MRs (%s)",
	       what, qps, mrs, s != NULL ? mrc_last_error(s) : strerror(errno));
	if (qps == 16 && mrs == 64)
		hok("%s: another app still got 16 QPs and 64 MRs", what);
	if (s != NULL)
		mrc_close(s);
}

static unsigned int grab_qps(struct hside *x, uint32_t wr, unsigned int max, int *err)
{
	unsigned int n = 0;

	*err = 0;
	while (n < max) {
		struct mrc_qp_init_attr init = { .qp_type = MRC_QPT_RC, .send_cq = x->cq,
						 .recv_cq = x->cq, .max_send_wr = wr,
						 .max_recv_wr = wr, .max_send_sge = 1,
						 .max_recv_sge = 1 };

		if (mrc_create_qp(x->pd, &init) == NULL) {
			*err = errno;
			break;
		}
		n++;
	}
	return n;
}

void case_quota_qp(void)
{
	struct hside x;
	unsigned int n, max;
	int err;

	hside_open(&x, 0, 4096, 1, 1, 64, 0);
	max = x.port.max_qp + 16;
	n = grab_qps(&x, 1, max, &err);
	printf("mr_hostile: one session created %u QPs (port max_qp %u), then: %s (%s)\n", n,
	       x.port.max_qp, strerror(err), mrc_last_error(x.s));
	HCHECK(err != 0, "one session created %u QPs without ever being refused", n);
	HCHECK(err == 0 || clean_limit_errno(err), "QP limit reported as %s", strerror(err));
	HCHECK(n + 1 < x.port.max_qp, "one session took %u of the daemon's %u QPs (no per-session "
	       "quota)", n + 1, x.port.max_qp);
	modest_app("QPs exhausted by one app");
	hcheck_daemons("qp exhaustion");
	hold();
	hside_close(&x);
	hcheck_daemons("qp exhaustion released");
}

void case_quota_mr(void)
{
	struct hside x;
	unsigned int n = 0, max;
	int err = 0;
	size_t len = 16u << 20;
	uint8_t *buf;

	hside_open(&x, 0, 4096, 1, 1, 64, 0);
	buf = mrc_alloc_buf(x.s, len);
	HCHECK(buf != NULL, "alloc 16 MiB");
	max = x.port.max_mr + 16;
	while (buf != NULL && n < max) {
		size_t off = ((size_t)n * 4096) % (len - 4096);

		if (mrc_reg_mr(x.pd, buf + off, 4096, MR_ACCESS_LOCAL_WRITE) == NULL) {
			err = errno;
			break;
		}
		n++;
	}
	printf("mr_hostile: one session registered %u MRs (port max_mr %u), then: %s (%s)\n", n,
	       x.port.max_mr, strerror(err), mrc_last_error(x.s));
	HCHECK(err != 0, "one session registered %u MRs without ever being refused", n);
	HCHECK(err == 0 || clean_limit_errno(err), "MR limit reported as %s", strerror(err));
	HCHECK(n + 64 <= x.port.max_mr, "one session took %u of the daemon's %u MRs (no room for "
	       "a 64-MR app)", n + 1, x.port.max_mr);
	modest_app("MRs exhausted by one app");
	hcheck_daemons("mr exhaustion");
	hold();
	hside_close(&x);
	hcheck_daemons("mr exhaustion released");
}

/* QPs of 16384 WRs each until refused. The daemon's virtual size (what it committed for the
 * app: transport WQE arrays, ring memfds it maps) must stay bounded; 4 GiB is half of what
 * 1024 such QPs committed before quotas (issue 8), far above what a per-session quota that
 * leaves room for others allows. Resident memory must stay under 1 GiB. */
#define MEM_BOUND_KB (4l << 20)
#define RSS_STOP_KB (1l << 20)

void case_quota_mem(void)
{
	struct hside x;
	long vm0 = hproc_kb(0, "VmSize"), rss0 = hproc_kb(0, "VmRSS"), vm1, rss1;
	unsigned int n;
	int err;

	hside_open(&x, 0, 4096, 1, 1, 64, 0);
	/* In steps of 16, stopping once the daemon's RSS grew by RSS_STOP_KB: the machine is
	 * shared, and that growth alone already fails the case. */
	n = 0;
	do {
		n += grab_qps(&x, 16384, 16, &err);
		rss1 = hproc_kb(0, "VmRSS");
	} while (err == 0 && n < x.port.max_qp + 16 && (rss0 < 0 || rss1 - rss0 < RSS_STOP_KB));
	HCHECK(rss0 < 0 || rss1 - rss0 < RSS_STOP_KB, "one session made the daemon's RSS grow by "
	       "%ld MiB with %u QPs (stopped there)", (rss1 - rss0) / 1024, n);
	vm1 = hproc_kb(0, "VmSize");
	rss1 = hproc_kb(0, "VmRSS");
	printf("mr_hostile: %u QPs of 16384 WRs, then %s; daemon A VmSize %ld -> %ld MiB, VmRSS %ld "
	       "-> %ld MiB\n", n, err ? strerror(err) : "no refusal", vm0 / 1024, vm1 / 1024,
	       rss0 / 1024, rss1 / 1024);
	HCHECK(err == 0 || clean_limit_errno(err), "16384-WR QP limit reported as %s",
	       strerror(err));
	HCHECK(n + 1 < x.port.max_qp, "one session took %u of the daemon's %u QPs at 16384 WRs "
	       "each", n + 1, x.port.max_qp);
	if (vm0 > 0 && vm1 > 0)
		HCHECK(vm1 - vm0 < MEM_BOUND_KB, "one session grew the daemon by %ld MiB of virtual "
		       "memory (bound %ld MiB)", (vm1 - vm0) / 1024, MEM_BOUND_KB / 1024);
	modest_app("16384-WR QPs by one app");
	hcheck_daemons("qp memory");
	hold();
	hside_close(&x);
	hcheck_daemons("qp memory released");
}
