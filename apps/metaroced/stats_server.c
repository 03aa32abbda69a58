/* SPDX-License-Identifier: MIT
 * metaroced's stats socket (stats_server.h): the document of every counter by section (link,
 * port, shard, QP) written from the shards' snapshots, and --reset as a per-counter baseline
 * kept here, in the control thread, so that the data path never learns of readers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "cc/cc.h"
#include "counters.h"
#include "log.h"
#include "shm/shm_server.h"
#include "stats_server.h"

#define REQ_WAIT_MS 500
#define SEND_CHUNK 32768

/* ---- the reset baseline: "section/name" -> value, open addressing ---- */
struct base_ent {
	char *key;
	uint64_t v;
};

struct mr_stats_base {
	struct base_ent *e;
	size_t cap, n;
};

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static struct base_ent *base_find(struct mr_stats_base *b, const char *key)
{
	size_t i;

	if (b == NULL || b->cap == 0)
		return NULL;
	for (i = fnv(key) & (b->cap - 1);; i = (i + 1) & (b->cap - 1))
		if (b->e[i].key == NULL || strcmp(b->e[i].key, key) == 0)
			return &b->e[i];
}

static void base_free(struct mr_stats_base *b)
{
	size_t i;

	if (b == NULL)
		return;
	for (i = 0; i < b->cap; i++)
		free(b->e[i].key);
	free(b->e);
	free(b);
}

static int base_set(struct mr_stats_base *b, const char *key, uint64_t v)
{
	struct base_ent *e;

	if (b->n + 1 > b->cap / 2) {
		struct mr_stats_base nb = { .cap = b->cap ? b->cap * 2 : 1024 };
		size_t i;

		nb.e = calloc(nb.cap, sizeof(*nb.e));
		if (nb.e == NULL)
			return -ENOMEM;
		for (i = 0; i < b->cap; i++)
			if (b->e[i].key != NULL) {
				*base_find(&nb, b->e[i].key) = b->e[i];
				nb.n++;
			}
		free(b->e);
		*b = nb;
	}
	e = base_find(b, key);
	if (e->key == NULL) {
		e->key = strdup(key);
		if (e->key == NULL)
			return -ENOMEM;
		b->n++;
	}
	e->v = v;
	return 0;
}

/* ---- the document ---- */
struct doc {
	FILE *f;                     /* NULL: recording a baseline */
	char section[48];
	struct mr_stats_base *base;  /* subtracted when writing, filled when recording */
	int err;
};

static void doc_emit(void *arg, enum mr_cnt_kind kind, const char *name, uint64_t v)
{
	struct doc *d = arg;
	char key[128];
	struct base_ent *e;

	if (kind == MR_CNT_COUNTER && d->base != NULL) {
		snprintf(key, sizeof(key), "%s/%s", d->section, name);
		if (d->f == NULL) {
			if (base_set(d->base, key, v) < 0)
				d->err = -ENOMEM;
			return;
		}
		/* A value below its baseline is a new object (a QPN reused after a reset). */
		e = base_find(d->base, key);
		if (e != NULL && e->key != NULL && v >= e->v)
			v -= e->v;
	}
	if (d->f != NULL)
		fprintf(d->f, "%c %s %" PRIu64 "\n", (char)kind, name, v);
}

static void section(struct doc *d, const char *name, long id)
{
	if (id >= 0)
		snprintf(d->section, sizeof(d->section), "%s %ld", name, id);
	else
		snprintf(d->section, sizeof(d->section), "%s", name);
	if (d->f != NULL)
		fprintf(d->f, "section %s\n", d->section);
}

static void str(struct doc *d, const char *key, const char *val)
{
	if (d->f != NULL)
		fprintf(d->f, "s %s %s\n", key, val != NULL && val[0] ? val : "-");
}

static void gauge(struct doc *d, const char *key, uint64_t v)
{
	if (d->f != NULL)
		fprintf(d->f, "g %s %" PRIu64 "\n", key, v);
}

static const char *qp_state_name(enum mr_qp_state s)
{
	static const char *const names[] = {
		[MR_QPS_RESET] = "RESET", [MR_QPS_INIT] = "INIT", [MR_QPS_RTR] = "RTR",
		[MR_QPS_RTS] = "RTS", [MR_QPS_SQD] = "SQD", [MR_QPS_SQE] = "SQE",
		[MR_QPS_ERR] = "ERR",
	};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) && names[s] ? names[s] : "?";
}

/* The device/port view (rdma link show, ibv_devinfo): RoCE v2 GIDs are the port's addresses,
 * IPv4 as an IPv4-mapped IPv6 address (A17.8, as rxe and mlx5 list them). */
static void doc_link(struct doc *d, const struct mr_stats_view *v)
{
	const struct mr_daemon *d0 = v->shards[0];
	const struct mr_daemon_config *c = &d0->cfg;
	const struct mr_dpdk_link *l = &d0->snap.link;
	struct rte_eth_dev_info di;
	char buf[96], key[16];
	unsigned int gid = 0;

	section(d, "link", -1);
	str(d, "device", "mr0");
	gauge(d, "port", 1);
	str(d, "state", l->up ? "ACTIVE" : "DOWN");
	str(d, "physical_state", l->up ? "LINK_UP" : "DISABLED");
	str(d, "link_layer", "Ethernet");
	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", d0->mac[0], d0->mac[1],
		 d0->mac[2], d0->mac[3], d0->mac[4], d0->mac[5]);
	str(d, "mac", buf);
	gauge(d, "active_mtu", c->ib_mtu);
	gauge(d, "max_mtu", c->ib_mtu);
	gauge(d, "netdev_mtu", c->mtu);
	gauge(d, "link_speed_mbps", l->speed_mbps);
	str(d, "duplex", l->full_duplex ? "full" : "half");
	memset(&di, 0, sizeof(di));
	str(d, "driver", d0->port != NULL &&
	    rte_eth_dev_info_get(mr_dpdk_port_id(d0->port), &di) == 0 ? di.driver_name : NULL);
	gauge(d, "dpdk_port_id", c->port_id);
	if (c->has_ipv4) {
		char ip[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, c->ipv4, ip, sizeof(ip));
		snprintf(key, sizeof(key), "gid%u", gid++);
		snprintf(buf, sizeof(buf), "::ffff:%s RoCEv2", ip);
		str(d, key, buf);
		str(d, "ipv4", ip);
	}
	if (c->has_ipv6) {
		char ip[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, c->ipv6, ip, sizeof(ip));
		snprintf(key, sizeof(key), "gid%u", gid++);
		snprintf(buf, sizeof(buf), "%s RoCEv2", ip);
		str(d, key, buf);
		str(d, "ipv6", ip);
	}
	gauge(d, "vlan", c->vlan);
	gauge(d, "dscp", c->dscp);
	gauge(d, "cnp_dscp", c->cnp_dscp);
	str(d, "ecn", c->ecn ? "on" : "off");
	gauge(d, "nshards", v->n);
	gauge(d, "max_qp", c->max_qp);
	str(d, "socket", d0->sock_path);
	str(d, "impair_rx", d0->snap.imp_on[MR_IMPAIR_RX] ? c->impair_spec[MR_IMPAIR_RX] : "off");
	str(d, "impair_tx", d0->snap.imp_on[MR_IMPAIR_TX] ? c->impair_spec[MR_IMPAIR_TX] : "off");
}

static void doc_qp(struct doc *d, const struct mr_cnt_sink *k, const struct mr_qp_snap *q,
		   unsigned int shard)
{
	section(d, "qp", (long)q->qpn);
	str(d, "state", qp_state_name(q->state));
	str(d, "type", "RC");
	str(d, "transport", q->transport == MR_TRANSPORT_METAROCE ? "metaroce" : "roce");
	str(d, "cc", q->cc_on ? mr_cc_algo_name((enum mr_cc_algo)q->cc) : "none");
	gauge(d, "lqpn", q->qpn);
	gauge(d, "rqpn", q->dest_qpn);
	gauge(d, "shard", shard);
	gauge(d, "path_mtu", q->path_mtu);
	gauge(d, "entropies", q->n_entropies);
	gauge(d, "cc_rate_bps", q->cc_rate_bps);
	gauge(d, "cc_rate_min_bps", q->cc_rate_min_bps);
	gauge(d, "cc_cwnd_bytes", q->cc_cwnd_bytes);
	mr_cnt_qp(k, &q->s);
}

void mr_stats_doc_write(FILE *f, const struct mr_stats_view *v, struct mr_stats_base *base)
{
	struct doc d = { .f = f, .base = base };
	struct mr_cnt_sink k = { .emit = doc_emit, .arg = &d };
	const struct mr_shard_snap *io = &v->shards[0]->snap;
	unsigned int i, q;

	if (f != NULL)
		fprintf(f, "metaroce-stats 1\ntime_ns %" PRIu64 "\n", mr_now_ns());
	doc_link(&d, v);
	/* The port: the daemon-wide sums (rdma statistic show link mr0/1, ethtool -S). */
	section(&d, "port", 1);
	gauge(&d, "qps", v->nqp);
	gauge(&d, "sessions", v->nsessions);
	gauge(&d, "holding", v->nheld);
	mr_cnt_qp(&k, &v->qsum);
	mr_cnt_ctx(&k, &v->cs);
	mr_cnt_parse_drops(&k, v->st.parse_drop);
	mr_cnt_port(&k, &io->ps);
	mr_cnt_engine(&k, &v->st);
	mr_cnt_neigh(&k, &io->ns);
	if (io->imp_on[MR_IMPAIR_RX])
		mr_cnt_impair(&k, "rx", &io->is[MR_IMPAIR_RX]);
	if (io->imp_on[MR_IMPAIR_TX])
		mr_cnt_impair(&k, "tx", &io->is[MR_IMPAIR_TX]);
	for (i = 0; i < v->n; i++) {
		const struct mr_daemon *s = v->shards[i];

		section(&d, "shard", (long)i);
		gauge(&d, "lcore", s->lcore);
		gauge(&d, "qps", s->snap.nqp);
		gauge(&d, "qps_created", s->snap.qps_created);
		gauge(&d, "sessions", s->snap.nsessions);
		k.emit(k.arg, MR_CNT_COUNTER, "rx_dispatched", i == 0 ? s->snap.st.rx_dispatched :
		       s->snap.st.ring_rx);
		k.emit(k.arg, MR_CNT_COUNTER, "rx_backpressure", s->snap.st.rx_backpressure);
		mr_cnt_engine(&k, &s->snap.st);
		mr_cnt_qp(&k, &s->snap.qsum);
		mr_cnt_ctx(&k, &s->snap.cs);
	}
	for (i = 0; i < v->n; i++)
		for (q = 0; q < v->shards[i]->snap.nqps; q++)
			doc_qp(&d, &k, &v->shards[i]->snap.qps[q], i);
	if (f != NULL)
		fprintf(f, "end\n");
}

/* ---- the socket ---- */
int mr_stats_srv_open(struct mr_stats_srv *s, const char *sock_path)
{
	memset(s, 0, sizeof(*s));
	s->lsock = -1;
	if ((size_t)snprintf(s->path, sizeof(s->path), "%s%s", sock_path, MR_STATS_SOCK_SUFFIX) >=
	    sizeof(s->path))
		return -ENAMETOOLONG;
	/* Counters are no secret the apps' socket does not already give: same mode. */
	s->lsock = mr_shm_listen(s->path, 0666);
	if (s->lsock < 0) {
		int rc = s->lsock;

		s->lsock = -1;
		return rc;
	}
	return 0;
}

void mr_stats_srv_close(struct mr_stats_srv *s)
{
	if (s->lsock >= 0) {
		close(s->lsock);
		unlink(s->path);
	}
	s->lsock = -1;
	base_free(s->base);
	s->base = NULL;
}

static void send_all(int fd, const char *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		size_t n = len - off > SEND_CHUNK ? SEND_CHUNK : len - off;
		ssize_t w = send(fd, buf + off, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

static void reply(int fd, const char *text)
{
	send_all(fd, text, strlen(text));
}

static void serve_one(struct mr_stats_srv *s, int fd, struct mr_daemon *const *shards,
		      unsigned int n, mr_stats_collect_fn collect, void *arg)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timeval tv = { .tv_sec = 2 };
	char req[256];
	ssize_t r;
	struct mr_stats_view v;

	/* A client that connects and says nothing must not hold up the control thread. */
	if (poll(&p, 1, REQ_WAIT_MS) <= 0 || (r = recv(fd, req, sizeof(req) - 1, 0)) <= 0) {
		s->errors++;
		return;
	}
	req[r] = '\0';
	req[strcspn(req, "\r\n")] = '\0';
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (strcmp(req, "stats") != 0 && strcmp(req, "reset") != 0) {
		s->errors++;
		reply(fd, "error unknown request (expected \"stats\" or \"reset\")\n");
		return;
	}
	collect(arg);
	mr_stats_view_build(&v, shards, n);
	if (strcmp(req, "reset") == 0) {
		struct mr_stats_base *b = calloc(1, sizeof(*b));

		if (b != NULL) {
			mr_stats_doc_write(NULL, &v, b);
			base_free(s->base);
			s->base = b;
			mr_log(MR_LOG_INFO, "stats: counters reset (%zu values)", b->n);
			reply(fd, "ok\n");
		} else {
			reply(fd, "error out of memory\n");
		}
	} else {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (f == NULL) {
			reply(fd, "error out of memory\n");
			return;
		}
		mr_stats_doc_write(f, &v, s->base);
		if (fclose(f) == 0)
			send_all(fd, buf, len);
		free(buf);
	}
	s->served++;
}

void mr_stats_srv_serve(struct mr_stats_srv *s, struct mr_daemon *const *shards, unsigned int n,
			mr_stats_collect_fn collect, void *arg)
{
	int fd;

	if (s->lsock < 0)
		return;
	while ((fd = mr_shm_accept(s->lsock)) >= 0) {
		serve_one(s, fd, shards, n, collect, arg);
		close(fd);
	}
}
