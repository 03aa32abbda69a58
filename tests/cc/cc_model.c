/* SPDX-License-Identifier: MIT
 * Bottleneck model for tests/cc (see cc_model.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cc_model.h"

#define QCAP (1u << 17)
#define MAX_BURST 64

struct mpkt {
	uint64_t enq_ns, sent_ns;
	uint16_t flow;
	bool ce;
};

struct mev {
	uint64_t at_ns, sent_ns;
	uint16_t flow;
	bool ce;
};

struct mring_p {
	struct mpkt *v;
	uint32_t head, tail;
};

struct mring_e {
	struct mev *v;
	uint32_t head, tail;
};

struct model {
	const struct mr_model_cfg *cfg;
	struct mr_cc cc[MR_MODEL_MAX_FLOWS];
	struct mr_dcqcn_np np[MR_MODEL_MAX_FLOWS];
	uint64_t inflight[MR_MODEL_MAX_FLOWS];
	double delivered[MR_MODEL_MAX_FLOWS];
	struct mring_p q;
	struct mring_e acks, cnps;
	uint64_t qbytes, link_free_ps, ser_ps;
	uint64_t nic_free_ps[MR_MODEL_MAX_FLOWS];
};

static int model_alloc(struct model *m)
{
	m->q.v = calloc(QCAP, sizeof(*m->q.v));
	m->acks.v = calloc(QCAP, sizeof(*m->acks.v));
	m->cnps.v = calloc(QCAP, sizeof(*m->cnps.v));
	return m->q.v && m->acks.v && m->cnps.v ? 0 : -ENOMEM;
}

static void model_free(struct model *m)
{
	free(m->q.v);
	free(m->acks.v);
	free(m->cnps.v);
}

static bool ev_push(struct mring_e *r, const struct mev *e)
{
	if (r->tail - r->head >= QCAP)
		return false;
	r->v[r->tail++ % QCAP] = *e;
	return true;
}

static void deliver_events(struct model *m, uint64_t now, struct mr_model_result *res)
{
	while (m->acks.head != m->acks.tail && m->acks.v[m->acks.head % QCAP].at_ns <= now) {
		struct mev e = m->acks.v[m->acks.head++ % QCAP];
		struct mr_cc_ack a;

		m->inflight[e.flow] -= m->cfg->mtu;
		memset(&a, 0, sizeof(a));
		a.now = e.at_ns;
		a.acked_bytes = m->cfg->mtu;
		a.acked_pkts = 1;
		a.ce_pkts = e.ce;
		a.rtt_ns = e.at_ns - e.sent_ns;
		a.inflight_bytes = m->inflight[e.flow];
		m->cc[e.flow].ops->on_ack(&m->cc[e.flow], &a);
	}
	while (m->cnps.head != m->cnps.tail && m->cnps.v[m->cnps.head % QCAP].at_ns <= now) {
		struct mev e = m->cnps.v[m->cnps.head++ % QCAP];

		m->cc[e.flow].ops->on_cnp(&m->cc[e.flow], e.at_ns);
		res->cnps++;
	}
}

/* The bottleneck: serve packets back to back; a packet is delivered when its last bit is out. */
static int serve(struct model *m, uint64_t now, bool measuring, struct mr_model_result *res)
{
	const struct mr_model_cfg *c = m->cfg;

	while (m->q.head != m->q.tail) {
		struct mpkt *p = &m->q.v[m->q.head % QCAP];
		uint64_t enq_ps = p->enq_ns * 1000;
		uint64_t start = m->link_free_ps > enq_ps ? m->link_free_ps : enq_ps;
		uint64_t done_ns;
		struct mev e;

		if (start > now * 1000)
			break;
		m->link_free_ps = start + m->ser_ps;
		done_ns = (m->link_free_ps + 999) / 1000;
		m->qbytes -= c->mtu;
		/* ECN on dequeue (egress): the packet carries the queue it leaves behind */
		p->ce = m->qbytes > c->ecn_k_bytes;
		res->marks += p->ce;
		if (measuring)
			m->delivered[p->flow] += c->mtu;
		e.flow = p->flow;
		e.sent_ns = p->sent_ns;
		e.ce = p->ce;
		e.at_ns = done_ns + c->base_rtt_ns;
		if (!ev_push(&m->acks, &e))
			return -ENOSPC;
		if (p->ce && c->algo == MR_CC_DCQCN && mr_dcqcn_np_on_ce(&m->np[p->flow], done_ns)) {
			e.at_ns = done_ns + c->base_rtt_ns / 2;
			if (!ev_push(&m->cnps, &e))
				return -ENOSPC;
		}
		m->q.head++;
	}
	return 0;
}

int mr_model_run(const struct mr_model_cfg *c, struct mr_model_result *res)
{
	struct model *m;
	struct mr_cc_params p;
	uint64_t now, samples = 0;
	double qsum = 0, sum = 0, sum2 = 0, meas_s;
	unsigned i, rr = 0;
	int rc = 0;

	if (!c || !res || c->n_flows == 0 || c->n_flows > MR_MODEL_MAX_FLOWS || c->dt_ns == 0 ||
	    c->warmup_ns >= c->duration_ns)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	memset(res, 0, sizeof(*res));
	res->q_min_bytes = 1e300;
	m->cfg = c;
	rc = model_alloc(m);
	memset(&p, 0, sizeof(p));
	p.line_rate_bps = c->line_bps;
	p.base_rtt_ns = c->base_rtt_ns;
	p.mtu = c->mtu;
	p.n_paths = 1;
	for (i = 0; i < c->n_flows && rc == 0; i++) {
		rc = mr_cc_init(&m->cc[i], c->algo, &p, i * c->stagger_ns);
		mr_dcqcn_np_init(&m->np[i], 0);
	}
	m->ser_ps = (uint64_t)c->mtu * 8 * 1000000000000ull / c->line_bps;
	for (now = 0; rc == 0 && now < c->duration_ns; now += c->dt_ns) {
		bool measuring = now >= c->warmup_ns;

		deliver_events(m, now, res);
		for (i = 0; i < c->n_flows; i++) {
			struct mr_cc *cc = &m->cc[i];
			uint64_t t;

			while ((t = cc->ops->next_timer(cc)) <= now)
				cc->ops->on_timer(cc, t);
		}
		/* senders in rotating order so no flow is always first into the queue */
		for (unsigned k = 0; k < c->n_flows; k++) {
			unsigned f = (k + rr) % c->n_flows;
			struct mr_cc *cc = &m->cc[f];

			/* the sender's own NIC serialises at line rate too */
			if (now < f * c->stagger_ns)
				continue;
			for (int b = 0; b < MAX_BURST && m->nic_free_ps[f] <= now * 1000 &&
					mr_cc_can_send(cc, now, m->inflight[f]); b++) {
				struct mpkt *pk;

				if (m->q.tail - m->q.head >= QCAP) {
					rc = -ENOSPC;
					break;
				}
				pk = &m->q.v[m->q.tail++ % QCAP];
				pk->enq_ns = now;
				pk->sent_ns = now;
				pk->flow = (uint16_t)f;
				pk->ce = false;
				m->nic_free_ps[f] = (m->nic_free_ps[f] > now * 1000 ? m->nic_free_ps[f] : now * 1000) + m->ser_ps;
				res->pkts++;
				m->qbytes += c->mtu;
				m->inflight[f] += c->mtu;
				mr_cc_sent(cc, now, c->mtu, 0);
			}
		}
		rr++;
		if (rc == 0)
			rc = serve(m, now, measuring, res);
		if (measuring) {
			qsum += (double)m->qbytes;
			samples++;
			if ((double)m->qbytes > res->q_max_bytes)
				res->q_max_bytes = (double)m->qbytes;
			if ((double)m->qbytes < res->q_min_bytes)
				res->q_min_bytes = (double)m->qbytes;
		}
	}
	if (rc == 0) {
		meas_s = (double)(c->duration_ns - c->warmup_ns) / 1e9;
		res->thr_min_gbps = 1e300;
		for (i = 0; i < c->n_flows; i++) {
			double g = m->delivered[i] * 8 / meas_s / 1e9;

			sum += g;
			sum2 += g * g;
			if (g < res->thr_min_gbps)
				res->thr_min_gbps = g;
			if (g > res->thr_max_gbps)
				res->thr_max_gbps = g;
		}
		res->jain = sum2 > 0 ? sum * sum / (c->n_flows * sum2) : 0;
		res->util = sum * 1e9 / (double)c->line_bps;
		res->q_avg_bytes = samples ? qsum / (double)samples : 0;
	}
	model_free(m);
	free(m);
	return rc;
}
