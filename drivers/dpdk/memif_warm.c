/* SPDX-License-Identifier: MIT
 * Locating net_memif's transmit ring for warming (memif_warm.h): /proc/self/maps for the region,
 * checked reads through /proc/self/mem for its layout. Control path only (a link poll).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "memif_warm.h"

#define REGION_NAME "memif_region_0" /* DPDK's memfd name for region 0 */
#define MAX_LOG2_RING 14             /* memif protocol's largest ring (2^14 descriptors) */

void mr_memif_warm_init(struct mr_memif_warm *w)
{
	memset(w, 0, sizeof(*w));
	w->mem_fd = -1;
}

void mr_memif_warm_off(struct mr_memif_warm *w)
{
	if (w->mem_fd >= 0)
		close(w->mem_fd);
	w->mem_fd = -1;
	w->ring = NULL;
	w->bufs = NULL;
}

/* The one mapping of REGION_NAME: its start and length. -ENOENT or -EEXIST. */
static int find_region(uintptr_t *base, size_t *len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int found = 0;

	if (f == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long a, b;
		const char *name = strstr(line, REGION_NAME);

		/* the name ends there: memif_region_0, not memif_region_01 */
		if (name == NULL || (name[sizeof(REGION_NAME) - 1] != '\0' &&
				     name[sizeof(REGION_NAME) - 1] != '\n' &&
				     name[sizeof(REGION_NAME) - 1] != ' '))
			continue;
		if (sscanf(line, "%lx-%lx", &a, &b) != 2 || b <= a)
			continue;
		/* A region mapped in pieces would show several lines; only a whole one is used. */
		found++;
		*base = (uintptr_t)a;
		*len = (size_t)(b - a);
	}
	fclose(f);
	return found == 1 ? 0 : found == 0 ? -ENOENT : -EEXIST;
}

/* Reads n bytes at region offset off, or fails where a load would have faulted. */
static int rd(const struct mr_memif_warm *w, uintptr_t base, size_t len, size_t off, void *out,
	      size_t n)
{
	if (off > len || n > len - off)
		return -ERANGE;
	if (pread(w->mem_fd, out, n, (off_t)(base + off)) != (ssize_t)n)
		return -EFAULT;
	return 0;
}

static int rd32(const struct mr_memif_warm *w, uintptr_t base, size_t len, size_t off,
		uint32_t *v)
{
	return rd(w, base, len, off, v, sizeof(*v));
}

static bool cpu_has_prefetchw(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	unsigned int a, b, c, d;

	return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8)) != 0;
#else
	return false;
#endif
}

static int own_index(const struct mr_memif_warm *w, uintptr_t base, size_t len, size_t ring_off,
		     uint16_t *idx)
{
	/* the client publishes on C2S by its head (line 0), the server on S2C by its tail */
	return rd(w, base, len, ring_off + (w->client ? 6 : 64), idx, sizeof(*idx));
}

int mr_memif_warm_find(struct mr_memif_warm *w, bool client, uint32_t bsize)
{
	uintptr_t base = 0;
	size_t len = 0, ring_bytes = 0, ring_off, nrings;
	uint32_t v, off0, off1, offl, k;
	uint16_t region, idx;
	int rc;

	mr_memif_warm_off(w);
	w->client = client;
	w->slips = 0;
	rc = find_region(&base, &len);
	if (rc < 0)
		return rc;
	w->mem_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (w->mem_fd < 0) {
		rc = -errno;
		goto fail;
	}
	/* Ring 0 starts the region; ring 1 follows it after 2^k descriptors. */
	rc = -EPROTO;
	if (rd32(w, base, len, 0, &v) < 0 || v != MR_MEMIF_COOKIE)
		goto fail;
	for (k = 1; k <= MAX_LOG2_RING; k++) {
		size_t rb = MR_MEMIF_RING_HDR + ((size_t)MR_MEMIF_DESC << k);

		if (rd32(w, base, len, rb, &v) == 0 && v == MR_MEMIF_COOKIE) {
			ring_bytes = rb;
			break;
		}
	}
	if (ring_bytes == 0)
		goto fail;
	/* The first buffer (ring 0's descriptor 0) follows the last ring: the ring count, half
	 * of them C2S (our port has as many rx as tx queues, and so has the peer's). */
	if (rd32(w, base, len, MR_MEMIF_RING_HDR + 8, &off0) < 0 || off0 % ring_bytes != 0)
		goto fail;
	nrings = off0 / ring_bytes;
	if (nrings < 2 || nrings % 2 != 0)
		goto fail;
	for (size_t i = 0; i < nrings; i++)
		if (rd32(w, base, len, i * ring_bytes, &v) < 0 || v != MR_MEMIF_COOKIE)
			goto fail;
	ring_off = client ? 0 : (nrings / 2) * ring_bytes;
	w->mask = (uint16_t)((1u << k) - 1);
	/* Our ring's buffers: in region 0, bsize apart, slot by slot, all inside the mapping. */
	if (rd32(w, base, len, ring_off + MR_MEMIF_RING_HDR + 8, &off0) < 0 ||
	    rd32(w, base, len, ring_off + MR_MEMIF_RING_HDR + MR_MEMIF_DESC + 8, &off1) < 0 ||
	    rd32(w, base, len, ring_off + MR_MEMIF_RING_HDR + (size_t)w->mask * MR_MEMIF_DESC + 8,
		 &offl) < 0 ||
	    rd(w, base, len, ring_off + MR_MEMIF_RING_HDR + 2, &region, sizeof(region)) < 0)
		goto fail;
	if (region != 0 || off1 <= off0 || off1 - off0 != bsize ||
	    offl != off0 + (uint32_t)w->mask * bsize || (size_t)offl + bsize > len)
		goto fail;
	if (own_index(w, base, len, ring_off, &idx) < 0)
		goto fail;
	w->bsize = bsize;
	w->slot = idx;
	w->write_hint = cpu_has_prefetchw();
	w->bufs = (const uint8_t *)(base + off0);
	w->ring = (const uint8_t *)(base + ring_off);
	return 0;
fail:
	mr_memif_warm_off(w);
	return rc;
}

int mr_memif_warm_resync(struct mr_memif_warm *w)
{
	uint16_t idx;

	if (w->ring == NULL)
		return -ENOENT;
	/* the ring's own offsets, relative to itself: the region's base is not kept */
	if (pread(w->mem_fd, &idx, sizeof(idx),
		  (off_t)(uintptr_t)(w->ring + (w->client ? 6 : 64))) != (ssize_t)sizeof(idx)) {
		mr_memif_warm_off(w);
		return -EFAULT;
	}
	if (idx != w->slot) {
		w->slips++;
		w->slot = idx;
	}
	return 0;
}
