/* SPDX-License-Identifier: MIT
 * metaroced engine loop (one lcore per shard, run to completion, l2fwd style): rx burst ->
 * neighbour / (impairment) -> transport; shm data path every iteration, shm control path every
 * ctl_every iterations; transport timers; delayed (impaired) frames; transport output -> tx;
 * flush; idle back-off bounded by the next delayed frame.
 * With several shards (shard.c), the I/O shard 0 also hands RoCE frames to their owner shard's
 * ring and routes the frames other shards built; other shards read their rx ring instead of the
 * port and never touch the port, the neighbour table, the pcap or the impairment stages.
 * The port's link is followed while running (follow_link): net_memif's comes up only when its
 * peer connects, which may be long after start-up.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "backend.h"
#include "daemon.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"
#include "load_nap.h"
#include "tsc_clock.h"
#include "log.h"
#include "shm/shm_server.h"
#include "transport/rc.h"

static uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The engine's clock: CLOCK_MONOTONIC until mr_clock_init, then the TSC counted from the same
 * origin (continuous at the switch) and kept on CLOCK_MONOTONIC by shard 0 (tsc_clock.h,
 * mr_clock_check). Several reads per iteration: on a paravirtualised clock (kvm-clock)
 * clock_gettime takes ~25 ns here, rdtsc ~10. Only with an invariant TSC, which DPDK's own
 * timers assume too; else the clock stays CLOCK_MONOTONIC. */
static struct mr_tsc_clock tclk;
static bool tclk_on; /* set once, before any engine thread starts */
static uint64_t tclk_hz;

void mr_clock_init(void)
{
	uint64_t hz = rte_get_tsc_hz();
	unsigned int a, b, c, dx;

	/* CPUID 0x80000007 EDX bit 8: invariant TSC (AMD and Intel alike). */
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(dx) : "a"(0x80000007u));
	if (hz < 1000000 || !(dx & (1u << 8)))
		return;
	mr_tsc_clock_init(&tclk, hz, rte_rdtsc(), clock_ns());
	tclk_hz = hz;
	tclk_on = true;
}

uint64_t mr_now_ns(void)
{
	/* Per thread, the clock never goes back, even across a re-anchoring that another thread
	 * published between this thread's TSC read and its anchor read. Initial-exec: in the
	 * embedded engine module (dlopened) the default model called __tls_get_addr on every
	 * read (perf, embedded write_lat: 0.9 % of the app's CPU); 8 bytes of glibc's static TLS
	 * surplus instead. */
	static _Thread_local uint64_t last __attribute__((tls_model("initial-exec")));
	uint64_t v;

	if (!tclk_on)
		return clock_ns();
	v = mr_tsc_clock_ns(&tclk, rte_rdtsc());
	if (v < last)
		return last;
	last = v;
	return v;
}

/* A busy engine makes 1-10 M iterations a second: a check every 0.4-4 ms, a clock_gettime
 * each (~25 ns). After every sleep too (the next iteration checks), since a sleeping engine
 * iterates slowly. */
#define MR_CLOCK_CHECK_ITERS 4096u

/* Shard 0, every MR_CLOCK_CHECK_ITERS iterations: the TSC clock against CLOCK_MONOTONIC
 * (tsc_clock.h); 1 when it was re-anchored. */
static int mr_clock_check(void)
{
	uint64_t t1, t2, real;

	if (!tclk_on)
		return 0;
	/* The two clocks read back to back; a vCPU preempted between the reads (ms on this
	 * host) would look like drift: such a check is skipped (20 us at the calibrated rate). */
	t1 = rte_rdtsc();
	real = clock_ns();
	t2 = rte_rdtsc();
	if (t2 - t1 > tclk_hz / 50000)
		return 0;
	return mr_tsc_clock_check(&tclk, t1 + (t2 - t1) / 2, real);
}

static unsigned int rx_burst(struct mr_daemon *d, uint64_t now)
{
	struct rte_mbuf *bufs[MR_RX_BURST], *done[MR_RX_BURST];
	uint16_t n = mr_dpdk_port_rx_burst(d->port, 0, bufs, MR_RX_BURST);
	uint16_t i, ndone = 0;

	/* A request in: its response and ACK go out soon, through lines the peer holds. */
	if (n > 0)
		mr_dpdk_port_tx_warm(d->port);

	for (i = 0; i < n; i++) {
		uint32_t len;
		const uint8_t *f = mr_dpdk_mbuf_frame(bufs[i], d->scratch, d->max_frame, &len);

		/* mr_shard_dispatch() may take this mbuf to another shard (then rx_cur is NULL). */
		d->rx_cur = bufs[i];
		if (f == NULL) {
			d->st.rx_too_long++;
		} else {
			/* The capture shows what arrived on the wire, before the rx impairment. */
			mr_engine_pcap(d, f, len);
			/* Writable view of the same bytes (mbuf data or our scratch copy): the rx
			 * impairment marks CE or flips bits in place. */
			mr_engine_rx_impaired(d, f == d->scratch ? d->scratch :
					      rte_pktmbuf_mtod(bufs[i], uint8_t *), len, now);
		}
		if (d->rx_cur != NULL)
			done[ndone++] = d->rx_cur;
		d->rx_cur = NULL;
	}
	rte_pktmbuf_free_bulk(done, ndone); /* one return to the pool per burst */
	return n;
}

static void idle_sleep(uint32_t us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* The idle back-off never sleeps past the next delayed (impaired) frame's due time, nor past the
 * transport's next timer: a pacer release (DCQCN rate / MetaRoCE CC), a delayed ACK, a TLP. An
 * engine that overslept those paced at its sleep granularity, not at the controller's rate, and
 * its late ACKs read as queueing delay to the peer's delay-based CC (Swift, SIGCOMM'20). */
static uint32_t sleep_bounded(const struct mr_daemon *d, uint32_t us)
{
	uint64_t due = mr_engine_impair_next_due(d), now, t = mr_ctx_next_expiry(d->ctx);

	if (t < due)
		due = t;

	if (due == UINT64_MAX)
		return us;
	now = mr_now_ns();
	if (due <= now)
		return 0;
	if (due - now >= (uint64_t)us * 1000)
		return us;
	return (uint32_t)((due - now + 999) / 1000);
}

/* Hand the port's queued frames to the PMD. d->tx_pending is set only where frames were
 * queued on the port (engine_tx.c): a shard without the port (lcores > 1) sends through its tx
 * ring, which shard 0 drains (shard.c), and never flushes. What the PMD did not take waits for
 * the next call. */
static void tx_flush_pending(struct mr_daemon *d)
{
	if (!d->tx_pending)
		return;
	mr_dpdk_port_tx_flush(d->port, 0);
	d->tx_pending = mr_dpdk_port_tx_backlog(d->port, 0) > 0;
}

/* Build and send now what the transport has (ACKs that mr_ctx_ack_early released). True if the
 * PMD left frames waiting. */
static bool send_now(struct mr_daemon *d)
{
	mr_engine_tx_transport(d, mr_now_ns(), MR_TX_BUDGET);
	tx_flush_pending(d);
	return d->tx_pending;
}

/* Light-load sleep ([engine] load_sleep_max_us; OVS-DPDK's pmd-sleep-max has the same aim): an
 * engine that keeps up with its load sleeps between iterations and gives its CPU back for the
 * rest. Each sleep costs a system call, a timer and a wake-up: about 10 us of CPU on this
 * paravirtualised host (session 13: 147 k fewer sleeps saved 1.5 CPU-seconds). So sleeps are few
 * and long (load_nap.h): the sleep doubles (from 1 us, up to the cap) after an iteration with less
 * than MR_LOAD_NAP_GATHER / 2 of work (frames received, app requests, packets built) and halves
 * after one with MR_LOAD_NAP_GATHER or more, so that under any load below that the engine sleeps
 * the cap and then drains everything that gathered in one iteration (MR_RX_DRAIN_BURSTS). Halving
 * at one rx burst (32, until session 13) held a receiver at 1.4 Mframes/s in 12-25 us sleeps: 30 k
 * sleeps a second, most of its CPU in the kernel. A full transmit budget or a transmit backlog (a
 * saturated sender) ends the sleep at once. What a sleep lets gather stays in the port's ring
 * (MR_LOAD_NAP_GATHER is an eighth of memif's 4096), and the sleep, bounded like the idle one by
 * the next timer, delays ACKs by up to the cap: the sender's window (max_inflight) must cover the
 * line rate times the cap plus the round trip, else it stalls on the sleeping receiver (256
 * packets at 1.4 Mframes/s is 180 us: 31-32 Gb/s against 41-55 with 1024). Off by default: it
 * costs latency (a ping-pong waits up to the cap) and, with a closed-loop app on another CPU,
 * message rate; for bulk transfer it saves the receiving engine's polling. */
static void load_sleep(struct mr_daemon *d, struct mr_engine_loop *l, unsigned int work)
{
	uint32_t us;

	l->nap_us = mr_load_nap_next(l->nap_us, work, l->tx_got >= MR_TX_BUDGET || d->tx_pending,
				     d->load_sleep_max_us);
	if (l->nap_us == 0)
		return;
	/* The responder's delayed ACK (4 us after a run's last packet) would cut every sleep
	 * short: the ACKs it would send during the sleep go now instead. */
	if (mr_ctx_ack_early(d->ctx, mr_now_ns() + (uint64_t)l->nap_us * 1000) > 0 &&
	    send_now(d))
		return;
	us = sleep_bounded(d, l->nap_us);
	if (us > 0) {
		d->st.load_sleeps++;
		idle_sleep(us);
		l->clock_count = MR_CLOCK_CHECK_ITERS;
	}
}

/* An idle engine about to yield its CPU may not get it back for a scheduler turn of the app it
 * yields to (tens of microseconds on a shared CPU), longer than the responder's delayed ACK
 * (RC_DELAYED_ACK_NS): the ACKs it owes go now. Acknowledging earlier than the coalescing rule
 * would is always allowed (IBA 9.7.5.1.2: an ACK covers every PSN before it). Without this, a
 * posting app that shares the CPU finds its window short of what this engine received but had
 * not yet acknowledged, and its next turn posts less: the turns on that CPU shrink and the
 * switches between them grow in share. */
#define YIELD_ACK_NS 5000u /* covers the transport's 4 us delayed ACK from a run's last packet */

static void yield_acked(struct mr_daemon *d)
{
	if (mr_ctx_ack_early(d->ctx, mr_now_ns() + YIELD_ACK_NS) > 0)
		(void)send_now(d);
}

/* The control thread asked for a snapshot of this shard's counters (daemon.h). */
static void serve_snapshot(struct mr_daemon *d)
{
	uint32_t req = atomic_load_explicit(&d->snap_req, memory_order_acquire);

	if (req == atomic_load_explicit(&d->snap_done, memory_order_relaxed))
		return;
	mr_shard_snapshot(d);
	atomic_store_explicit(&d->snap_done, req, memory_order_release);
}

#define LINK_POLL_NS 100000000ull /* 10 link reads a second: a control-path call */

/* The link as shard 0 last read it (bit 0: up, the rest: speed in Mb/s); other shards, which
 * must not call ethdev, take it from here. */
static _Atomic uint32_t link_word = UINT32_MAX;

/* memif's transmit-ring warming (drivers/dpdk/memif_warm.h) follows the link; its state is
 * logged when it changes. */
static void follow_warm(struct mr_daemon *d, bool up, bool first)
{
	int was = d->warm_state, now = mr_dpdk_port_warm_follow(d->port, up);

	d->warm_state = now;
	if ((now == was && !first) || now == -EOPNOTSUPP || now == -ENOLINK)
		return;
	if (now == 0)
		mr_log(MR_LOG_INFO, "port %u: memif transmit ring warmed ahead of responses",
		       d->cfg.port_id);
	else
		mr_log(MR_LOG_INFO, "port %u: memif transmit ring not warmed: %s", d->cfg.port_id,
		       now == -EEXIST ? "more than one memif region in this process" :
		       now == -EPROTO ? "region not laid out as expected" : strerror(-now));
}

/* Follow link changes into the backend (port state for query_port, the CC's line rate); when
 * the link comes up, announce our address again (RFC 5227 3) since the first announcement may
 * have gone nowhere. */
static void follow_link(struct mr_daemon *d, uint32_t *seen)
{
	uint32_t w;

	if (d->shard_id == 0) {
		struct mr_dpdk_link l = {0};

		if (mr_dpdk_port_link(d->port, 0, &l) < 0)
			return;
		follow_warm(d, l.up, *seen == UINT32_MAX);
		w = (uint32_t)l.up | (l.speed_mbps & 0x7fffffffu) << 1;
		atomic_store_explicit(&link_word, w, memory_order_relaxed);
	} else {
		w = atomic_load_explicit(&link_word, memory_order_relaxed);
		if (w == UINT32_MAX)
			return;
	}
	if (w == *seen)
		return;
	mr_backend_set_port_up(d->be, w & 1);
	mr_backend_set_link_rate(d->be, (uint64_t)(w >> 1) * 1000000ull);
	if (d->shard_id == 0 && *seen != UINT32_MAX) {
		mr_log(MR_LOG_INFO, "port %u: link %s (%u Mb/s)", d->cfg.port_id,
		       (w & 1) ? "up" : "down", w >> 1);
		if ((w & 1) && d->neigh != NULL) {
			int len = d->cfg.has_ipv4 ?
				  mr_neigh_gratuitous_arp(d->neigh, d->scratch, d->max_frame) :
				  mr_neigh_unsolicited_na(d->neigh, d->scratch, d->max_frame);

			if (len > 0 && mr_engine_tx_copy(d, d->scratch, (uint32_t)len) >= 0)
				d->tx_pending = true;
		}
	}
	*seen = w;
}

void mr_engine_loop_init(struct mr_daemon *d, struct mr_engine_loop *l)
{
	l->next_link = 0;
	l->link_seen = UINT32_MAX;
	l->next_stats = d->stats_every_ns ? mr_now_ns() + d->stats_every_ns : UINT64_MAX;
	l->idle = 0;
	l->tx_got = 0;
	l->nap_us = 0;
	l->clock_count = 0;
	l->ctl_count = 0;
	l->ctl_period_ns = 0;
	l->next_ctl = 0;
	l->ctl_now = false;
	l->prev = mr_now_ns();
}

unsigned int mr_engine_iter_rx(struct mr_daemon *d, uint64_t now)
{
	unsigned int work = 0;

	/* Drain rx first (daemon.h, MR_RX_DRAIN_BURSTS): ACKs before timers and tx. */
	if (d->shard_id == 0) {
		for (unsigned int b = 0; b < MR_RX_DRAIN_BURSTS; b++) {
			unsigned int got;

			/* Back-pressure: a shard's full ring leaves frames in the port. */
			if (d->nshards > 1 && !mr_shard_rx_room(d)) {
				d->st.rx_backpressure++;
				break;
			}
			got = rx_burst(d, now);

			work += got;
			if (got < MR_RX_BURST)
				break;
		}
		if (d->nshards > 1)
			work += mr_shard_drain_tx_rings(d, now);
	} else {
		work += mr_shard_rx_ring(d, now);
	}
	return work;
}

unsigned int mr_engine_iter_rest(struct mr_daemon *d, struct mr_engine_loop *l, uint64_t now,
				 unsigned int work)
{
	int r;

	if (d->shard_id == 0 && ++l->clock_count >= MR_CLOCK_CHECK_ITERS) {
		l->clock_count = 0;
		if (mr_clock_check() > 0)
			d->st.clock_resyncs++;
	}

	/* When idling the loop is slow anyway, so control requests are served every time. An
	 * embedded engine (ctl_period_ns) serves them by the clock instead: its app's thread
	 * polls in short iterations, and the socket check is a system call (epoll_wait), micro-
	 * seconds on a paravirtualised host, that every 64th of them would pay. */
	if (l->ctl_period_ns != 0 ? l->ctl_now || now >= l->next_ctl :
	    ++l->ctl_count >= d->ctl_every || l->idle >= MR_IDLE_SPINS) {
		l->ctl_count = 0;
		l->next_ctl = now + l->ctl_period_ns;
		if (d->fd_ring != NULL)
			work += mr_shard_adopt_fds(d);
		r = mr_shm_server_poll_ctl(d->srv);
		work += r > 0 ? (unsigned int)r : 0;
		if (d->nshards > 1)
			atomic_store_explicit(&d->pub_sessions,
					      mr_shm_server_nsessions(d->srv),
					      memory_order_relaxed);
	}
	r = mr_shm_server_poll_data(d->srv);
	work += r > 0 ? (unsigned int)r : 0;
	if (mr_ctx_next_expiry(d->ctx) <= now) {
		mr_ctx_on_timer(d->ctx, now);
		d->st.timer_runs++;
		work++;
	}
	if (d->neigh != NULL)
		work += mr_engine_neigh_poll(d, now);
	if (d->imp_buf != NULL)
		work += mr_engine_impair_poll(d, now);
	l->tx_got = mr_engine_tx_transport(d, now, MR_TX_BUDGET);
	work += l->tx_got;
	tx_flush_pending(d);
	/* Completions the transport produced this iteration reach the apps' rings now,
	 * not one idle sleep later. */
	if (work > 0) {
		r = mr_shm_server_poll_data(d->srv);
		(void)r;
	}
	/* The control thread prints the stats (d->dump NULL); this remains for a daemon
	 * run without one. */
	if (d->dump != NULL && *d->dump) {
		*d->dump = 0;
		mr_stats_dump_local(&d, 1, false, true);
	}
	if (now >= l->next_stats) {
		mr_stats_dump_local(&d, 1, false, false);
		l->next_stats = now + d->stats_every_ns;
	}
	/* The control thread's (stats socket, dumps) requests, one shard or several. */
	serve_snapshot(d);
	if (now >= l->next_link) {
		follow_link(d, &l->link_seen);
		l->next_link = now + LINK_POLL_NS;
	}
	if (work > 0) {
		uint64_t took = mr_now_ns() - now;

		if (took > d->st.max_work_ns)
			d->st.max_work_ns = took;
		l->idle = 0;
	}
	return work;
}

unsigned int mr_engine_iter(struct mr_daemon *d, struct mr_engine_loop *l)
{
	uint64_t now = mr_now_ns();

	d->st.iterations++;
	if (now - l->prev > MR_STALL_NS) {
		d->st.stalls++;
		if (now - l->prev > d->st.max_gap_ns)
			d->st.max_gap_ns = now - l->prev;
	}
	l->prev = now;
	return mr_engine_iter_rest(d, l, now, mr_engine_iter_rx(d, now));
}

int mr_engine_run(struct mr_daemon *d)
{
	struct mr_engine_loop l;

	mr_engine_loop_init(d, &l);
	/* Sleeps of a few microseconds: without this, Linux adds its default 50 us timer slack
	 * to every one of them. */
	if (d->idle_sleep_us != 0 || d->load_sleep_max_us != 0)
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	while (!*d->stop) {
		unsigned int work = mr_engine_iter(d, &l);

		if (d->load_sleep_max_us != 0) {
			load_sleep(d, &l, work);
			continue;
		}
		if (work > 0)
			continue;
		if (l.idle < MR_IDLE_SPINS || d->idle_sleep_us == 0) {
			l.idle += l.idle < MR_IDLE_SPINS;
			/* A polling engine beside polling apps on fewer CPUs than pollers (a 2-vCPU
			 * host: two engines, two apps) would otherwise hold its CPU to the end of
			 * the scheduler's slice (ms) while the app it waits for is runnable on the
			 * same CPU: yield it while idle. Alone on its CPU, sched_yield() returns at
			 * once (well under a microsecond per idle iteration). */
			if (l.idle >= MR_YIELD_SPINS && d->idle_yield) {
				yield_acked(d);
				d->st.idle_yields++;
				sched_yield();
			}
		} else {
			uint32_t us = sleep_bounded(d, d->idle_sleep_us);

			if (us > 0) {
				d->st.idle_sleeps++;
				idle_sleep(us);
				l.clock_count = MR_CLOCK_CHECK_ITERS;
			}
		}
	}
	return 0;
}
