/* SPDX-License-Identifier: MIT
 * Path (entropy) selection for MetaRoCE spraying: which UDP source port the next packet uses.
 *
 * Recycled entropies (UET's REPS, "entropy recycling"): an entropy whose ACK came back clean
 * (no ECN echo, RTT not inflated) is queued for reuse, so traffic follows paths known to be
 * good. When the queue is empty, entropies are taken round robin. An entropy that lost a packet
 * or echoed a CE mark is penalised and cooled down (skipped) for an exponentially growing time
 * (a black-holed path is probed ever more rarely); clean ACKs decay the penalty. The
 * congestion controller's per-path score (mr_cc.path_penalty) adds to ours.
 */
#include <string.h>

#include "mrt_internal.h"

void mrt_path_init(struct mr_qp *qp, uint16_t n)
{
	struct mrt_req *r = &qp->mrt->req;

	r->n_paths = n;
	r->rr = 0;
	r->rc_head = r->rc_count = 0;
	memset(r->path, 0, sizeof(r->path));
}

static bool mrt_path_usable(const struct mr_qp *qp, uint16_t p, uint64_t now)
{
	const struct mrt_path *ps = &qp->mrt->req.path[p];

	uint32_t cc = mrt_cc_path_penalty(qp, p);

	/* Our own penalty acts through the cooldown; the controller's score (stack/cc
	 * metaroce_cc.c: CE fraction Q16 << 16 | queueing delay in 64 ns) directly: skip a path
	 * with a quarter of its packets marked or 4 us of queueing. */
	return ps->cool_until <= now && (cc >> 16) < 0x4000u && (cc & 0xffffu) < 64u;
}

uint16_t mrt_path_pick(struct mr_qp *qp, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;
	uint16_t best = 0;
	uint64_t best_t = UINT64_MAX;

	if (r->n_paths <= 1)
		return 0;
	while (r->rc_count > 0) {
		uint16_t p = r->recycle[r->rc_head];

		r->rc_head = (r->rc_head + 1) % MRT_RECYCLE;
		r->rc_count--;
		if (mrt_path_usable(qp, p, now))
			return p;
	}
	for (uint16_t i = 0; i < r->n_paths; i++) {
		uint16_t p = (uint16_t)((r->rr + i) % r->n_paths);
		const struct mrt_path *ps = &r->path[p];

		if (mrt_path_usable(qp, p, now)) {
			r->rr = (uint16_t)((p + 1) % r->n_paths);
			return p;
		}
		/* All entropies cooling: use the one that recovers first. */
		if (ps->cool_until < best_t) {
			best_t = ps->cool_until;
			best = p;
		}
	}
	r->rr = (uint16_t)((best + 1) % r->n_paths);
	return best;
}

/* A clean ACK on p: decay its penalty and recycle it (REPS). */
void mrt_path_good(struct mr_qp *qp, uint16_t p)
{
	struct mrt_req *r = &qp->mrt->req;
	struct mrt_path *ps;

	if (p >= r->n_paths || r->n_paths <= 1)
		return;
	ps = &r->path[p];
	ps->penalty >>= 1;
	if (ps->penalty == 0)
		ps->cool_shift = 0;
	if (r->rc_count == MRT_RECYCLE) { /* drop the oldest */
		r->rc_head = (r->rc_head + 1) % MRT_RECYCLE;
		r->rc_count--;
	}
	r->recycle[(r->rc_head + r->rc_count) % MRT_RECYCLE] = p;
	r->rc_count++;
}

static uint64_t mrt_cool_base(const struct mr_qp *qp)
{
	const struct mrt_req *r = &qp->mrt->req;
	uint64_t t = r->have_rtt ? 4 * r->srtt : 0;

	return t > MRT_COOL_MIN_NS ? t : MRT_COOL_MIN_NS;
}

static void mrt_path_cool(struct mr_qp *qp, uint16_t p, uint64_t now, uint32_t pen)
{
	struct mrt_path *ps = &qp->mrt->req.path[p];
	uint64_t until = now + (mrt_cool_base(qp) << ps->cool_shift);

	ps->penalty += pen;
	if (until > ps->cool_until)
		ps->cool_until = until;
	if (ps->cool_shift < MRT_COOL_MAX_SHIFT)
		ps->cool_shift++;
}

void mrt_path_ecn(struct mr_qp *qp, uint16_t p, uint64_t now)
{
	if (p < qp->mrt->req.n_paths && qp->mrt->req.n_paths > 1)
		mrt_path_cool(qp, p, now, MRT_PEN_ECN);
}

/* RTT above target on p: penalise without cooldown (it still delivers). */
void mrt_path_slow(struct mr_qp *qp, uint16_t p)
{
	if (p < qp->mrt->req.n_paths && qp->mrt->req.n_paths > 1)
		qp->mrt->req.path[p].penalty += MRT_PEN_RTT;
}

void mrt_path_loss(struct mr_qp *qp, uint16_t p, uint64_t now)
{
	if (p < qp->mrt->req.n_paths && qp->mrt->req.n_paths > 1)
		mrt_path_cool(qp, p, now, MRT_PEN_LOSS);
}

/* UDP source port of entropy p. The sprayed ports are base + 0..n-1 (rc.h, n <= 256); A17.3.3
 * leaves the source port to the sender, and it must stay a valid, nonzero 16-bit port that
 * differs per entropy. A base near 65535 would wrap to 0, 1, ... (0 meaning "the path's
 * default port" to the frame builder), so the overflow continues at the bottom of the
 * dynamic range instead (RFC 6335 6: 49152-65535, where RoCE v2 senders take their source
 * ports). The wrapped ports [0xC000, 0xC000 + overflow) stay below base, which is above
 * 0xFF00 whenever a wrap happens: all n ports remain distinct. */
uint16_t mrt_udp_sport(uint16_t base, uint16_t p)
{
	uint32_t s = (uint32_t)base + p;

	if (s <= UINT16_MAX)
		return (uint16_t)s;
	return (uint16_t)(MRT_SPORT_WRAP_BASE + (s - (UINT16_MAX + 1u)));
}
