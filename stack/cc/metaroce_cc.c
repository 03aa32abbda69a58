/* SPDX-License-Identifier: MIT
 * MetaRoCE congestion controller: a window bounded by the BDP, cut by ECN (DCTCP) and by delay
 * (Swift), paced at cwnd / srtt, with per-path congestion scores for the sprayer.
 *
 *  - Fast start: cwnd = BDP = line_rate * base_rtt (datacenter: no slow start), capped at
 *    MR_MRCC_MAX_BDP_FACTOR * BDP, floored at MR_MRCC_MIN_CWND (below one MTU, as Swift allows:
 *    the published gate cwnd_bytes stays >= 1 MTU and the pacing rate spaces single packets).
 *  - ECN: DCTCP (Alizadeh et al., SIGCOMM'10, section 3.1): per observation window of one srtt,
 *    F = marked/acked bytes, alpha = (1 - g) alpha + g F with g = 1/16; a window with marks
 *    asks for cwnd *= 1 - alpha/2.
 *  - Delay: Swift (Kumar et al., SIGCOMM'20, section 3.1/Algorithm 1): target = base_rtt + hop
 *    allowance (4 hops x 0.5 us, at least 4 MTU times); below target additive increase of
 *    ai = max(BDP/1024, 256 B) per RTT (cwnd += ai*acked/cwnd; small, because N flows add
 *    N*ai per RTT and a 32:1 incast overshoots otherwise);
 *    above it cwnd *= max(1 - beta (rtt - target)/rtt, 1 - max_mdf), beta 0.8, max_mdf 0.5.
 *  - Both decreases share one clock: at most one cut per srtt (the deeper of the two applies).
 *  - Loss (selective retransmit): a cut of max_mdf (once per srtt) only when clustered with
 *    CE or delay within the last srtt; an isolated loss only penalises its path; timeout: halve.
 *  - Target: + Swift flow scaling (3.5) for small windows (fs_range 10 us); a cut only on a
 *    sample of a packet sent after the previous cut (no over-reaction to a draining queue);
 *    faster additive increase (MTU/2 per RTT) while samples show no queue at all.
 *  - Per path: path_penalty[p] packs two EWMAs (gain 1/4 per ack on that path), CE fraction in
 *    the high 16 bits (Q16) and queueing delay (rtt - base_rtt, 64 ns units, saturating) in the
 *    low 16 bits, so "higher = avoid" orders paths by marks first, then by delay. All scores
 *    decay by 1/8 every base_rtt, so an avoided path is tried again.
 */
#include <math.h>
#include <string.h>

#include "cc/cc.h"
#include "cc/cc_algo.h"

#define MR_MRCC_DEFAULT_BASE_RTT_NS 8000ull
#define MR_MRCC_HOP_ALLOWANCE_NS 500ull  /* Swift-style per-hop queueing allowance */
#define MR_MRCC_HOPS 4u                  /* host-ToR-spine-ToR-host: 4 queues */
#define MR_MRCC_ALLOWANCE_MTUS 4u        /* ... and at least 4 MTUs at line rate */
#define MR_MRCC_MAX_BDP_FACTOR 2.0
#define MR_MRCC_MIN_CWND 256.0
#define MR_MRCC_DCTCP_G (1.0 / 16.0)
/* Swift's beta (SIGCOMM'20 Algorithm 1, a tunable). 0.5, not 0.8: in an incast every flow sees
 * the same queue and cuts together, so the aggregate cut is beta of the excess delay; 0.8
 * overshot and emptied the bottleneck (32:1 incast: periodic dips to 80% utilisation). */
#define MR_MRCC_BETA 0.5
#define MR_MRCC_MAX_MDF 0.5
#define MR_MRCC_AI_DIV 1024.0           /* additive increase per RTT: BDP/1024, >= 256 B */
#define MR_MRCC_PACED_MTUS 1u
#define MR_MRCC_PATH_SHIFT 2u            /* per-path EWMA gain 1/4 */
#define MR_MRCC_DELAY_UNIT_NS 64u
/* Swift flow-based scaling (SIGCOMM'20 3.5): extra target for small windows, between
 * fs_min_cwnd and fs_max_cwnd packets, at most fs_range. */
#define MR_MRCC_FS_RANGE_NS 10000.0 /* 10 us: at 1 packet of cwnd, +2.9 us of queue */
#define MR_MRCC_EMPTY_Q_NS 1000u /* "no queue": within this of min RTT */
#define MR_MRCC_BOOST_DIV 2.0    /* increase per RTT without a queue: MTU / this */
#define MR_MRCC_FS_MIN_CWND 0.1
#define MR_MRCC_FS_MAX_CWND 100.0

struct mr_mrcc {
	double cwnd, alpha, srtt, min_rtt;
	double bdp, max_cwnd, min_cwnd, ai, line;
	double win_acked, win_ce;
	uint64_t base_rtt, target;
	uint64_t win_end, last_cut, decay_deadline, last_congested;
	bool have_rtt, have_cut, have_congested;
	/* Standing RTT (Copa): minimum over the current and the previous bucket of srtt/4. */
	double st_cur, st_prev;
	uint64_t st_start;
	bool have_st;
	uint64_t ecn_cuts, delay_cuts, loss_cuts, timeouts, bad_acks;
};

_Static_assert(sizeof(struct mr_mrcc) <= sizeof(((struct mr_cc *)0)->u),
	       "MetaRoCE CC state must fit in struct mr_cc.u");

static struct mr_mrcc *mc(struct mr_cc *cc)
{
	return (struct mr_mrcc *)(void *)cc->u;
}

static const struct mr_mrcc *mc_c(const struct mr_cc *cc)
{
	return (const struct mr_mrcc *)(const void *)cc->u;
}

/* Pacing spreads the window over one smoothed RTT (rate = cwnd / srtt), at most line rate. */
static void mr_mrcc_publish(struct mr_cc *cc, uint64_t now)
{
	struct mr_mrcc *m = mc(cc);
	double rate;

	if (m->cwnd > m->max_cwnd)
		m->cwnd = m->max_cwnd;
	if (m->cwnd < m->min_cwnd)
		m->cwnd = m->min_cwnd;
	/* Below one MTU the window is enforced by pacing alone (Swift's sub-packet cwnd): the gate
	 * stays at one packet so that a packet may leave whenever nothing is in flight. */
	cc->cwnd_bytes = (uint64_t)m->cwnd;
	if (cc->cwnd_bytes < (uint64_t)MR_MRCC_PACED_MTUS * cc->p.mtu)
		cc->cwnd_bytes = (uint64_t)MR_MRCC_PACED_MTUS * cc->p.mtu;
	rate = m->cwnd * 8e9 / m->srtt;
	if (rate > m->line)
		rate = m->line;
	if (rate < 1.0)
		rate = 1.0;
	mr_cc_set_rate(cc, now, (uint64_t)rate);
}

static void mr_mrcc_init(struct mr_cc *cc, uint64_t now)
{
	struct mr_mrcc *m = mc(cc);
	const struct mr_cc_params *p = &cc->p;
	uint64_t allow, mtu_ns;

	memset(m, 0, sizeof(*m));
	m->line = (double)p->line_rate_bps;
	m->base_rtt = p->base_rtt_ns ? p->base_rtt_ns : MR_MRCC_DEFAULT_BASE_RTT_NS;
	mtu_ns = mr_cc_tx_time_ns(p->mtu, p->line_rate_bps);
	allow = MR_MRCC_HOP_ALLOWANCE_NS * MR_MRCC_HOPS;
	if (allow < MR_MRCC_ALLOWANCE_MTUS * mtu_ns)
		allow = MR_MRCC_ALLOWANCE_MTUS * mtu_ns;
	m->target = p->target_delay_ns ? p->target_delay_ns : m->base_rtt + allow;
	if (m->target < m->base_rtt)
		m->target = m->base_rtt;
	m->bdp = m->line * (double)m->base_rtt / 8e9;
	m->max_cwnd = m->bdp * MR_MRCC_MAX_BDP_FACTOR;
	if (m->max_cwnd < (double)p->mtu)
		m->max_cwnd = (double)p->mtu;
	m->min_cwnd = MR_MRCC_MIN_CWND;
	m->ai = m->bdp / MR_MRCC_AI_DIV;
	if (m->ai < 256.0)
		m->ai = 256.0;
	m->cwnd = m->bdp > m->min_cwnd ? m->bdp : m->min_cwnd;
	m->alpha = 1.0; /* DCTCP starts pessimistic: the first marked window halves cwnd */
	m->srtt = (double)m->base_rtt;
	m->min_rtt = 0;
	m->win_end = now + m->base_rtt;
	m->decay_deadline = UINT64_MAX;
	mr_mrcc_publish(cc, now);
}

static uint16_t mr_mrcc_sat16(uint64_t v)
{
	return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

/* EWMA toward `sample` with gain 1/2^MR_MRCC_PATH_SHIFT, rounding up so a 1.0 sample can
 * reach the top and small values do not stick forever (decay rounds down). */
static uint16_t mr_mrcc_ewma16(uint16_t old, uint16_t sample)
{
	int32_t d = (int32_t)sample - (int32_t)old;
	int32_t step = d / (1 << MR_MRCC_PATH_SHIFT);

	if (step == 0 && d != 0)
		step = d > 0 ? 1 : -1;
	return (uint16_t)((int32_t)old + step);
}

static void mr_mrcc_path_update(struct mr_cc *cc, uint16_t path, uint16_t ce_q16, uint64_t rtt,
				bool have_rtt, uint64_t now)
{
	struct mr_mrcc *m = mc(cc);
	uint32_t pen = cc->path_penalty[path];
	uint16_t ce = (uint16_t)(pen >> 16), dly = (uint16_t)(pen & 0xffffu);

	ce = mr_mrcc_ewma16(ce, ce_q16);
	if (have_rtt) {
		uint64_t q = rtt > m->base_rtt ? rtt - m->base_rtt : 0;

		dly = mr_mrcc_ewma16(dly, mr_mrcc_sat16(q / MR_MRCC_DELAY_UNIT_NS));
	}
	cc->path_penalty[path] = ((uint32_t)ce << 16) | dly;
	if (cc->path_penalty[path] != 0 && m->decay_deadline == UINT64_MAX)
		m->decay_deadline = now + m->base_rtt;
}

/* Swift's target (SIGCOMM'20 3.1, 3.5): base delay + per-hop allowance + flow scaling. The
 * base stays the configured one: a measured minimum would give a flow that started behind a
 * standing queue a higher target than the others (the latecomer unfairness of delay-based CC).
 * An explicit target_delay_ns is used as given. */
static uint64_t mr_mrcc_target(const struct mr_cc *cc)
{
	const struct mr_mrcc *m = mc_c(cc);
	double t = (double)m->target, pk, fs;
	const double a = MR_MRCC_FS_RANGE_NS /
			 (1.0 / sqrt(MR_MRCC_FS_MIN_CWND) - 1.0 / sqrt(MR_MRCC_FS_MAX_CWND));
	const double b = -a / sqrt(MR_MRCC_FS_MAX_CWND);

	if (cc->p.target_delay_ns)
		return m->target;
	/* Swift 3.5: N flows sharing a bottleneck each hold ~BDP/N; a target that grows as
	 * 1/sqrt(cwnd) keeps the queue from draining when they cut together (incast) and lets
	 * small windows grow towards a fair share. */
	pk = m->cwnd / (double)cc->p.mtu;
	if (pk < MR_MRCC_FS_MIN_CWND)
		pk = MR_MRCC_FS_MIN_CWND;
	fs = a / sqrt(pk) + b;
	if (fs > MR_MRCC_FS_RANGE_NS)
		fs = MR_MRCC_FS_RANGE_NS;
	if (fs > 0)
		t += fs;
	return (uint64_t)t;
}

/* The delay signal is the standing RTT, the smallest sample of the last srtt/4..srtt/2 (Copa,
 * Arun and Balakrishnan, NSDI'18, 2.1: "RTTstanding", the minimum over srtt/2, so that ACK
 * compression and delayed ACKs are not read as queueing). A standing queue raises every sample
 * and so the minimum; software endpoints' scheduling noise (a poller asleep or descheduled:
 * the endpoint delay Swift keeps apart from fabric delay) raises some samples only. On a
 * fabric with one ACK per RTT it is the sample itself. */
static uint64_t mr_mrcc_standing(struct mr_mrcc *m, double s, uint64_t now)
{
	uint64_t bucket = (uint64_t)(m->srtt / 4.0);

	if (bucket > m->target / 4)
		bucket = m->target / 4; /* not stretched by the inflated srtt of a stall */
	double st;

	if (!m->have_st || now - m->st_start >= 2 * bucket) {
		m->st_prev = s; /* both buckets expired */
		m->st_cur = s;
		m->st_start = now;
		m->have_st = true;
	} else if (now - m->st_start >= bucket) {
		m->st_prev = m->st_cur;
		m->st_cur = s;
		m->st_start = now;
	} else if (s < m->st_cur) {
		m->st_cur = s;
	}
	st = m->st_cur < m->st_prev ? m->st_cur : m->st_prev;
	return (uint64_t)st;
}

/* Apply a multiplicative cut at most once per srtt (Swift: "at most once per RTT"). */
static bool mr_mrcc_cut(struct mr_mrcc *m, uint64_t now, double factor)
{
	if (m->have_cut && now - m->last_cut < (uint64_t)m->srtt)
		return false;
	m->cwnd *= factor;
	m->last_cut = now;
	m->have_cut = true;
	return true;
}

static void mr_mrcc_on_ack(struct mr_cc *cc, const struct mr_cc_ack *ack)
{
	struct mr_mrcc *m = mc(cc);
	uint64_t now = ack->now;
	uint32_t ce = ack->ce_pkts;
	double frac = 0, ecn_factor = 1.0, delay_factor = 1.0;
	bool have_rtt = ack->rtt_ns != 0;
	uint64_t target, sig = 0;

	if (ack->acked_pkts == 0 && ack->acked_bytes == 0 && !have_rtt)
		return;
	if (ce > ack->acked_pkts) { /* malformed echo: count it, trust at most "all marked" */
		m->bad_acks++;
		ce = ack->acked_pkts;
	}
	if (ack->acked_pkts)
		frac = (double)ce / (double)ack->acked_pkts;
	if (have_rtt) {
		double s = (double)ack->rtt_ns, se = s;

		/* The pacing RTT moves by at most 1/8 of srtt per sample: a host stall (software
		 * endpoints: tens to hundreds of ms, Swift's endpoint delay) would otherwise leave
		 * srtt, and with it the pacing rate cwnd/srtt, a thousand times off for hundreds of
		 * ACKs. A real queue raises every sample and still moves srtt geometrically. */
		if (m->have_rtt && se > 2.0 * m->srtt)
			se = 2.0 * m->srtt;
		m->srtt = m->have_rtt ? m->srtt + (se - m->srtt) / 8.0 : s;
		if (!m->have_rtt || s < m->min_rtt)
			m->min_rtt = s;
		m->have_rtt = true;
	}
	if (have_rtt)
		sig = mr_mrcc_standing(m, (double)ack->rtt_ns, now);
	if (ack->path < cc->p.n_paths)
		mr_mrcc_path_update(cc, ack->path, (uint16_t)(frac * 65535.0 + 0.5), ack->rtt_ns,
				    have_rtt, now);
	else
		m->bad_acks++;

	/* DCTCP: one alpha update per observation window of ~one RTT. */
	m->win_acked += ack->acked_bytes;
	m->win_ce += frac * ack->acked_bytes;
	if (now >= m->win_end) {
		if (m->win_acked > 0) {
			double f = m->win_ce / m->win_acked;

			m->alpha = (1.0 - MR_MRCC_DCTCP_G) * m->alpha + MR_MRCC_DCTCP_G * f;
			if (f > 0)
				ecn_factor = 1.0 - m->alpha / 2.0;
		}
		m->win_acked = 0;
		m->win_ce = 0;
		m->win_end = now + (uint64_t)m->srtt;
	}
	/* Swift: delay above target asks for a cut proportional to the excess. */
	target = mr_mrcc_target(cc);
	if (ce > 0 || (have_rtt && sig >= target)) {
		m->last_congested = now;
		m->have_congested = true;
	}
	if (have_rtt && sig >= target) {
		double ex = (double)(sig - target) / (double)sig;

		delay_factor = 1.0 - MR_MRCC_BETA * ex;
		if (delay_factor < 1.0 - MR_MRCC_MAX_MDF)
			delay_factor = 1.0 - MR_MRCC_MAX_MDF;
	}
	if (ecn_factor < 1.0 || delay_factor < 1.0) {
		/* A sample from a packet sent before the last cut shows the queue that cut is
		 * already draining: cutting again on it over-reacts and, with many flows cutting
		 * together, empties the bottleneck (DCTCP and TCP cut once per window of data
		 * sent after the previous cut, RFC 3168 6.1.2; Swift's once-per-RTT rule, by send
		 * time). The queue a synchronised cut leaves drains only at the cut fraction of
		 * the line rate, about one more RTT: a packet sent right after the cut still
		 * queues behind the other flows' pre-cut packets. So the sample must have been
		 * sent at least one srtt after the cut (32:1 incast: 0.90 -> 0.92 of the
		 * bottleneck with beta 0.5). */
		if ((!have_rtt || !m->have_cut ||
		     (ack->rtt_ns <= now &&
		      now - ack->rtt_ns >= m->last_cut + (uint64_t)m->srtt)) &&
		    mr_mrcc_cut(m, now, ecn_factor < delay_factor ? ecn_factor : delay_factor)) {
			if (ecn_factor < delay_factor)
				m->ecn_cuts++;
			else
				m->delay_cuts++;
		}
	} else if (ce == 0 && (!have_rtt || sig < target)) {
		/* Additive increase: ai bytes per RTT worth of acknowledgements. */
		m->cwnd += m->ai * (double)ack->acked_bytes / m->cwnd;
		/* A sample within MR_MRCC_EMPTY_Q_NS of the minimum RTT means no standing
		 * queue on the path: the bottleneck is underused (a competitor finished, or
		 * everyone cut together), so the increase is faster, as HPCC (SIGCOMM'19 3.3)
		 * and TIMELY's HAI (SIGCOMM'15) do below their targets. It stays additive
		 * (MTU/BOOST_DIV per RTT): a multiplicative one starves late flows (measured
		 * in tests/cc cc_model: Jain 0.39 at N=8). */
		if (have_rtt && m->have_rtt && (double)sig < m->min_rtt + (double)MR_MRCC_EMPTY_Q_NS)
			m->cwnd += (double)cc->p.mtu / MR_MRCC_BOOST_DIV *
				   (double)ack->acked_bytes / m->cwnd;
	}
	mr_mrcc_publish(cc, now);
}

static void mr_mrcc_on_send(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path)
{
	(void)cc, (void)now, (void)bytes, (void)path;
}

static void mr_mrcc_on_cnp(struct mr_cc *cc, uint64_t now)
{
	/* A CNP (plain RoCE peer path) is an ECN signal for the whole window. */
	struct mr_mrcc *m = mc(cc);

	if (mr_mrcc_cut(m, now, 1.0 - m->alpha / 2.0))
		m->ecn_cuts++;
	mr_mrcc_publish(cc, now);
}

static void mr_mrcc_on_loss(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path)
{
	struct mr_mrcc *m = mc(cc);

	(void)bytes;
	/* A lost packet marks its path as if every packet on it had been CE-marked. */
	if (path < cc->p.n_paths)
		mr_mrcc_path_update(cc, path, UINT16_MAX, 0, false, now);
	/* Loss alone is not congestion on a lossy fabric: IRN (SIGCOMM'18) and SRD recover
	 * selectively without cutting, and only ECN and delay drive the window. A loss clustered
	 * with congestion (CE or delay above target within the last srtt: a tail drop) takes
	 * the Swift loss cut (SIGCOMM'20 3.1: max_mdf), sharing the once-per-RTT cut clock. */
	if (m->have_congested && now - m->last_congested <= (uint64_t)m->srtt &&
	    mr_mrcc_cut(m, now, 1.0 - MR_MRCC_MAX_MDF))
		m->loss_cuts++;
	mr_mrcc_publish(cc, now);
}

static void mr_mrcc_on_timeout(struct mr_cc *cc, uint64_t now)
{
	struct mr_mrcc *m = mc(cc);

	m->cwnd *= 0.5;
	m->last_cut = now;
	m->have_cut = true;
	m->timeouts++;
	mr_mrcc_publish(cc, now);
}

static uint64_t mr_mrcc_next_timer(const struct mr_cc *cc)
{
	return mc_c(cc)->decay_deadline;
}

static void mr_mrcc_on_timer(struct mr_cc *cc, uint64_t now)
{
	struct mr_mrcc *m = mc(cc);
	bool any = false;
	uint16_t i;

	if (now < m->decay_deadline)
		return;
	for (i = 0; i < cc->p.n_paths; i++) {
		uint32_t pen = cc->path_penalty[i];
		uint32_t ce = pen >> 16, dly = pen & 0xffffu;

		ce -= (ce + 7) / 8;
		dly -= (dly + 7) / 8;
		cc->path_penalty[i] = (ce << 16) | dly;
		any |= cc->path_penalty[i] != 0;
	}
	m->decay_deadline = any ? now + m->base_rtt : UINT64_MAX;
}

const struct mr_cc_ops mr_cc_metaroce_ops = {
	.name = "metaroce",
	.init = mr_mrcc_init,
	.on_send = mr_mrcc_on_send,
	.on_ack = mr_mrcc_on_ack,
	.on_cnp = mr_mrcc_on_cnp,
	.on_loss = mr_mrcc_on_loss,
	.on_timeout = mr_mrcc_on_timeout,
	.next_timer = mr_mrcc_next_timer,
	.on_timer = mr_mrcc_on_timer,
};
