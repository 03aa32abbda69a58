/* SPDX-License-Identifier: MIT
 * The multipath fabric (see sim_fabric.h) and its event loop: like sim_run.c, time jumps to the
 * earliest frame arrival, transport timer, or end of a paced host's transmitter busy period. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "impair/impair.h"
#include "sim/sim_fabric.h"
#include "sim/sim_rng.h"

enum hop_kind { HOP_UP, HOP_PATH, HOP_DOWN };

struct hop {
	struct mr_sim_link *link;
	enum hop_kind kind;
	unsigned int host;        /* UP: source host; PATH/DOWN: destination host */
	uint64_t ecn_k;
	uint64_t rate_bps;
	uint64_t ce_marks;
	uint64_t tx_bytes;        /* accepted by the transmitter (not tail-dropped) */
};

struct mr_sim_fabric {
	struct mr_sim_fabric_cfg cfg;
	uint64_t now, t_create;
	struct mr_sim_node *host[MR_SIM_FABRIC_MAX_HOSTS];
	bool tx_more[MR_SIM_FABRIC_MAX_HOSTS];
	/* hops: [0, H) uplinks, [H, 2H) downlinks, then H * N paths (dst-major) */
	struct hop *hops;
	unsigned int nhops;
	struct mr_sim_fabric_stats st;
	uint64_t wake[16];
	unsigned int nwake;
	uint8_t frame[MR_SIM_FRAME_MAX];
};

void mr_sim_fabric_cfg_init(struct mr_sim_fabric_cfg *cfg)
{
	struct mr_sim_fabric_path_cfg p;

	memset(cfg, 0, sizeof(*cfg));
	cfg->n_hosts = 2;
	cfg->n_paths = 1;
	cfg->host_rate_bps = 100000000000ull;
	/* One way: 1 us host->switch + 3 us across + 1 us switch->host = 5 us: a ~10 us RTT. */
	cfg->host_latency_ns = 1000;
	cfg->down_queue_bytes = 1 << 20;
	cfg->ecmp_seed = 0x5eed;
	cfg->seed = 1;
	memset(&p, 0, sizeof(p));
	mr_sim_link_cfg_init(&p.link);
	p.link.rate_bps = 100000000000ull;
	p.link.latency_ns = 3000;
	p.link.queue_bytes = 1 << 20;
	mr_sim_fabric_cfg_all_paths(cfg, &p);
	cfg->ctx.max_qp = 64;
	cfg->ctx.first_qpn = 0x10;
	cfg->ctx.max_mr = 64;
}

void mr_sim_fabric_cfg_all_paths(struct mr_sim_fabric_cfg *cfg,
				 const struct mr_sim_fabric_path_cfg *p)
{
	for (unsigned int i = 0; i < MR_SIM_FABRIC_MAX_PATHS; i++)
		cfg->path[i] = *p;
}

static uint64_t mix(uint64_t x)
{
	return mr_sim_splitmix64(&x);
}

static void host_addr(unsigned int i, uint8_t mac[6], uint8_t ip[4])
{
	unsigned int id = i + 1;

	memcpy(mac, (uint8_t[6]){ 0x02, 0, 0, 0, (uint8_t)(id >> 8), (uint8_t)id }, 6);
	memcpy(ip, (uint8_t[4]){ 10, 0, (uint8_t)(id >> 8), (uint8_t)id }, 4);
}

static int add_hop(struct mr_sim_fabric *f, enum hop_kind kind, unsigned int host,
		   const struct mr_sim_link_cfg *lc, uint64_t ecn_k)
{
	struct hop *h = &f->hops[f->nhops];

	h->link = mr_sim_link_create(lc);
	if (h->link == NULL)
		return -errno;
	h->kind = kind;
	h->host = host;
	h->ecn_k = ecn_k;
	h->rate_bps = lc->rate_bps;
	f->nhops++;
	return 0;
}

static int build(struct mr_sim_fabric *f)
{
	const struct mr_sim_fabric_cfg *c = &f->cfg;
	struct mr_sim_link_cfg lc;
	unsigned int H = c->n_hosts, N = c->n_paths;
	int rc;

	f->hops = calloc(2 * H + H * N, sizeof(*f->hops));
	if (f->hops == NULL)
		return -ENOMEM;
	mr_sim_link_cfg_init(&lc);
	lc.rate_bps = c->host_rate_bps;
	lc.latency_ns = c->host_latency_ns;
	for (unsigned int i = 0; i < H; i++) {
		/* Uplink: the host paces itself to it, so no queue limit is needed. */
		lc.queue_bytes = 0;
		lc.seed = mix(c->seed ^ (0x100000ull + i));
		rc = add_hop(f, HOP_UP, i, &lc, 0);
		if (rc < 0)
			return rc;
		mr_sim_node_set_out_link(f->host[i], f->hops[i].link);
	}
	for (unsigned int i = 0; i < H; i++) {
		lc.queue_bytes = c->down_queue_bytes;
		lc.seed = mix(c->seed ^ (0x200000ull + i));
		rc = add_hop(f, HOP_DOWN, i, &lc, c->down_ecn_k_bytes);
		if (rc < 0)
			return rc;
	}
	for (unsigned int d = 0; d < H; d++)
		for (unsigned int p = 0; p < N; p++) {
			struct mr_sim_link_cfg pl = c->path[p].link;

			/* Distinct but reproducible loss streams per (destination, path). */
			pl.seed = mix(c->seed ^ pl.seed ^ (0x300000ull + d * 4096ull + p));
			rc = add_hop(f, HOP_PATH, d, &pl, c->path[p].ecn_k_bytes);
			if (rc < 0)
				return rc;
		}
	return 0;
}

struct mr_sim_fabric *mr_sim_fabric_create(const struct mr_sim_fabric_cfg *cfg)
{
	struct mr_sim_fabric *f;
	int rc;

	if (cfg == NULL || cfg->n_hosts < 2 || cfg->n_hosts > MR_SIM_FABRIC_MAX_HOSTS ||
	    cfg->n_paths < 1 || cfg->n_paths > MR_SIM_FABRIC_MAX_PATHS) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	f->cfg = *cfg;
	f->now = f->t_create = 1000000; /* as MR_SIM_T0: never 0 */
	for (unsigned int i = 0; i < cfg->n_hosts; i++) {
		struct mr_sim_node_cfg nc;
		char name[16];

		memset(&nc, 0, sizeof(nc));
		snprintf(name, sizeof(name), "h%u", i);
		nc.name = name;
		host_addr(i, nc.mac, nc.ipv4);
		nc.ctx = cfg->ctx;
		nc.ctx.seed = mix(cfg->seed ^ (0x400000ull + i));
		f->host[i] = mr_sim_node_create(&nc);
		if (f->host[i] == NULL) {
			rc = errno ? -errno : -ENOMEM;
			goto fail;
		}
	}
	rc = build(f);
	if (rc < 0)
		goto fail;
	return f;
fail:
	mr_sim_fabric_destroy(f);
	errno = -rc;
	return NULL;
}

void mr_sim_fabric_destroy(struct mr_sim_fabric *f)
{
	if (f == NULL)
		return;
	for (unsigned int i = 0; i < f->nhops; i++)
		mr_sim_link_destroy(f->hops[i].link);
	free(f->hops);
	for (unsigned int i = 0; i < f->cfg.n_hosts; i++)
		mr_sim_node_destroy(f->host[i]);
	free(f);
}

unsigned int mr_sim_fabric_n_hosts(const struct mr_sim_fabric *f)
{
	return f->cfg.n_hosts;
}

struct mr_sim_node *mr_sim_fabric_host(const struct mr_sim_fabric *f, unsigned int i)
{
	return i < f->cfg.n_hosts ? f->host[i] : NULL;
}

uint64_t mr_sim_fabric_now(const struct mr_sim_fabric *f)
{
	return f->now;
}

int mr_sim_fabric_wake_at(struct mr_sim_fabric *f, uint64_t t)
{
	if (f->nwake == sizeof(f->wake) / sizeof(f->wake[0]))
		return -ENOSPC;
	f->wake[f->nwake++] = t;
	return 0;
}

void mr_sim_fabric_get_stats(const struct mr_sim_fabric *f, struct mr_sim_fabric_stats *st)
{
	*st = f->st;
}

/* ECMP over the 5-tuple (src IP, dst IP, proto UDP, source port, dst port 4791): a seeded
 * 64-bit mix stands in for a switch's CRC/Toeplitz hash. */
static unsigned int ecmp(const struct mr_sim_fabric *f, uint32_t sip, uint32_t dip,
			 uint16_t sport)
{
	uint64_t k = f->cfg.ecmp_seed;

	k = mix(k ^ ((uint64_t)sip << 32 | dip));
	k = mix(k ^ ((uint64_t)sport << 16 | 4791u) ^ (17ull << 40));
	return (unsigned int)(k % f->cfg.n_paths);
}

static uint32_t ip_of(unsigned int i)
{
	uint8_t mac[6], ip[4];

	host_addr(i, mac, ip);
	return (uint32_t)ip[0] << 24 | (uint32_t)ip[1] << 16 | (uint32_t)ip[2] << 8 | ip[3];
}

unsigned int mr_sim_fabric_ecmp(const struct mr_sim_fabric *f, unsigned int src,
				unsigned int dst, uint16_t sport)
{
	return ecmp(f, ip_of(src), ip_of(dst), sport);
}

static struct hop *path_hop(struct mr_sim_fabric *f, unsigned int dst, unsigned int p)
{
	return &f->hops[2 * f->cfg.n_hosts + dst * f->cfg.n_paths + p];
}

/* Enqueue on a switch egress queue: CE-mark an ECT frame if the backlog already exceeds K
 * (RFC 3168 5; DCTCP's instantaneous threshold), then let the link tail-drop or lose it. */
static void enqueue(struct mr_sim_fabric *f, struct hop *h, uint8_t *frame, uint32_t len)
{
	if (h->ecn_k != 0 && mr_sim_link_backlog(h->link, f->now) > h->ecn_k &&
	    mr_impair_ecn_mark_ce(frame, len) == 1)
		h->ce_marks++;
	/* the drop reasons are in the link's stats */
	if (mr_sim_link_send(h->link, f->now, frame, len) != MR_SIM_FATE_DROP_QUEUE)
		h->tx_bytes += len;
}

/* The switch: route by destination IPv4 (hosts are 10.0.x.y, index x*256+y-1). */
static void forward_up(struct mr_sim_fabric *f, uint8_t *frame, uint32_t len)
{
	bool v6;
	int l3 = mr_impair_l3_offset(frame, len, &v6);
	int sport = mr_impair_udp_sport(frame, len);
	uint32_t sip, dip, idx;

	if (l3 < 0 || v6 || sport < 0) {
		f->st.unroutable++;
		return;
	}
	sip = (uint32_t)frame[l3 + 12] << 24 | (uint32_t)frame[l3 + 13] << 16 |
	      (uint32_t)frame[l3 + 14] << 8 | frame[l3 + 15];
	dip = (uint32_t)frame[l3 + 16] << 24 | (uint32_t)frame[l3 + 17] << 16 |
	      (uint32_t)frame[l3 + 18] << 8 | frame[l3 + 19];
	idx = (dip & 0xffff) - 1;
	if ((dip >> 16) != 0x0a00 || (dip & 0xffff) == 0 || idx >= f->cfg.n_hosts) {
		f->st.unroutable++;
		return;
	}
	f->st.forwarded++;
	enqueue(f, path_hop(f, idx, ecmp(f, sip, dip, (uint16_t)sport)), frame, len);
}

static void step(struct mr_sim_fabric *f)
{
	unsigned int H = f->cfg.n_hosts;

	for (unsigned int i = 0; i < H; i++) {
		struct mr_ctx *ctx = mr_sim_node_ctx(f->host[i]);

		if (mr_ctx_next_expiry(ctx) <= f->now) {
			mr_ctx_on_timer(ctx, f->now);
			f->tx_more[i] = true;
		}
	}
	for (unsigned int k = 0; k < f->nhops; k++) {
		struct hop *h = &f->hops[k];
		int len;

		if (mr_sim_link_next_arrival(h->link) > f->now)
			continue;
		while ((len = mr_sim_link_recv(h->link, f->now, f->frame, sizeof(f->frame))) > 0) {
			switch (h->kind) {
			case HOP_UP:
				forward_up(f, f->frame, (uint32_t)len);
				break;
			case HOP_PATH:
				enqueue(f, &f->hops[H + h->host], f->frame, (uint32_t)len);
				break;
			case HOP_DOWN:
				mr_sim_node_rx(f->host[h->host], f->now, f->frame, (uint32_t)len);
				f->tx_more[h->host] = true;
				break;
			}
		}
		if (len < 0) /* larger than any frame a node builds: drop it */
			abort();
	}
	for (unsigned int i = 0; i < H; i++) {
		bool more;

		if (!f->tx_more[i])
			continue;
		mr_sim_node_tx(f->host[i], f->now, 64, &more);
		f->tx_more[i] = more;
	}
}

static uint64_t next_event(struct mr_sim_fabric *f)
{
	uint64_t next = UINT64_MAX;

	for (unsigned int k = 0; k < f->nwake;) {
		if (f->wake[k] <= f->now) {
			f->wake[k] = f->wake[--f->nwake];
			continue;
		}
		if (f->wake[k] < next)
			next = f->wake[k];
		k++;
	}
	for (unsigned int k = 0; k < f->nhops; k++) {
		uint64_t t = mr_sim_link_next_arrival(f->hops[k].link);

		if (t < next)
			next = t;
	}
	for (unsigned int i = 0; i < f->cfg.n_hosts; i++) {
		uint64_t t = mr_ctx_next_expiry(mr_sim_node_ctx(f->host[i]));

		if (t < f->now)
			t = f->now;
		if (t < next)
			next = t;
		if (f->tx_more[i]) {
			t = mr_sim_link_busy_until(f->hops[i].link);
			if (t <= f->now)
				t = f->now;
			if (t < next)
				next = t;
		}
	}
	return next;
}

int mr_sim_fabric_run(struct mr_sim_fabric *f, mr_sim_fabric_pred_fn pred, void *arg,
		      uint64_t max_ns, uint64_t *elapsed)
{
	uint64_t start = f->now;
	uint64_t deadline = max_ns > UINT64_MAX - start ? UINT64_MAX : start + max_ns;
	unsigned int same_instant = 0;
	int rc;

	for (unsigned int i = 0; i < f->cfg.n_hosts; i++)
		f->tx_more[i] = true;
	for (;;) {
		uint64_t next;

		f->st.events++;
		if (pred != NULL && pred(f, arg)) {
			rc = 0;
			break;
		}
		if (pred != NULL)
			for (unsigned int i = 0; i < f->cfg.n_hosts; i++)
				f->tx_more[i] = true;
		step(f);
		next = next_event(f);
		if (next == UINT64_MAX && pred == NULL) {
			rc = 0;
			break;
		}
		if (next > deadline) {
			if (pred != NULL && pred(f, arg)) {
				rc = 0;
				break;
			}
			f->now = deadline;
			rc = -ETIMEDOUT;
			break;
		}
		if (next == f->now && ++same_instant > 100000) {
			f->st.stuck_timers++; /* a timer never cleared (a transport bug) */
			next = f->now + 1;
		}
		if (next != f->now)
			same_instant = 0;
		f->now = next;
	}
	if (elapsed)
		*elapsed = f->now - start;
	return rc;
}

static void add_report(struct mr_sim_fabric *f, const struct hop *h,
		       struct mr_sim_fabric_report *r, unsigned int *n)
{
	struct mr_sim_link_stats ls;
	uint64_t span = f->now > f->t_create ? f->now - f->t_create : 0;
	uint64_t wire_bytes;

	mr_sim_link_get_stats(h->link, &ls);
	r->pkts += ls.sent;
	r->bytes += ls.sent_bytes;
	r->drops_queue += ls.dropped[MR_SIM_FATE_DROP_QUEUE];
	r->drops_loss += ls.dropped[MR_SIM_FATE_DROP_RANDOM] + ls.dropped[MR_SIM_FATE_DROP_MASK] +
			 ls.dropped[MR_SIM_FATE_DROP_BURST];
	r->ce_marks += h->ce_marks;
	if (ls.queue_peak_bytes > r->peak_queue_bytes)
		r->peak_queue_bytes = ls.queue_peak_bytes;
	/* Bytes the transmitter serialised: tail drops never used it, wire loss did. Uplinks
	 * are fed by mr_sim_node_tx directly and never tail-drop. */
	wire_bytes = h->kind == HOP_UP ? ls.sent_bytes : h->tx_bytes;
	if (span > 0 && h->rate_bps > 0) {
		double u = (double)wire_bytes * 8e9 / ((double)h->rate_bps * (double)span);

		r->utilisation = (r->utilisation * *n + u) / (*n + 1);
	}
	(*n)++;
}

int mr_sim_fabric_path_to_report(struct mr_sim_fabric *f, unsigned int dst, unsigned int p,
				 struct mr_sim_fabric_report *r)
{
	unsigned int n = 0;

	memset(r, 0, sizeof(*r));
	if (dst >= f->cfg.n_hosts || p >= f->cfg.n_paths)
		return -EINVAL;
	add_report(f, path_hop(f, dst, p), r, &n);
	return 0;
}

int mr_sim_fabric_path_report(struct mr_sim_fabric *f, unsigned int p,
			      struct mr_sim_fabric_report *r)
{
	unsigned int n = 0;

	memset(r, 0, sizeof(*r));
	if (p >= f->cfg.n_paths)
		return -EINVAL;
	for (unsigned int d = 0; d < f->cfg.n_hosts; d++)
		add_report(f, path_hop(f, d, p), r, &n);
	/* A path's utilisation is its busiest direction/destination share summed: report the
	 * sum over destinations (each is one egress of the same physical path). */
	r->utilisation *= n;
	return 0;
}

int mr_sim_fabric_down_report(struct mr_sim_fabric *f, unsigned int h,
			      struct mr_sim_fabric_report *r)
{
	unsigned int n = 0;

	memset(r, 0, sizeof(*r));
	if (h >= f->cfg.n_hosts)
		return -EINVAL;
	add_report(f, &f->hops[f->cfg.n_hosts + h], r, &n);
	return 0;
}
