/* SPDX-License-Identifier: MIT
 * DCQCN reaction point (sender): Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM'15, section 3.1 ("RP algorithm") and its Figure/equations (1)-(3).
 *
 *   on CNP:          Rt = Rc;  Rc = Rc * (1 - alpha/2);  alpha = (1 - g) * alpha + g      (1)
 *                    then reset the rate timer, the byte counter and both stage counters.
 *   alpha timer K:   no CNP for K -> alpha = (1 - g) * alpha                                (2)
 *   rate increase:   an event every T (timer) and every B bytes sent (byte counter); with
 *                    T_n, BC_n the events of each kind since the last CNP:
 *                      max(T_n, BC_n) <= F  fast recovery:     Rc = (Rt + Rc) / 2
 *                      min(T_n, BC_n) >  F  hyper increase:    Rt += i * Rhai, i = min - F;
 *                                                              Rc = (Rt + Rc) / 2
 *                      otherwise            additive increase: Rt += Rai; Rc = (Rt + Rc) / 2 (3)
 *   Rc, Rt clamped to [min rate, line rate].
 *
 * Defaults (a zero knob in struct mr_cc_params selects them):
 *   g = 1/256 (g_shift 8), K = 55 us, T = 55 us, B = 10 MB, F = 5       DCQCN paper, section 3/5
 *   Rai = 40 Mb/s                                                        DCQCN paper (40 GbE)
 *   Rhai = 10 * Rai = 400 Mb/s  ConnectX ratio (mlx5 rpg_hai_rate/rpg_ai_rate = 50/5 Mb/s)
 *   min rate = 1 Mb/s                                                    ConnectX rpg_min_rate
 *   alpha starts at 1 (paper; ConnectX initial_alpha_value 1023/1024): the first CNP halves Rc.
 * Rates are kept as doubles so that the equations above hold exactly as written.
 */
#include <string.h>

#include "cc/cc.h"
#include "cc/cc_algo.h"

#define MR_DCQCN_G_SHIFT 8u
#define MR_DCQCN_K_NS 55000ull
#define MR_DCQCN_T_NS 55000ull
#define MR_DCQCN_B_BYTES (10u * 1000u * 1000u)
#define MR_DCQCN_F 5u
#define MR_DCQCN_RAI_BPS 40000000ull
#define MR_DCQCN_HAI_FACTOR 10u
#define MR_DCQCN_MIN_RATE_BPS 1000000ull
/* A caller that comes back after a long idle gets at most this many timer events replayed. */
#define MR_DCQCN_MAX_CATCHUP 256u

struct mr_dcqcn {
	double rc, rt, alpha, g;
	double line, min_rate, rai, rhai;
	uint64_t k_ns, t_ns, b_bytes;
	uint64_t alpha_deadline, rate_deadline; /* UINT64_MAX = not armed */
	uint64_t bytes_since;                   /* byte counter progress */
	uint32_t t_stage, bc_stage;             /* T_n, BC_n */
	uint64_t cnps;
};

_Static_assert(sizeof(struct mr_dcqcn) <= sizeof(((struct mr_cc *)0)->u),
	       "DCQCN state must fit in struct mr_cc.u");

static struct mr_dcqcn *dq(struct mr_cc *cc)
{
	return (struct mr_dcqcn *)(void *)cc->u;
}

static const struct mr_dcqcn *dq_c(const struct mr_cc *cc)
{
	return (const struct mr_dcqcn *)(const void *)cc->u;
}

static double mr_dcqcn_clamp(const struct mr_dcqcn *d, double r)
{
	if (r > d->line)
		return d->line;
	if (r < d->min_rate)
		return d->min_rate;
	return r;
}

static void mr_dcqcn_publish(struct mr_cc *cc, uint64_t now)
{
	mr_cc_set_rate(cc, now, (uint64_t)dq(cc)->rc);
}

static void mr_dcqcn_init(struct mr_cc *cc, uint64_t now)
{
	struct mr_dcqcn *d = dq(cc);
	const struct mr_cc_params *p = &cc->p;
	uint32_t shift = p->dcqcn_g_shift ? p->dcqcn_g_shift : MR_DCQCN_G_SHIFT;

	(void)now;
	memset(d, 0, sizeof(*d));
	d->line = (double)p->line_rate_bps;
	d->min_rate = (double)MR_DCQCN_MIN_RATE_BPS;
	if (d->min_rate > d->line)
		d->min_rate = d->line;
	d->g = 1.0 / (double)(1ull << shift);
	d->rai = (double)(p->dcqcn_rai_bps ? p->dcqcn_rai_bps : MR_DCQCN_RAI_BPS);
	d->rhai = p->dcqcn_rhai_bps ? (double)p->dcqcn_rhai_bps : d->rai * MR_DCQCN_HAI_FACTOR;
	d->k_ns = p->dcqcn_alpha_timer_ns ? p->dcqcn_alpha_timer_ns : MR_DCQCN_K_NS;
	d->t_ns = p->dcqcn_rate_timer_ns ? p->dcqcn_rate_timer_ns : MR_DCQCN_T_NS;
	d->b_bytes = p->dcqcn_byte_counter ? p->dcqcn_byte_counter : MR_DCQCN_B_BYTES;
	/* Start at line rate (RoCE has no slow start); alpha = 1 until congestion says otherwise. */
	d->rc = d->line;
	d->rt = d->line;
	d->alpha = 1.0;
	d->alpha_deadline = UINT64_MAX;
	d->rate_deadline = UINT64_MAX;
	cc->cwnd_bytes = UINT64_MAX;
	cc->rate_bps = (uint64_t)d->rc;
}

/* One rate-increase event, equation (3). Stops the increase machinery once back at line rate. */
static void mr_dcqcn_increase(struct mr_dcqcn *d)
{
	uint32_t hi = d->t_stage > d->bc_stage ? d->t_stage : d->bc_stage;
	uint32_t lo = d->t_stage < d->bc_stage ? d->t_stage : d->bc_stage;

	if (hi <= MR_DCQCN_F) {
		/* fast recovery: Rt unchanged */
	} else if (lo > MR_DCQCN_F) {
		d->rt = mr_dcqcn_clamp(d, d->rt + (double)(lo - MR_DCQCN_F) * d->rhai);
	} else {
		d->rt = mr_dcqcn_clamp(d, d->rt + d->rai);
	}
	d->rc = mr_dcqcn_clamp(d, (d->rt + d->rc) / 2.0);
	if (d->rc >= d->line && d->rt >= d->line) {
		d->rc = d->line;
		d->rate_deadline = UINT64_MAX;
	}
}

static void mr_dcqcn_on_cnp(struct mr_cc *cc, uint64_t now)
{
	struct mr_dcqcn *d = dq(cc);

	/* Equation (1): the cut uses alpha before this CNP's update. */
	d->rt = d->rc;
	d->rc = mr_dcqcn_clamp(d, d->rc * (1.0 - d->alpha / 2.0));
	d->alpha = (1.0 - d->g) * d->alpha + d->g;
	d->t_stage = 0;
	d->bc_stage = 0;
	d->bytes_since = 0;
	d->alpha_deadline = now + d->k_ns;
	d->rate_deadline = now + d->t_ns;
	d->cnps++;
	mr_dcqcn_publish(cc, now);
}

static void mr_dcqcn_on_send(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path)
{
	struct mr_dcqcn *d = dq(cc);

	(void)now, (void)path;
	if (d->rate_deadline == UINT64_MAX)
		return; /* not recovering: the byte counter only runs after a cut */
	d->bytes_since += bytes;
	while (d->bytes_since >= d->b_bytes && d->rate_deadline != UINT64_MAX) {
		d->bytes_since -= d->b_bytes;
		d->bc_stage++;
		mr_dcqcn_increase(d);
	}
	mr_dcqcn_publish(cc, now);
}

static uint64_t mr_dcqcn_next_timer(const struct mr_cc *cc)
{
	const struct mr_dcqcn *d = dq_c(cc);

	return d->alpha_deadline < d->rate_deadline ? d->alpha_deadline : d->rate_deadline;
}

static void mr_dcqcn_on_timer(struct mr_cc *cc, uint64_t now)
{
	struct mr_dcqcn *d = dq(cc);
	unsigned n;

	/* Equation (2): alpha decays once per K without a CNP. Once negligible, the timer stops. */
	for (n = 0; d->alpha_deadline <= now && n < MR_DCQCN_MAX_CATCHUP; n++) {
		d->alpha *= 1.0 - d->g;
		d->alpha_deadline += d->k_ns;
		if (d->alpha < 1e-6)
			d->alpha_deadline = UINT64_MAX;
	}
	if (d->alpha_deadline <= now)
		d->alpha_deadline = now + d->k_ns;
	for (n = 0; d->rate_deadline <= now && n < MR_DCQCN_MAX_CATCHUP; n++) {
		d->t_stage++;
		d->rate_deadline += d->t_ns;
		mr_dcqcn_increase(d);
	}
	if (d->rate_deadline <= now)
		d->rate_deadline = now + d->t_ns;
	mr_dcqcn_publish(cc, now);
}

/* DCQCN reacts to CNPs only; RC loss recovery (go-back-N) is the transport's business. */
static void mr_dcqcn_on_ack(struct mr_cc *cc, const struct mr_cc_ack *ack)
{
	(void)cc, (void)ack;
}

static void mr_dcqcn_on_loss(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path)
{
	(void)cc, (void)now, (void)bytes, (void)path;
}

static void mr_dcqcn_on_timeout(struct mr_cc *cc, uint64_t now)
{
	(void)cc, (void)now;
}

const struct mr_cc_ops mr_cc_dcqcn_ops = {
	.name = "dcqcn",
	.init = mr_dcqcn_init,
	.on_send = mr_dcqcn_on_send,
	.on_ack = mr_dcqcn_on_ack,
	.on_cnp = mr_dcqcn_on_cnp,
	.on_loss = mr_dcqcn_on_loss,
	.on_timeout = mr_dcqcn_on_timeout,
	.next_timer = mr_dcqcn_next_timer,
	.on_timer = mr_dcqcn_on_timer,
};
