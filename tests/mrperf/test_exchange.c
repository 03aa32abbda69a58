/* SPDX-License-Identifier: MIT
 * mrperf exchange: decode the perftest 4.5 setup stream of real rxe captures, check it against
 * the RoCE frames of the same capture, re-encode it byte for byte, and replay the captured peer
 * against our conversation code in both roles.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture.h"
#include "exchange.h"

/* Field-wise comparisons: struct padding is not part of the value. */
static void assert_dest_equal(const struct mr_pt_dest *a, const struct mr_pt_dest *b)
{
	assert_int_equal(a->lid, b->lid);
	assert_int_equal(a->out_reads, b->out_reads);
	assert_int_equal(a->qpn, b->qpn);
	assert_int_equal(a->psn, b->psn);
	assert_int_equal(a->rkey, b->rkey);
	assert_true(a->vaddr == b->vaddr);
	assert_memory_equal(a->gid, b->gid, 16);
	assert_int_equal(a->srqn, b->srqn);
}

static void assert_pp_equal(const struct mr_pp_dest *a, const struct mr_pp_dest *b)
{
	assert_int_equal(a->lid, b->lid);
	assert_int_equal(a->qpn, b->qpn);
	assert_int_equal(a->psn, b->psn);
	assert_memory_equal(a->gid, b->gid, 16);
}

static const char *vectors_dir(void)
{
	const char *d = getenv("MR_VECTORS_DIR");

	return d != NULL ? d : "tests/vectors";
}

struct cap_state {
	const char *file;
	enum mr_pt_test test;
	struct capture cap;
	struct mr_pt_dest client, server; /* from the first key records */
};

static struct capture *load(const char *name)
{
	char path[512];
	struct capture *cap = calloc(1, sizeof(*cap));

	assert_non_null(cap);
	snprintf(path, sizeof(path), "%s/%s", vectors_dir(), name);
	assert_int_equal(capture_load(path, MR_PT_DEFAULT_PORT, cap), 0);
	return cap;
}

/* Hand shakes before the first RoCE packet: the setup script, plus the pre-measurement sync of
 * the send tests (the server must have posted its receives first). */
static int hand_shakes_before_data(enum mr_pt_test t)
{
	unsigned idx[16], conn;
	int hs = mr_pt_setup_script(t, 1, idx, 16, &conn);

	assert_true(hs > 0);
	if (mr_pt_tail_flags(t, false) & MR_PT_TAIL_SYNC_PER_SIZE_PRE)
		hs++;
	return hs;
}

/* The stream must be: version, cycle buffer, cache line, MTU (each client then server), then
 * key records, client first, as many pairs as the test's script says. */
static void check_layout(const struct capture *cap, enum mr_pt_test t)
{
	static const size_t pre[4] = { MR_PT_VERSION_LEN, 4, 4, MR_PT_MTU_LEN };
	int hs = hand_shakes_before_data(t);

	/* the captures stop during the measurement: preamble + setup hand shakes are all there */
	assert_int_equal(cap->nseg, 8 + 2 * (size_t)hs);
	for (size_t i = 0; i < cap->nseg; i++) {
		assert_int_equal(cap->seg[i].from_client, i % 2 == 0);
		assert_int_equal(cap->seg[i].len, i < 8 ? pre[i / 2] : MR_PT_KEY_LEN_GID);
	}
}

static void check_preamble_bytes(const struct capture *cap)
{
	uint8_t b[MR_PT_VERSION_LEN];
	double v;

	for (int side = 0; side < 2; side++) {
		assert_int_equal(mr_pt_version_decode(cap->seg[side].data, &v), 0);
		assert_true(v > 6.05 && v < 6.07);
		mr_pt_version_encode(b);
		assert_memory_equal(b, cap->seg[side].data, MR_PT_VERSION_LEN);

		assert_int_equal(mr_pt_u32_decode(cap->seg[2 + side].data), 4096);
		mr_pt_u32_encode(4096, b);
		assert_memory_equal(b, cap->seg[2 + side].data, 4);
		assert_int_equal(mr_pt_u32_decode(cap->seg[4 + side].data), 64);
		mr_pt_u32_encode(64, b);
		assert_memory_equal(b, cap->seg[4 + side].data, 4);

		/* MTU 1500 Ethernet -> IB MTU 1024 -> "3\0" */
		assert_int_equal(mr_pt_mtu_decode(cap->seg[6 + side].data), 1024);
		assert_int_equal(mr_pt_mtu_encode(1024, b), 0);
		assert_memory_equal(b, cap->seg[6 + side].data, MR_PT_MTU_LEN);
	}
}

/* Decodes every key record, checks the re-encoding is byte-identical and that each side sends
 * the same record at every barrier; returns the first record of each side. */
static void check_records(const struct capture *cap, struct mr_pt_dest *client,
			  struct mr_pt_dest *server)
{
	for (size_t i = 8; i < cap->nseg; i++) {
		const struct cap_seg *s = &cap->seg[i];
		struct mr_pt_dest d;
		char enc[MR_PT_KEY_LEN_GID];

		assert_int_equal(mr_pt_dest_decode((const char *)s->data, s->len, true, &d), 0);
		assert_int_equal(mr_pt_dest_encode(&d, true, enc, sizeof(enc)), MR_PT_KEY_LEN_GID);
		assert_memory_equal(enc, s->data, MR_PT_KEY_LEN_GID);
		if (i < 10)
			*(s->from_client ? client : server) = d;
		else
			assert_dest_equal(&d, s->from_client ? client : server);
	}
	/* RoCE v2 GID index 1: ::ffff:<the host's IPv4 address> (IBA A17.4.5.1 mapping) */
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	assert_memory_equal(client->gid, prefix, 12);
	assert_memory_equal(client->gid + 12, cap->client_ip, 4);
	assert_memory_equal(server->gid, prefix, 12);
	assert_memory_equal(server->gid + 12, cap->server_ip, 4);
	assert_int_equal(client->lid, 0); /* no LIDs on RoCE */
	assert_int_equal(server->lid, 0);
	assert_int_equal(client->srqn, 0);
}

/* The RoCE frames must use what the exchange announced: requests carry the server's QPN in the
 * BTH and start at the client's PSN (the client's SQ PSN = the server's expected PSN, IBA
 * 9.7.1), responses/ACKs carry the client's QPN and PSNs of the client's sequence. */
static void check_roce(const struct capture *cap, const struct mr_pt_dest *client,
		       const struct mr_pt_dest *server, uint8_t first_opcode_a, uint8_t first_opcode_b)
{
	size_t nreq = 0, nresp = 0;
	bool first = true;

	assert_true(cap->nroce > 100);
	for (size_t i = 0; i < cap->nroce; i++) {
		const struct cap_roce *r = &cap->roce[i];
		uint32_t off;

		if (memcmp(r->src_ip, cap->client_ip, 4) == 0) {
			assert_int_equal(r->dest_qp, server->qpn);
			if (first) {
				assert_int_equal(r->psn, client->psn);
				assert_true(r->opcode == first_opcode_a || r->opcode == first_opcode_b);
				first = false;
			}
			if (r->has_reth) {
				/* the target buffer is the one advertised by the server, in its
				 * cycle buffer (perftest: vaddr + k * size, wrapping) */
				assert_int_equal(r->reth_rkey, server->rkey);
				assert_true(r->reth_va >= server->vaddr);
				assert_true(r->reth_va < server->vaddr + 0x10000 * 0x80ull);
			}
			nreq++;
		} else {
			assert_memory_equal(r->src_ip, cap->server_ip, 4);
			assert_int_equal(r->dest_qp, client->qpn);
			off = (r->psn - client->psn) & 0xffffff;
			assert_true(off < 0x100000);
			nresp++;
		}
	}
	assert_true(nreq > 0);
	assert_true(nresp > 0);
}

static void test_write_bw_capture(void **state)
{
	struct capture *cap = load("ib_write_bw.pcap");
	struct mr_pt_dest c, s;

	(void)state;
	check_layout(cap, MR_PT_WRITE_BW);
	check_preamble_bytes(cap);
	check_records(cap, &c, &s);
	/* known values of this capture (also visible with tshark) */
	assert_int_equal(c.qpn, 0x11);
	assert_int_equal(c.psn, 0x0f498a);
	assert_int_equal(c.rkey, 0x26f);
	assert_true(c.vaddr == 0x00007f154a438000ull);
	assert_int_equal(s.psn, 0x7a082f);
	assert_int_equal(s.rkey, 0x239);
	assert_true(s.vaddr == 0x00007f7f5a113000ull);
	assert_int_equal(c.out_reads, 1);
	check_roce(cap, &c, &s, 0x06, 0x0a); /* RDMA WRITE First / Only */
	/* the first WRITE targets exactly the advertised address */
	for (size_t i = 0; i < cap->nroce; i++)
		if (cap->roce[i].has_reth) {
			assert_true(cap->roce[i].reth_va == s.vaddr);
			assert_int_equal(cap->roce[i].reth_len, 65536); /* DEF_SIZE_BW */
			break;
		}
	free(cap);
}

static void test_send_bw_capture(void **state)
{
	struct capture *cap = load("ib_send_bw.pcap");
	struct mr_pt_dest c, s;

	(void)state;
	check_layout(cap, MR_PT_SEND_BW);
	check_preamble_bytes(cap);
	check_records(cap, &c, &s);
	check_roce(cap, &c, &s, 0x00, 0x04); /* SEND First / Only */
	for (size_t i = 0; i < cap->nroce; i++)
		assert_false(cap->roce[i].has_reth);
	free(cap);
}

static void test_read_bw_capture(void **state)
{
	struct capture *cap = load("ib_read_bw.pcap");
	struct mr_pt_dest c, s;

	(void)state;
	check_layout(cap, MR_PT_READ_BW);
	check_preamble_bytes(cap);
	check_records(cap, &c, &s);
	/* rxe's max_qp_rd_atom (128) is what ib_read_bw announces as outstanding reads */
	assert_int_equal(c.out_reads, 0x80);
	assert_int_equal(s.out_reads, 0x80);
	check_roce(cap, &c, &s, 0x0c, 0x0c); /* RDMA READ Request */
	free(cap);
}

/* ---- replay: our conversation code against the captured peer, over a socketpair ---- */

struct replay {
	int fd;
	const struct capture *cap;
	bool peer_is_client;     /* which captured side the thread plays */
	uint8_t got[4096];       /* what our side sent */
	size_t got_len;
	int err;
};

static void *replay_peer(void *arg)
{
	struct replay *r = arg;

	for (size_t i = 0; i < r->cap->nseg; i++) {
		const struct cap_seg *s = &r->cap->seg[i];

		if (s->from_client == r->peer_is_client) {
			if (write(r->fd, s->data, s->len) != (ssize_t)s->len) {
				r->err = -EIO;
				return NULL;
			}
		} else {
			size_t want = s->len, have = 0;

			while (have < want) {
				ssize_t n = read(r->fd, r->got + r->got_len + have, want - have);

				if (n <= 0) {
					r->err = -EIO;
					return NULL;
				}
				have += (size_t)n;
			}
			r->got_len += want;
		}
	}
	return NULL;
}

static void replay_role(const char *file, enum mr_pt_test t, bool we_are_client)
{
	struct capture *cap = load(file);
	struct mr_pt_dest c, s, rem;
	struct replay *r = calloc(1, sizeof(*r));
	int sv[2];
	pthread_t th;
	struct timeval tmo = { .tv_sec = 10 };
	int hs;
	size_t exp_len = 0;
	uint8_t *exp = malloc(4096);

	assert_non_null(r);
	assert_non_null(exp);
	check_records(cap, &c, &s);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* a protocol mismatch must fail the test, not hang it */
	setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	r->fd = sv[1];
	r->cap = cap;
	r->peer_is_client = !we_are_client;
	assert_int_equal(pthread_create(&th, NULL, replay_peer, r), 0);

	struct mr_pt_conn conn_ = { .fd = sv[0], .client = we_are_client, .with_gid = true,
				    .timeout_ms = 5000 };
	struct mr_pt_preamble p = { .cycle_buffer = 4096, .cache_line_size = 64, .mtu = 4096 };

	assert_int_equal(mr_pt_preamble(&conn_, &p), 0);
	assert_true(conn_.peer_version > 6.05 && conn_.peer_version < 6.07);
	assert_int_equal(p.mtu, 1024); /* min(ours 4096, peer's 1024) */
	assert_int_equal(p.cycle_buffer, 4096);
	assert_int_equal(p.cache_line_size, 64);
	hs = hand_shakes_before_data(t);
	for (int i = 0; i < hs; i++) {
		assert_int_equal(mr_pt_hand_shake(&conn_, we_are_client ? &c : &s, &rem), 0);
		assert_dest_equal(&rem, we_are_client ? &s : &c);
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(r->err, 0);
	/* expected: the captured stream of our role, except the MTU step, where we said 4096 */
	for (size_t i = 0; i < cap->nseg; i++)
		if (cap->seg[i].from_client == we_are_client) {
			memcpy(exp + exp_len, cap->seg[i].data, cap->seg[i].len);
			exp_len += cap->seg[i].len;
		}
	assert_int_equal(r->got_len, exp_len);
	assert_memory_equal(r->got, exp, 24);                 /* version + sys data */
	assert_memory_equal(r->got + 24, "5\0", 2);           /* IBV_MTU_4096 */
	assert_memory_equal(r->got + 26, exp + 26, exp_len - 26); /* every key record */
	close(sv[0]);
	close(sv[1]);
	free(exp);
	free(r);
	free(cap);
}

static void test_replay_server_write_bw(void **state)
{
	(void)state;
	replay_role("ib_write_bw.pcap", MR_PT_WRITE_BW, false);
}

static void test_replay_client_write_bw(void **state)
{
	(void)state;
	replay_role("ib_write_bw.pcap", MR_PT_WRITE_BW, true);
}

static void test_replay_both_send_bw(void **state)
{
	(void)state;
	replay_role("ib_send_bw.pcap", MR_PT_SEND_BW, false);
	replay_role("ib_send_bw.pcap", MR_PT_SEND_BW, true);
}

static void test_replay_both_read_bw(void **state)
{
	(void)state;
	replay_role("ib_read_bw.pcap", MR_PT_READ_BW, false);
	replay_role("ib_read_bw.pcap", MR_PT_READ_BW, true);
}

/* ---- codec edge cases ---- */

static const char rec_ok[] = "0000:0001:000011:0f498a:0000026f:00007f154a438000:00:00:00:00:00:"
			     "00:00:00:00:00:ff:ff:c6:12:00:0c:00000000:";

static void test_dest_malformed(void **state)
{
	char buf[MR_PT_KEY_LEN_GID];
	struct mr_pt_dest d;

	(void)state;
	assert_int_equal(sizeof(rec_ok), MR_PT_KEY_LEN_GID);
	memcpy(buf, rec_ok, sizeof(buf));
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf), true, &d), 0);
	assert_int_equal(d.qpn, 0x11);
	assert_int_equal(d.gid[15], 0x0c);
	/* wrong length */
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf) - 1, true, &d), -EINVAL);
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf), false, &d), -EINVAL);
	/* non-hex digit in the PSN */
	buf[17] = 'g';
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf), true, &d), -EINVAL);
	/* missing NUL terminator */
	memcpy(buf, rec_ok, sizeof(buf));
	buf[107] = ':';
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf), true, &d), -EINVAL);
	/* separator replaced: a field becomes too wide */
	memcpy(buf, rec_ok, sizeof(buf));
	buf[4] = '0';
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf), true, &d), -EINVAL);
	/* empty field */
	memcpy(buf, rec_ok, sizeof(buf));
	memcpy(buf, "0000::001:", 10);
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf), true, &d), -EINVAL);
	/* all zero bytes / all 0xff */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf), true, &d), -EINVAL);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf), true, &d), -EINVAL);
	/* encoder refuses out-of-range values */
	d.qpn = 0x1000000;
	assert_int_equal(mr_pt_dest_encode(&d, true, buf, sizeof(buf)), -EINVAL);
	d.qpn = 1;
	assert_int_equal(mr_pt_dest_encode(&d, true, buf, 50), -ENOSPC);
}

static void test_dest_no_gid_form(void **state)
{
	struct mr_pt_dest d = { .lid = 0x12, .out_reads = 0x10, .qpn = 0xabcdef, .psn = 0x123456,
				.rkey = 0xdeadbeef, .vaddr = 0x1122334455667788ull, .srqn = 7 };
	struct mr_pt_dest e;
	char buf[MR_PT_KEY_LEN];

	(void)state;
	assert_int_equal(mr_pt_dest_encode(&d, false, buf, sizeof(buf)), MR_PT_KEY_LEN);
	/* KEY_PRINT_FMT "%04x:%04x:%06x:%06x:%08x:%016llx:%08x" */
	assert_string_equal(buf, "0012:0010:abcdef:123456:deadbeef:1122334455667788:00000007");
	assert_int_equal(mr_pt_dest_decode(buf, sizeof(buf), false, &e), 0);
	assert_dest_equal(&d, &e);
}

static void test_version_and_mtu(void **state)
{
	uint8_t v[MR_PT_VERSION_LEN] = "5.60";
	uint8_t m[2];
	double ver;

	(void)state;
	assert_int_equal(mr_pt_version_decode(v, &ver), 0);
	assert_true(ver < MR_PT_MIN_PEER_VERSION);
	memset(v, 'x', sizeof(v));
	assert_int_equal(mr_pt_version_decode(v, &ver), -EINVAL); /* no NUL */
	memset(v, 0, sizeof(v));
	assert_int_equal(mr_pt_version_decode(v, &ver), -EINVAL); /* empty */
	memcpy(v, "6.a", 3);
	assert_int_equal(mr_pt_version_decode(v, &ver), -EINVAL);
	assert_int_equal(mr_pt_mtu_encode(256, m), 0);
	assert_memory_equal(m, "1", 2);
	assert_int_equal(mr_pt_mtu_encode(4096, m), 0);
	assert_memory_equal(m, "5", 2);
	assert_int_equal(mr_pt_mtu_encode(1500, m), -EINVAL);
	assert_int_equal(mr_pt_mtu_decode((const uint8_t *)"6"), -EINVAL);
	assert_int_equal(mr_pt_mtu_decode((const uint8_t *)"33"), -EINVAL);
	assert_int_equal(mr_pt_mtu_decode((const uint8_t *)"2"), 512);
}

/* A peer announcing perftest < 5.70 is refused, as perftest itself refuses it. */
static void *old_peer(void *arg)
{
	int fd = *(int *)arg;
	uint8_t b[MR_PT_VERSION_LEN] = "5.60";
	uint8_t in[MR_PT_VERSION_LEN];

	if (read(fd, in, sizeof(in)) != (ssize_t)sizeof(in))
		return NULL;
	if (write(fd, b, sizeof(b)) < 0)
		return NULL;
	return NULL;
}

static void test_preamble_old_peer(void **state)
{
	int sv[2];
	pthread_t th;
	struct mr_pt_conn c = { .client = true, .with_gid = true, .timeout_ms = 5000 };
	struct mr_pt_preamble p = { .cycle_buffer = 4096, .cache_line_size = 64, .mtu = 1024 };

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	c.fd = sv[0];
	assert_int_equal(pthread_create(&th, NULL, old_peer, &sv[1]), 0);
	assert_int_equal(mr_pt_preamble(&c, &p), -EPROTO);
	pthread_join(th, NULL);
	close(sv[0]);
	close(sv[1]);
}

/* Both roles of our own code talk to each other over real TCP on loopback: preamble, the
 * write_bw script, report exchange and close; the server sees the client's numbers. */
struct tcp_srv {
	uint16_t port;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd;
	struct mr_pt_bw_report got;
	struct mr_pt_dest rem;
	int err;
};

static void on_listen(void *arg, uint16_t port)
{
	struct tcp_srv *t = arg;

	pthread_mutex_lock(&t->mu);
	t->port = port;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

static const struct mr_pt_dest srv_dest = { .out_reads = 1, .qpn = 0x22, .psn = 0x654321,
					    .rkey = 0x1234, .vaddr = 0x7000,
					    .gid = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 } };
static const struct mr_pt_dest cli_dest = { .out_reads = 1, .qpn = 0x33, .psn = 0xabcdef,
					    .rkey = 0x4321, .vaddr = 0x8000,
					    .gid = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 2 } };

static void *tcp_server(void *arg)
{
	struct tcp_srv *t = arg;
	struct mr_pt_conn c = { .client = false, .with_gid = true, .timeout_ms = 10000 };
	struct mr_pt_preamble p = { .cycle_buffer = 4096, .cache_line_size = 128, .mtu = 1024 };
	struct mr_pt_bw_report mine = { 0 };
	unsigned idx[8], conn;
	int n, r;

	c.fd = mr_pt_accept(0, 10000, on_listen, t);
	if (c.fd < 0) {
		t->err = c.fd;
		on_listen(t, 0);
		return NULL;
	}
	r = mr_pt_preamble(&c, &p);
	n = mr_pt_setup_script(MR_PT_WRITE_BW, 1, idx, 8, &conn);
	for (int i = 0; r == 0 && i < n; i++)
		r = mr_pt_hand_shake(&c, &srv_dest, &t->rem);
	/* write_bw server: waits in a hand shake, gets the client's report, closes */
	if (r == 0)
		r = mr_pt_hand_shake(&c, &srv_dest, &t->rem);
	if (r == 0)
		r = mr_pt_xchg_bw_report(&c, &mine, &t->got);
	if (r == 0)
		r = mr_pt_close(&c, &srv_dest, &t->rem);
	t->err = r;
	return NULL;
}

static void test_tcp_loopback_write_bw(void **state)
{
	struct tcp_srv t = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	struct mr_pt_conn c = { .client = true, .with_gid = true, .timeout_ms = 10000 };
	struct mr_pt_preamble p = { .cycle_buffer = 4096, .cache_line_size = 64, .mtu = 4096 };
	struct mr_pt_bw_report mine = { .size = 65536, .iters = 5000, .bw_peak = 12.5,
					.bw_avg = 11.25, .msg_rate = 0.021 };
	struct mr_pt_bw_report theirs;
	struct mr_pt_dest rem;
	pthread_t th;
	unsigned idx[8], conn;
	int n;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, tcp_server, &t), 0);
	pthread_mutex_lock(&t.mu);
	while (t.port == 0 && t.err == 0)
		pthread_cond_wait(&t.cv, &t.mu);
	pthread_mutex_unlock(&t.mu);
	assert_int_equal(t.err, 0);
	c.fd = mr_pt_connect("127.0.0.1", t.port, 5000);
	assert_true(c.fd >= 0);
	assert_int_equal(mr_pt_preamble(&c, &p), 0);
	assert_int_equal(p.mtu, 1024);
	assert_int_equal(p.cache_line_size, 128);
	n = mr_pt_setup_script(MR_PT_WRITE_BW, 1, idx, 8, &conn);
	assert_int_equal(n, 3);
	assert_int_equal(conn, 1);
	for (int i = 0; i < n; i++) {
		assert_int_equal(mr_pt_hand_shake(&c, &cli_dest, &rem), 0);
		assert_dest_equal(&rem, &srv_dest);
	}
	assert_int_equal(mr_pt_hand_shake(&c, &cli_dest, &rem), 0);
	assert_int_equal(mr_pt_xchg_bw_report(&c, &mine, &theirs), 0);
	assert_int_equal(mr_pt_close(&c, &cli_dest, &rem), 0);
	assert_int_equal(c.fd, -1);
	pthread_join(th, NULL);
	assert_int_equal(t.err, 0);
	assert_dest_equal(&t.rem, &cli_dest);
	assert_true(t.got.size == 65536 && t.got.iters == 5000);
	assert_true(t.got.bw_peak == 12.5 && t.got.bw_avg == 11.25 && t.got.msg_rate == 0.021);
}

static void test_report_bytes(void **state)
{
	uint8_t b[8];

	(void)state;
	/* hton_double(1.0): IEEE 0x3ff0000000000000 sent most significant byte first */
	mr_pt_double_encode(1.0, b);
	assert_memory_equal(b, "\x3f\xf0\0\0\0\0\0\0", 8);
	assert_true(mr_pt_double_decode(b) == 1.0);
	mr_pt_u64_encode(65536, b);
	assert_memory_equal(b, "\0\0\0\0\0\x01\0\0", 8);
}

static void test_scripts(void **state)
{
	unsigned idx[16], conn;

	(void)state;
	assert_int_equal(mr_pt_setup_script(MR_PT_WRITE_BW, 2, idx, 16, &conn), 5);
	assert_int_equal(conn, 2);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[1], 1);
	assert_int_equal(idx[2], 0);
	assert_int_equal(idx[3], 1);
	assert_int_equal(idx[4], 0);
	assert_int_equal(mr_pt_setup_script(MR_PT_SEND_BW, 1, idx, 16, &conn), 3);
	assert_int_equal(mr_pt_setup_script(MR_PT_SEND_LAT, 2, idx, 16, &conn), 5);
	assert_int_equal(idx[2], 0);
	assert_int_equal(idx[4], 1);
	assert_int_equal(mr_pt_setup_script(MR_PT_WRITE_LAT, 1, idx, 16, &conn), 4);
	assert_int_equal(conn, 2);
	assert_int_equal(mr_pt_setup_script(MR_PT_READ_LAT, 3, idx, 2, &conn), -ENOSPC);
	assert_int_equal(mr_pt_setup_script(MR_PT_READ_LAT, 0, idx, 16, &conn), -EINVAL);
	assert_int_equal(mr_pt_setup_script((enum mr_pt_test)99, 1, idx, 16, &conn), -EINVAL);
	assert_true(mr_pt_tail_flags(MR_PT_WRITE_BW, false) & MR_PT_TAIL_REPORT_XCHG);
	assert_false(mr_pt_tail_flags(MR_PT_SEND_BW, false) & MR_PT_TAIL_REPORT_XCHG);
	assert_true(mr_pt_tail_flags(MR_PT_SEND_BW, true) & MR_PT_TAIL_SYNC_PER_SIZE_POST);
	assert_int_equal(mr_pt_tail_flags(MR_PT_WRITE_LAT, false), 0);
}

/* ---- ibv_rc_pingpong ---- */

static void test_pingpong_codec(void **state)
{
	struct mr_pp_dest d = { .lid = 0, .qpn = 0x11, .psn = 0x2a3b4c,
				.gid = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 11 } };
	struct mr_pp_dest e;
	char buf[MR_PP_MSG_LEN];

	(void)state;
	assert_int_equal(mr_pp_dest_encode(&d, buf, sizeof(buf)), MR_PP_MSG_LEN);
	/* "%04x:%06x:%06x:%s" with gid_to_wire_gid() = raw GID bytes in hex, in order */
	assert_string_equal(buf, "0000:000011:2a3b4c:00000000000000000000ffffc612000b");
	assert_int_equal(mr_pp_dest_decode(buf, sizeof(buf), &e), 0);
	assert_pp_equal(&d, &e);
	buf[30] = 'z';
	assert_int_equal(mr_pp_dest_decode(buf, sizeof(buf), &e), -EINVAL);
	assert_int_equal(mr_pp_dest_decode(buf, sizeof(buf) - 1, &e), -EINVAL);
	memcpy(buf, "0000:000011:2a3b4c:00000000000000000000ffffc612000b", MR_PP_MSG_LEN);
	buf[51] = '0';
	assert_int_equal(mr_pp_dest_decode(buf, sizeof(buf), &e), -EINVAL);
}

struct pp_peer {
	int fd;
	struct mr_pp_dest rem;
	int err;
};

static void *pp_server(void *arg)
{
	struct pp_peer *p = arg;
	struct mr_pp_dest mine = { .qpn = 0x99, .psn = 0x1 };

	p->err = mr_pp_exchange(p->fd, false, 5000, &mine, &p->rem);
	return NULL;
}

static void test_pingpong_exchange(void **state)
{
	int sv[2];
	pthread_t th;
	struct pp_peer p = { 0 };
	struct mr_pp_dest mine = { .qpn = 0x42, .psn = 0xfffffe, .gid = { 0xfe, 0x80 } };
	struct mr_pp_dest rem;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	p.fd = sv[1];
	assert_int_equal(pthread_create(&th, NULL, pp_server, &p), 0);
	assert_int_equal(mr_pp_exchange(sv[0], true, 5000, &mine, &rem), 0);
	pthread_join(th, NULL);
	assert_int_equal(p.err, 0);
	assert_int_equal(rem.qpn, 0x99);
	assert_pp_equal(&p.rem, &mine);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_bw_capture),
		cmocka_unit_test(test_send_bw_capture),
		cmocka_unit_test(test_read_bw_capture),
		cmocka_unit_test(test_replay_server_write_bw),
		cmocka_unit_test(test_replay_client_write_bw),
		cmocka_unit_test(test_replay_both_send_bw),
		cmocka_unit_test(test_replay_both_read_bw),
		cmocka_unit_test(test_dest_malformed),
		cmocka_unit_test(test_dest_no_gid_form),
		cmocka_unit_test(test_version_and_mtu),
		cmocka_unit_test(test_preamble_old_peer),
		cmocka_unit_test(test_tcp_loopback_write_bw),
		cmocka_unit_test(test_report_bytes),
		cmocka_unit_test(test_scripts),
		cmocka_unit_test(test_pingpong_codec),
		cmocka_unit_test(test_pingpong_exchange),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
