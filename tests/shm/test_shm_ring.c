/* SPDX-License-Identifier: MIT
 * Shared-memory ABI: entry layouts, ring header layout, SPSC ring arithmetic across the 2^32
 * index wrap, full/empty, corrupt indices; and the per-session handle table.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metaroce/shm_abi.h"
#include "shm/shm_handle.h"

static void test_layouts(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct mrc_sqe), 512);
	assert_int_equal(sizeof(struct mrc_rqe), 320);
	assert_int_equal(sizeof(struct mrc_cqe), 64);
	assert_int_equal(sizeof(struct mrc_ring_hdr), 256);
	assert_int_equal(offsetof(struct mrc_ring_hdr, prod), 0);
	assert_int_equal(offsetof(struct mrc_ring_hdr, cons), 64);
	/* ABI 3: a one-SGE or 16-byte inline WR is the entry's first line alone. */
	assert_int_equal(offsetof(struct mrc_sqe, u), 48);
	assert_true(offsetof(struct mrc_sqe, u.sge[1]) <= 64);
	assert_true(offsetof(struct mrc_sqe, u.inline_data[16]) <= 64);
	assert_int_equal(offsetof(struct mrc_sqe, u.atomic.sge), offsetof(struct mrc_sqe, u.sge[0]));
	assert_int_equal(offsetof(struct mrc_sqe, u.atomic.compare_add), 64);
	assert_int_equal(offsetof(struct mrc_sqe, u.atomic.swap), 72);
	assert_int_equal(offsetof(struct mrc_sqe, wr_id), 0);
	assert_int_equal(offsetof(struct mrc_sqe, remote_addr), 32);
	assert_int_equal(offsetof(struct mrc_rqe, sge), 64);
	assert_int_equal(offsetof(struct mrc_cqe, qp_num), 32);
	assert_int_equal(sizeof(struct mrc_ctl_req), 256);
	assert_int_equal(sizeof(struct mrc_ctl_resp), 256);
	assert_true(MRC_SQE_INLINE_MAX >= MRC_SQE_MAX_SGE * sizeof(struct mr_sge));
	/* Public QP attribute values equal the transport's (rc.h) and verbs. */
	assert_int_equal(MRC_QP_STATE, 1);
	assert_int_equal(MRC_QP_MAX_QP_RD_ATOMIC, 1 << 13);
	assert_int_equal(MRC_QP_TRANSPORT, 1 << 14);
	assert_int_equal(MRC_QP_ATTR_MASK_ALL, 0x7fff);
	assert_int_equal(sizeof(struct mrc_qp_attr), 96);
	assert_int_equal(offsetof(struct mrc_qp_attr, n_entropies), 90);
	assert_int_equal(MRC_TRANSPORT_METAROCE, 1);
	assert_int_equal(MRC_CC_METAROCE, 2);
	assert_int_equal(mrc_ring_bytes(4, 64), 256 + 256);
	assert_int_equal(mrc_ring_bytes(1, 320), 256 + 320);
}

struct ring4 {
	struct mrc_ring_hdr h;
	uint64_t e[4];
};

/* Producer and consumer indices start just below 2^32 and cross the wrap. */
static void test_ring_wrap(void **state)
{
	struct ring4 *r = aligned_alloc(64, sizeof(struct ring4) + 64);
	uint32_t prod = UINT32_MAX - 5, cons = prod, i, n, expect = 0, next = 0;

	(void)state;
	memset(r, 0, sizeof(*r));
	atomic_store(&r->h.prod, prod);
	atomic_store(&r->h.cons, cons);
	for (i = 0; i < 40; i++) {
		/* produce up to 3 */
		for (n = 0; n < 3 && mrc_ring_free(&r->h, prod, 4) > 0; n++) {
			*(uint64_t *)mrc_ring_entry(&r->h, prod, 3, 8) = next++;
			prod++;
		}
		mrc_ring_publish(&r->h, prod);
		assert_true(mrc_ring_ready(&r->h, cons) <= 4);
		/* consume up to 2 */
		for (n = 0; n < 2 && mrc_ring_ready(&r->h, cons) > 0; n++) {
			assert_int_equal(*(uint64_t *)mrc_ring_entry(&r->h, cons, 3, 8), expect);
			expect++;
			cons++;
		}
		mrc_ring_consume(&r->h, cons);
	}
	assert_true(prod < 1000); /* wrapped */
	/* drain */
	while (mrc_ring_ready(&r->h, cons) > 0) {
		assert_int_equal(*(uint64_t *)mrc_ring_entry(&r->h, cons, 3, 8), expect);
		expect++;
		mrc_ring_consume(&r->h, ++cons);
	}
	assert_int_equal(expect, next);
	assert_true(next > 40);
	free(r);
}

static void test_ring_full_empty(void **state)
{
	struct ring4 *r = aligned_alloc(64, sizeof(struct ring4) + 64);
	uint32_t prod = 0, i;

	(void)state;
	memset(r, 0, sizeof(*r));
	assert_int_equal(mrc_ring_ready(&r->h, 0), 0);        /* empty */
	assert_int_equal(mrc_ring_free(&r->h, prod, 4), 4);
	for (i = 0; i < 4; i++)
		mrc_ring_publish(&r->h, ++prod);
	assert_int_equal(mrc_ring_free(&r->h, prod, 4), 0);   /* full */
	assert_int_equal(mrc_ring_ready(&r->h, 0), 4);
	mrc_ring_consume(&r->h, 1);
	assert_int_equal(mrc_ring_free(&r->h, prod, 4), 1);
	/* A consumer index ahead of the producer (corrupt peer) never yields free slots > size. */
	mrc_ring_consume(&r->h, prod + 7);
	assert_int_equal(mrc_ring_free(&r->h, prod, 4), 0);
	/* A producer index published too far ahead is visible as ready > size. */
	mrc_ring_publish(&r->h, 1000);
	assert_true(mrc_ring_ready(&r->h, 0) > 4);
	free(r);
}

/* mrc_ring_free_seen: the consumer's line is read again only when the index last read shows
 * fewer than `want` free slots; the answer never exceeds what is really free, and a corrupt
 * consumer index gives 0, at the wrap too. */
static void test_ring_free_seen(void **state)
{
	struct ring4 *r = aligned_alloc(64, sizeof(struct ring4) + 64);
	uint32_t prod = 0xfffffffeu, seen = prod;

	(void)state;
	memset(r, 0, sizeof(*r));
	mrc_ring_consume(&r->h, prod);
	assert_int_equal(mrc_ring_free_seen(&r->h, prod, 4, &seen, 1), 4);
	/* Not read while it shows room: a corrupt index there goes unnoticed until needed. */
	mrc_ring_consume(&r->h, prod + 100);
	prod += 3;                                               /* across 2^32 */
	assert_int_equal(mrc_ring_free_seen(&r->h, prod, 4, &seen, 1), 1);
	assert_int_equal(seen, 0xfffffffeu);
	/* Wanting 2 reads it: corrupt (ahead of the producer), so no room. */
	assert_int_equal(mrc_ring_free_seen(&r->h, prod, 4, &seen, 2), 0);
	assert_int_equal(seen, 0xfffffffeu + 100);
	/* The consumer took two: read again and counted. */
	mrc_ring_consume(&r->h, 0xfffffffeu + 2);
	assert_int_equal(mrc_ring_free_seen(&r->h, prod, 4, &seen, 1), 3);
	assert_int_equal(seen, 0);
	prod += 3;                                               /* full */
	mrc_ring_consume(&r->h, 2);                              /* not read yet ... */
	assert_int_equal(mrc_ring_free_seen(&r->h, prod, 4, &seen, 1), 2); /* ... now it is */
	assert_int_equal(seen, 2);
	free(r);
}

static void test_handles(void **state)
{
	struct mr_shm_htab a, b;
	int x = 1, y = 2, z = 3;
	uint32_t ha, hb, ha2;

	(void)state;
	assert_int_equal(mr_shm_htab_init(&a, 0, 1), -EINVAL);
	assert_int_equal(mr_shm_htab_init(&a, 2, 0x1111), 0);
	assert_int_equal(mr_shm_htab_init(&b, 2, 0x7777), 0);
	ha = mr_shm_htab_add(&a, MR_SHM_OBJ_QP, &x);
	hb = mr_shm_htab_add(&b, MR_SHM_OBJ_QP, &y);
	assert_int_not_equal(ha, 0);
	assert_int_not_equal(ha, hb);                             /* salts differ */
	assert_ptr_equal(mr_shm_htab_get(&a, ha, MR_SHM_OBJ_QP), &x);
	assert_null(mr_shm_htab_get(&a, ha, MR_SHM_OBJ_CQ));      /* wrong type */
	assert_null(mr_shm_htab_get(&b, ha, MR_SHM_OBJ_QP));      /* other session's handle */
	assert_null(mr_shm_htab_get(&a, 0, MR_SHM_OBJ_QP));
	assert_null(mr_shm_htab_get(&a, 0xffff, MR_SHM_OBJ_QP));  /* index out of range */
	assert_ptr_equal(mr_shm_htab_del(&a, ha, MR_SHM_OBJ_QP), &x);
	assert_null(mr_shm_htab_get(&a, ha, MR_SHM_OBJ_QP));      /* stale after free */
	ha2 = mr_shm_htab_add(&a, MR_SHM_OBJ_QP, &z);
	assert_int_equal(ha2 & 0xffff, ha & 0xffff);              /* slot reused ... */
	assert_int_not_equal(ha2, ha);                            /* ... new generation */
	assert_null(mr_shm_htab_get(&a, ha, MR_SHM_OBJ_QP));
	assert_int_not_equal(mr_shm_htab_add(&a, MR_SHM_OBJ_PD, &x), 0);
	assert_int_equal(mr_shm_htab_add(&a, MR_SHM_OBJ_PD, &y), 0); /* full */
	mr_shm_htab_fini(&a);
	mr_shm_htab_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_ring_wrap),
		cmocka_unit_test(test_ring_full_empty),
		cmocka_unit_test(test_ring_free_seen),
		cmocka_unit_test(test_handles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
