/* SPDX-License-Identifier: MIT
 * Verification helpers shared by the simulated transfer scenarios (see sim_verify.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_rng.h"
#include "sim/sim_verify.h"

void mr_sim_fill_pattern(uint8_t *p, uint64_t len, uint64_t seed)
{
	uint64_t st = seed, v = 0;

	for (uint64_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			v = mr_sim_splitmix64(&st);
		p[i] = (uint8_t)(v >> (8 * (i % 8)));
	}
}

void mr_sim_verify_strided(const uint8_t *got, const uint8_t *want, uint64_t len,
			   uint64_t stride, uint64_t size, uint8_t guard, uint64_t *ok,
			   uint64_t *bad)
{
	for (uint64_t k = 0; k < len; k++) {
		uint8_t w = k % stride >= size ? guard : want[k];

		if (got[k] == w)
			(*ok)++;
		else
			(*bad)++;
	}
}

int mr_sim_msgs_init(struct mr_sim_msgs *m, uint32_t count)
{
	memset(m, 0, sizeof(*m));
	m->count = count;
	m->t_post = calloc(count ? count : 1, sizeof(uint64_t));
	m->t_done = calloc(count ? count : 1, sizeof(uint64_t));
	m->done = calloc(count ? count : 1, 1);
	return m->t_post && m->t_done && m->done ? 0 : -ENOMEM;
}

void mr_sim_msgs_free(struct mr_sim_msgs *m)
{
	free(m->t_post);
	free(m->t_done);
	free(m->done);
	memset(m, 0, sizeof(*m));
}

bool mr_sim_msgs_complete(struct mr_sim_msgs *m, uint64_t i, uint64_t now)
{
	if (i >= m->count || m->done[i])
		return false; /* unknown or repeated completion */
	m->done[i] = 1;
	m->t_done[i] = now;
	m->last_done = now;
	return true;
}

uint64_t mr_sim_msgs_latencies(const struct mr_sim_msgs *m, uint64_t *lat)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < m->count; i++)
		if (m->done[i])
			lat[n++] = m->t_done[i] - m->t_post[i];
	return n;
}

static int cmp_u64(const void *p, const void *q)
{
	uint64_t a = *(const uint64_t *)p, b = *(const uint64_t *)q;

	return a < b ? -1 : a > b;
}

void mr_sim_lat_percentiles(uint64_t *lat, uint64_t n, uint64_t *p50, uint64_t *p99,
			    uint64_t *max)
{
	if (n == 0)
		return;
	qsort(lat, n, sizeof(*lat), cmp_u64);
	*p50 = lat[(n - 1) / 2];
	*p99 = lat[(n - 1) * 99 / 100];
	*max = lat[n - 1];
}

double mr_sim_goodput_gbps(uint64_t bytes, uint64_t elapsed_ns)
{
	return elapsed_ns ? (double)bytes * 8.0 / (double)elapsed_ns : 0.0;
}

void mr_sim_qp_stats_add(struct mr_qp_stats *sum, const struct mr_qp_stats *s)
{
	/* Every field is a uint64_t counter. */
	_Static_assert(sizeof(*s) % sizeof(uint64_t) == 0, "mr_qp_stats is all u64");
	uint64_t a[sizeof(*s) / 8], b[sizeof(*s) / 8];

	memcpy(a, sum, sizeof(a));
	memcpy(b, s, sizeof(b));
	for (size_t k = 0; k < sizeof(a) / 8; k++)
		a[k] += b[k];
	memcpy(sum, a, sizeof(a));
}
