/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/dpdk/memif_warm: locating the transmit ring in a memif region built
 * here as DPDK's client lays it out (a memfd named memif_region_0), for either role; refusing
 * regions that are missing, doubled or laid out otherwise; counting and rereading our slot;
 * and warming after the region is gone (prefetches only: no fault).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpdk/memif_warm.h"

#define LOG2 4                        /* 16 slots per ring */
#define SLOTS (1u << LOG2)
#define RING_BYTES (128u + 16u * SLOTS) /* 384 */
#define BSIZE 256u
#define NRINGS 2u                     /* one C2S, one S2C */
#define BUF0 (NRINGS * RING_BYTES)
#define REGION (BUF0 + NRINGS * SLOTS * BSIZE)

struct fake {
	int fd;
	uint8_t *p;
	size_t len;
};

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* A region as DPDK 22.11's memif client initialises it (copy mode): rings, then buffers. */
static void fake_region(struct fake *f, const char *name)
{
	f->len = ((REGION + 4095) / 4096) * 4096;
	f->fd = memfd_create(name, 0);
	assert_true(f->fd >= 0);
	assert_int_equal(ftruncate(f->fd, (off_t)f->len), 0);
	f->p = mmap(NULL, f->len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	assert_true(f->p != MAP_FAILED);
	memset(f->p, 0, f->len);
	for (uint32_t r = 0; r < NRINGS; r++) {
		uint8_t *ring = f->p + r * RING_BYTES;

		put32(ring, MR_MEMIF_COOKIE);
		for (uint32_t s = 0; s < SLOTS; s++) {
			uint8_t *d = ring + 128 + 16 * s;

			put16(d + 2, 0);                                  /* region */
			put32(d + 4, BSIZE);                              /* length */
			put32(d + 8, BUF0 + (r * SLOTS + s) * BSIZE);     /* offset */
		}
	}
	put16(f->p + 6, 5);                   /* C2S head: the client's next slot */
	put16(f->p + RING_BYTES + 64, 9);     /* S2C tail: the server's next slot */
}

static void fake_free(struct fake *f)
{
	if (f->p != NULL)
		munmap(f->p, f->len);
	if (f->fd >= 0)
		close(f->fd);
	f->p = NULL;
	f->fd = -1;
}

static void test_roles(void **state)
{
	struct mr_memif_warm w;
	struct fake f;

	(void)state;
	mr_memif_warm_init(&w);
	fake_region(&f, "memif_region_0");
	assert_int_equal(mr_memif_warm_find(&w, true, BSIZE), 0);
	assert_ptr_equal(w.ring, f.p);
	assert_ptr_equal(w.bufs, f.p + BUF0);
	assert_int_equal(w.mask, SLOTS - 1);
	assert_int_equal(w.slot, 5);
	assert_int_equal(w.bsize, BSIZE);
	mr_memif_warm_lines(&w);

	assert_int_equal(mr_memif_warm_find(&w, false, BSIZE), 0);
	assert_ptr_equal(w.ring, f.p + RING_BYTES);
	assert_ptr_equal(w.bufs, f.p + BUF0 + SLOTS * BSIZE);
	assert_int_equal(w.slot, 9);
	mr_memif_warm_lines(&w);

	/* Counted slots; a reread that finds the count right is no slip, one that finds it off
	 * takes the ring's value. */
	mr_memif_warm_sent(&w, 3);
	put16(f.p + RING_BYTES + 64, 12);
	assert_int_equal(mr_memif_warm_resync(&w), 0);
	assert_int_equal(w.slot, 12);
	assert_int_equal(w.slips, 0);
	mr_memif_warm_sent(&w, 2);
	assert_int_equal(mr_memif_warm_resync(&w), 0);
	assert_int_equal(w.slot, 12);
	assert_int_equal(w.slips, 1);
	/* the 16-bit index wraps as the ring's does */
	put16(f.p + RING_BYTES + 64, 65535);
	assert_int_equal(mr_memif_warm_resync(&w), 0);
	mr_memif_warm_sent(&w, 2);
	assert_int_equal(w.slot, 1);

	/* The PMD unmapped the region (a disconnect): warming still only prefetches, and the
	 * next reread finds it gone and turns warming off. */
	fake_free(&f);
	mr_memif_warm_lines(&w);
	assert_int_equal(mr_memif_warm_resync(&w), -EFAULT);
	assert_null(w.ring);
	mr_memif_warm_lines(&w);
	assert_int_equal(mr_memif_warm_resync(&w), -ENOENT);
	mr_memif_warm_off(&w);
}

static void test_not_found(void **state)
{
	struct mr_memif_warm w;
	struct fake f, g;

	(void)state;
	mr_memif_warm_init(&w);
	assert_int_equal(mr_memif_warm_find(&w, true, BSIZE), -ENOENT);
	assert_null(w.ring);
	/* another name that starts the same is not region 0 */
	fake_region(&f, "memif_region_01");
	assert_int_equal(mr_memif_warm_find(&w, true, BSIZE), -ENOENT);
	fake_free(&f);
	/* two memif ports in one process: which is ours is not known */
	fake_region(&f, "memif_region_0");
	fake_region(&g, "memif_region_0");
	assert_int_equal(mr_memif_warm_find(&w, true, BSIZE), -EEXIST);
	assert_null(w.ring);
	fake_free(&g);
	fake_free(&f);
}

/* Each damage alone makes find refuse the region (-EPROTO) and leave warming off. */
static void test_layout_checked(void **state)
{
	struct mr_memif_warm w;
	struct fake f;

	(void)state;
	mr_memif_warm_init(&w);
	for (int c = 0; c < 7; c++) {
		bool client = c != 3 && c != 4;
		uint32_t bsize = BSIZE;

		fake_region(&f, "memif_region_0");
		switch (c) {
		case 0: put32(f.p, 0); break;                               /* ring 0's cookie */
		case 1: put32(f.p + RING_BYTES, 0); break;                  /* no second ring */
		case 2: bsize = 2 * BSIZE; break;                           /* port's bsize differs */
		case 3: put16(f.p + RING_BYTES + 128 + 2, 1); break;        /* buffers elsewhere */
		case 4: put32(f.p + RING_BYTES + 128 + 16 * (SLOTS - 1) + 8,
			      (uint32_t)f.len); break;                      /* a buffer past the end */
		case 5: put32(f.p + 128 + 8, BUF0 + 8); break;              /* first buffer misplaced */
		case 6: put32(f.p + 128 + 16 + 8, BUF0 + BSIZE + 64); break; /* slots not bsize apart */
		}
		assert_int_equal(mr_memif_warm_find(&w, client, bsize), -EPROTO);
		assert_null(w.ring);
		mr_memif_warm_lines(&w); /* off: nothing */
		fake_free(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_layout_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
