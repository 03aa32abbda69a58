/* SPDX-License-Identifier: MIT
 * Congestion control core: parameter checks, dispatch by algorithm, pacing/window gate, the
 * "none" algorithm (plain RC as rxe runs it: no pacing, no window) and the DCQCN notification
 * point helper (receiver side).
 */
#include <errno.h>
#include <string.h>

#include "cc/cc.h"
#include "cc/cc_algo.h"

#define MR_CC_MTU_MIN 256   /* IBA 9.7 path MTUs: 256..4096 */
#define MR_CC_MTU_MAX 4096
/* DCQCN paper section 3.1: the NP sends at most one CNP per flow every N = 50 us. */
#define MR_DCQCN_NP_DEFAULT_INTERVAL_NS 50000ull

uint64_t mr_cc_tx_time_ns(uint64_t bytes, uint64_t rate_bps)
{
	unsigned __int128 num;

	if (rate_bps == 0 || rate_bps == UINT64_MAX)
		return 0;
	/* A packet's bytes * 8e9 fits 64 bits: one 64-bit division per packet (the 128-bit one,
	 * __udivti3, was 1.5 % of a WRITE sender's cycles). 128-bit for multi-GB counts. */
	if (bytes < (1ull << 30) && rate_bps < (1ull << 63)) /* each term < 2^63: no overflow */
		return (bytes * 8000000000u + rate_bps - 1) / rate_bps;
	num = (unsigned __int128)bytes * 8u * 1000000000u;
	num = (num + rate_bps - 1) / rate_bps;
	return num > UINT64_MAX ? UINT64_MAX : (uint64_t)num;
}

void mr_cc_set_rate(struct mr_cc *cc, uint64_t now, uint64_t rate_bps)
{
	uint64_t old = cc->rate_bps;

	cc->rate_bps = rate_bps;
	if (rate_bps < cc->rate_min_bps)
		cc->rate_min_bps = rate_bps;
	if (rate_bps > old && old != 0 && cc->next_send_ns > now) {
		unsigned __int128 gap = (unsigned __int128)(cc->next_send_ns - now) * old;

		cc->next_send_ns = now + (uint64_t)((gap + rate_bps - 1) / rate_bps);
	}
}

static const struct mr_cc_ops *mr_cc_ops_of(enum mr_cc_algo algo)
{
	switch (algo) {
	case MR_CC_NONE:
		return &mr_cc_none_ops;
	case MR_CC_DCQCN:
		return &mr_cc_dcqcn_ops;
	case MR_CC_METAROCE:
		return &mr_cc_metaroce_ops;
	}
	return NULL;
}

const char *mr_cc_algo_name(enum mr_cc_algo algo)
{
	const struct mr_cc_ops *ops = mr_cc_ops_of(algo);

	return ops ? ops->name : "unknown";
}

int mr_cc_init(struct mr_cc *cc, enum mr_cc_algo algo, const struct mr_cc_params *p, uint64_t now)
{
	const struct mr_cc_ops *ops = mr_cc_ops_of(algo);

	if (cc == NULL || p == NULL || ops == NULL)
		return -EINVAL;
	if (p->line_rate_bps == 0 || p->line_rate_bps == UINT64_MAX)
		return -EINVAL;
	if (p->mtu < MR_CC_MTU_MIN || p->mtu > MR_CC_MTU_MAX)
		return -EINVAL;
	if (p->n_paths < 1 || p->n_paths > MR_CC_MAX_PATHS)
		return -EINVAL;
	/* g = 1/2^shift: beyond 2^-30 the EWMA never moves in a connection's lifetime. */
	if (p->dcqcn_g_shift > 30)
		return -EINVAL;
	memset(cc, 0, sizeof(*cc));
	cc->ops = ops;
	cc->p = *p;
	cc->rate_bps = UINT64_MAX;
	cc->cwnd_bytes = UINT64_MAX;
	cc->next_send_ns = now;
	if (ops->init)
		ops->init(cc, now);
	cc->rate_min_bps = cc->rate_bps;
	return 0;
}

bool mr_cc_can_send(const struct mr_cc *cc, uint64_t now, uint64_t inflight_bytes)
{
	if (cc == NULL || cc->ops == NULL)
		return false;
	return now >= cc->next_send_ns && inflight_bytes < cc->cwnd_bytes;
}

void mr_cc_sent(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path)
{
	uint64_t t;

	if (cc == NULL || cc->ops == NULL)
		return;
	/* Bounded credit, like the token bucket of a NIC's rate limiter (DCQCN's reaction point,
	 * SIGCOMM'15 3.2): a sender that fell behind its schedule because its host polled it late
	 * may catch up with at most MR_CC_BURST_PKTS packets back to back; an idle period earns
	 * nothing beyond that. Without it a software engine paces at its loop granularity (one
	 * packet, one tx flush per iteration) instead of at the controller's rate. */
	if (cc->next_send_ns < now) { /* only a late sender pays for the division */
		uint64_t credit = mr_cc_tx_time_ns((uint64_t)MR_CC_BURST_PKTS * cc->p.mtu,
						   cc->rate_bps);

		if (now - cc->next_send_ns > credit)
			cc->next_send_ns = now - credit;
	}
	t = mr_cc_tx_time_ns(bytes, cc->rate_bps);
	cc->next_send_ns = t > UINT64_MAX - cc->next_send_ns ? UINT64_MAX : cc->next_send_ns + t;
	if (cc->ops->on_send)
		cc->ops->on_send(cc, now, bytes, path < cc->p.n_paths ? path : 0);
}

/* ---- "none": what rxe does (IBA RC has no congestion control of its own). ---- */

static void mr_cc_none_init(struct mr_cc *cc, uint64_t now)
{
	(void)now;
	cc->rate_bps = UINT64_MAX;
	cc->cwnd_bytes = UINT64_MAX;
}

/* Every hook is non-NULL in every algorithm, so the transport may call them unconditionally. */
static void mr_cc_none_on_send(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path)
{
	(void)cc, (void)now, (void)bytes, (void)path;
}

static void mr_cc_none_on_ack(struct mr_cc *cc, const struct mr_cc_ack *ack)
{
	(void)cc, (void)ack;
}

static void mr_cc_none_on_event(struct mr_cc *cc, uint64_t now)
{
	(void)cc, (void)now;
}

static void mr_cc_none_on_loss(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path)
{
	(void)cc, (void)now, (void)bytes, (void)path;
}

static uint64_t mr_cc_none_next_timer(const struct mr_cc *cc)
{
	(void)cc;
	return UINT64_MAX;
}

const struct mr_cc_ops mr_cc_none_ops = {
	.name = "none",
	.init = mr_cc_none_init,
	.on_send = mr_cc_none_on_send,
	.on_ack = mr_cc_none_on_ack,
	.on_cnp = mr_cc_none_on_event,
	.on_loss = mr_cc_none_on_loss,
	.on_timeout = mr_cc_none_on_event,
	.next_timer = mr_cc_none_next_timer,
	.on_timer = mr_cc_none_on_event,
};

/* ---- DCQCN notification point (receiver) ---- */

void mr_dcqcn_np_init(struct mr_dcqcn_np *np, uint64_t min_interval_ns)
{
	if (np == NULL)
		return;
	memset(np, 0, sizeof(*np));
	np->min_interval_ns = min_interval_ns ? min_interval_ns : MR_DCQCN_NP_DEFAULT_INTERVAL_NS;
}

bool mr_dcqcn_np_on_ce(struct mr_dcqcn_np *np, uint64_t now)
{
	if (np == NULL)
		return false;
	/* DCQCN section 3.1 (NP): a CE-marked packet triggers a CNP unless one was sent for
	 * this flow in the last N us. A clock that went backwards counts as "within N". */
	if (np->sent_any && (now < np->last_cnp_ns || now - np->last_cnp_ns < np->min_interval_ns))
		return false;
	np->sent_any = true;
	np->last_cnp_ns = now;
	np->cnps++;
	return true;
}
