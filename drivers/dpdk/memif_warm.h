/* SPDX-License-Identifier: MIT
 * Warming net_memif's transmit ring ahead of a transmit (drivers/dpdk internal; no DPDK here).
 *
 * On this machine a cache line moves between the two CPUs in 80-250 ns, and a memif transmit
 * waits for up to three such moves before its frame is visible to the peer: the peer's ring
 * index it reads for the free count (the client's C2S transmit reads the server's tail), and the
 * descriptor and buffer lines it writes, which the peer read last (x86 stores become visible in
 * order, so the index store that publishes the frame waits for them). A request/response engine
 * knows a transmit is coming as soon as a frame arrives; asking for those lines then (a read
 * prefetch for the index, PREFETCHW for what it writes) overlaps the moves with the work in
 * between (8 B write ping-pong, session 26: one-way p50 1.52 -> 1.29 us).
 *
 * Only prefetch instructions touch the shared region in the data path: they never fault, so a
 * region the PMD unmapped at a disconnect costs nothing but the hint. The ring is located once
 * per link-up from /proc/self/maps and read through /proc/self/mem (pread fails where a load
 * would fault), using the memif protocol's layout (libmemif / DPDK memif.h, protocol 2.0):
 *   region 0 = rings (C2S rings, then S2C rings), then the packet buffers (copy mode);
 *   a ring  = line 0 {u32 cookie 0x3E31F20, u16 flags, u16 head}, line 1 {u16 tail},
 *             then 2^k descriptors of 16 bytes {u16 flags, u16 region, u32 length,
 *             u32 offset, u32 metadata};
 *   the client sends on C2S and owns its head, the server sends on S2C and owns its tail.
 * Every offset found is checked against the mapping and against the descriptors themselves
 * (buffer i at desc[0].offset + i * bsize, in region 0); anything else leaves warming off.
 * Our next slot is counted from the frames sent and read again from the ring on every link
 * poll (mr_memif_warm_resync), so that a miscount only ever points a hint at another slot.
 */
#ifndef MR_DRIVERS_DPDK_MEMIF_WARM_H
#define MR_DRIVERS_DPDK_MEMIF_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_MEMIF_COOKIE 0x3E31F20u /* memif protocol: first word of every ring */
#define MR_MEMIF_RING_HDR 128u     /* two cache lines before the descriptors */
#define MR_MEMIF_DESC 16u
#define MR_MEMIF_WARM_SLOTS 2u     /* slots warmed per call: a response and its ACK */

struct mr_memif_warm {
	const uint8_t *ring; /* our transmit ring (NULL: warming off) */
	const uint8_t *bufs; /* slot 0's packet buffer */
	uint32_t bsize;      /* bytes between consecutive slots' buffers */
	uint16_t mask;       /* ring size - 1 */
	uint16_t slot;       /* our next transmit slot (own index), counted */
	bool client;         /* we send on C2S (read the server's tail) */
	bool write_hint;     /* the CPU has PREFETCHW (else a read prefetch) */
	int mem_fd;          /* /proc/self/mem, for checked reads of the region */
	uint64_t slips;      /* resyncs that found the count off */
};

/* Before any other call: warming off, nothing open. */
void mr_memif_warm_init(struct mr_memif_warm *w);

/* Turns warming off and closes what find opened. */
void mr_memif_warm_off(struct mr_memif_warm *w);

/* Locates this process's memif region (the mapping named memif_region_0, which must be the
 * only one), our transmit ring in it and its packet buffers, and reads our own index. client:
 * this side's memif role; bsize: the port's buffer size (devarg), checked against the
 * descriptors. 0, or negative errno (-ENOENT: no such mapping; -EPROTO: layout not as
 * expected; -EEXIST: more than one memif region) with warming off. */
int mr_memif_warm_find(struct mr_memif_warm *w, bool client, uint32_t bsize);

/* Reads our own index again (a link poll, not the data path). 0 or negative errno (then off). */
int mr_memif_warm_resync(struct mr_memif_warm *w);

/* The caller sent frames that took n slots. */
static inline void mr_memif_warm_sent(struct mr_memif_warm *w, uint16_t n)
{
	w->slot = (uint16_t)(w->slot + n);
}

/* PREFETCHW (CPUID 0x80000001 ECX bit 8; write_hint says the CPU has it): the line comes in
 * owned, so the transmit's stores to it need no further transfer. Emitted directly: the build's
 * -march may predate it. */
static inline void mr_memif_pfw(const void *p)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* Prefetches what the next transmit of up to MR_MEMIF_WARM_SLOTS frames reads and writes. */
static inline void mr_memif_warm_lines(const struct mr_memif_warm *w)
{
	if (w->ring == NULL)
		return;
	/* The PMD's transmit starts by reading both indices: ours, which the peer polls (the
	 * peer's reads took our copy of its line: measured, a read here 0.08 us off the one-way
	 * latency), and the peer's, for the free count. The client's receive stores its S2C head
	 * on every poll, so a server's copy of that line never stays: asking for it would only
	 * make the client's next store wait. */
	__builtin_prefetch(w->ring + 64); /* line 1: tail (the client's free count, the server's own) */
	if (w->client)
		__builtin_prefetch(w->ring); /* line 0: cookie, flags, our head */
	for (unsigned int i = 0; i < MR_MEMIF_WARM_SLOTS; i++) {
		uint32_t s = (uint16_t)(w->slot + i) & w->mask;
		const uint8_t *d = w->ring + MR_MEMIF_RING_HDR + (size_t)s * MR_MEMIF_DESC;
		const uint8_t *b = w->bufs + (size_t)s * w->bsize;

		if (w->write_hint) {
			mr_memif_pfw(d);
			mr_memif_pfw(b);
			mr_memif_pfw(b + 64);
		} else {
			__builtin_prefetch(d);
			__builtin_prefetch(b);
			__builtin_prefetch(b + 64);
		}
	}
}

#endif
