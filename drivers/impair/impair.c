/* SPDX-License-Identifier: MIT
 * The impairment stage (see impair.h). Per frame, in order: the modelled ECN queue (a phantom
 * queue drained at a configured rate, HULL, Alizadeh et al. NSDI'12: it marks but never delays),
 * loss (per-entropy, Gilbert-Elliott or independent), corruption, then delay/jitter/reorder and
 * duplication through a min-heap delay queue ordered by due time (ties: arrival order). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "impair/impair.h"
#include "sim/sim_rng.h"

struct held {
	uint64_t due;
	uint64_t seq;      /* tie-break: FIFO among frames due at the same ns */
	uint32_t len;
	uint8_t *data;
};

struct dir_state {
	struct mr_sim_rng rng;
	bool ge_bad;
	uint64_t q_bytes;  /* phantom queue backlog at q_time */
	uint64_t q_time;
	struct held *heap;
	uint32_t nheld;
	uint64_t seq;
	struct mr_impair_stats st;
};

struct mr_impair {
	struct mr_impair_cfg cfg;
	double ge_p_gb, ge_p_bg;
	uint32_t qlimit;
	struct dir_state d[MR_IMPAIR_NR_DIRS];
};

struct mr_impair *mr_impair_create(const struct mr_impair_cfg *cfg)
{
	struct mr_impair *im;

	if (cfg == NULL || mr_impair_cfg_validate(cfg, NULL, 0) < 0) {
		errno = EINVAL;
		return NULL;
	}
	im = calloc(1, sizeof(*im));
	if (im == NULL)
		return NULL;
	im->cfg = *cfg;
	im->qlimit = cfg->qlimit ? cfg->qlimit : MR_IMPAIR_DEFAULT_QLIMIT;
	if (cfg->burst >= 1 && cfg->loss > 0) {
		/* Gilbert-Elliott with loss 1 in bad, 0 in good: mean burst = 1/p_bg and the
		 * stationary bad probability p_gb/(p_gb+p_bg) equals the requested rate. */
		im->ge_p_bg = 1.0 / cfg->burst;
		im->ge_p_gb = cfg->loss * im->ge_p_bg / (1.0 - cfg->loss);
	}
	for (int k = 0; k < MR_IMPAIR_NR_DIRS; k++) {
		struct dir_state *d = &im->d[k];

		/* Distinct, reproducible streams per direction. */
		mr_sim_rng_seed(&d->rng, cfg->seed * 0x9e3779b97f4a7c15ull + (uint64_t)k + 1);
		d->heap = calloc(im->qlimit, sizeof(*d->heap));
		if (d->heap == NULL) {
			mr_impair_destroy(im);
			errno = ENOMEM;
			return NULL;
		}
	}
	return im;
}

void mr_impair_destroy(struct mr_impair *im)
{
	if (im == NULL)
		return;
	for (int k = 0; k < MR_IMPAIR_NR_DIRS; k++) {
		struct dir_state *d = &im->d[k];

		if (d->heap != NULL)
			for (uint32_t i = 0; i < d->nheld; i++)
				free(d->heap[i].data);
		free(d->heap);
	}
	free(im);
}

static bool held_before(const struct held *a, const struct held *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_swap(struct held *h, uint32_t i, uint32_t j)
{
	struct held t = h[i];

	h[i] = h[j];
	h[j] = t;
}

/* Returns 0, -ENOSPC (queue full) or -ENOMEM. */
static int heap_push(struct mr_impair *im, struct dir_state *d, uint64_t due, const uint8_t *f,
		     uint32_t len)
{
	struct held *h = d->heap;
	uint32_t i;

	if (d->nheld >= im->qlimit)
		return -ENOSPC;
	i = d->nheld;
	h[i].data = malloc(len);
	if (h[i].data == NULL)
		return -ENOMEM;
	memcpy(h[i].data, f, len);
	h[i].len = len;
	h[i].due = due;
	h[i].seq = d->seq++;
	d->nheld++;
	while (i > 0 && held_before(&h[i], &h[(i - 1) / 2])) {
		heap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	return 0;
}

static void heap_pop(struct dir_state *d)
{
	struct held *h = d->heap;
	uint32_t i = 0;

	free(h[0].data);
	h[0] = h[--d->nheld];
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < d->nheld && held_before(&h[l], &h[m]))
			m = l;
		if (r < d->nheld && held_before(&h[r], &h[m]))
			m = r;
		if (m == i)
			break;
		heap_swap(h, i, m);
		i = m;
	}
}

static void ecn_queue(struct mr_impair *im, struct dir_state *d, uint64_t now, uint8_t *frame,
		      uint32_t len, struct mr_impair_verdict *v)
{
	const struct mr_impair_cfg *c = &im->cfg;
	uint64_t drained;

	if (c->ecn_rate_bps == 0)
		return;
	if (now > d->q_time) {
		/* bytes the modelled transmitter sent since the last frame */
		double b = (double)(now - d->q_time) * (double)c->ecn_rate_bps / 8e9;

		drained = b >= (double)d->q_bytes ? d->q_bytes : (uint64_t)b;
		d->q_bytes -= drained;
		d->q_time = now;
	}
	d->q_bytes += len;
	if (d->q_bytes > d->st.ecn_queue_peak)
		d->st.ecn_queue_peak = d->q_bytes;
	/* DCTCP-style instantaneous threshold K (Alizadeh et al., SIGCOMM'10), which is also
	 * DCQCN's Kmin=Kmax step marking. */
	if (d->q_bytes > c->ecn_k_bytes) {
		int r = mr_impair_ecn_mark_ce(frame, len);

		if (r == 1) {
			d->st.ce_marked++;
			v->flags |= MR_IMPAIR_F_CE;
		} else if (r == 0 && mr_impair_ecn_get(frame, len) == 0) {
			d->st.ce_not_ect++;
		}
	}
}

/* Returns the drop reason, or -1 to keep the frame. */
static int lose(struct mr_impair *im, struct dir_state *d, const uint8_t *frame, uint32_t len)
{
	const struct mr_impair_cfg *c = &im->cfg;

	if (c->n_entropy > 0) {
		int sport = mr_impair_udp_sport(frame, len);

		if (sport >= 0) {
			uint16_t e = (uint16_t)((uint16_t)sport - c->entropy_base);

			for (unsigned int i = 0; i < c->n_entropy; i++)
				if (c->entropy[i].entropy == e &&
				    mr_sim_rng_chance(&d->rng, c->entropy[i].loss))
					return MR_IMPAIR_DROP_ENTROPY;
		}
	}
	if (im->ge_p_bg > 0) {
		/* Gilbert 1960 / Elliott 1963: move the state first, then lose in bad. */
		if (d->ge_bad) {
			if (mr_sim_rng_chance(&d->rng, im->ge_p_bg))
				d->ge_bad = false;
		} else if (mr_sim_rng_chance(&d->rng, im->ge_p_gb)) {
			d->ge_bad = true;
			d->st.burst_entries++;
		}
		return d->ge_bad ? MR_IMPAIR_DROP_BURST : -1;
	}
	if (mr_sim_rng_chance(&d->rng, c->loss))
		return MR_IMPAIR_DROP_RANDOM;
	return -1;
}

static void corrupt(struct dir_state *d, uint8_t *frame, uint32_t len)
{
	bool v6;
	int l3 = mr_impair_l3_offset(frame, len, &v6);
	/* From L3 on: L2 corruption is the Ethernet FCS' business (simulated frames carry no FCS).
	 * Switch-rewritable fields the ICRC masks are skipped: a flip there is not corruption any
	 * end-to-end check could see, so the model would only measure the masking. */
	uint32_t start = l3 < 0 ? 0 : (uint32_t)l3;
	uint64_t bit = 0;

	for (int tries = 0; tries < 64; tries++) {
		bit = start * 8ull + mr_sim_rng_upto(&d->rng, (uint64_t)(len - start) * 8 - 1);
		if (l3 < 0 || mr_impair_bit_protected(frame, len, (uint32_t)bit) ||
		    mr_impair_udp_sport(frame, len) < 0)
			break;
	}
	frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
}

int mr_impair_process(struct mr_impair *im, enum mr_impair_dir dir, uint64_t now,
		      uint8_t *frame, uint32_t len, struct mr_impair_verdict *v)
{
	const struct mr_impair_cfg *c;
	struct dir_state *d;
	uint64_t delay;
	int reason, rc;

	if (im == NULL || v == NULL || (unsigned int)dir >= MR_IMPAIR_NR_DIRS)
		return -EINVAL;
	c = &im->cfg;
	d = &im->d[dir];
	v->action = MR_IMPAIR_DELIVER;
	v->flags = 0;
	if (frame == NULL || len == 0 || len > MR_IMPAIR_FRAME_MAX) {
		d->st.malformed++;
		return -EINVAL;
	}
	d->st.frames++;
	d->st.bytes += len;
	ecn_queue(im, d, now, frame, len, v);
	reason = lose(im, d, frame, len);
	if (reason >= 0) {
		d->st.dropped[reason]++;
		v->action = MR_IMPAIR_DROP;
		return 0;
	}
	if (mr_sim_rng_chance(&d->rng, c->corrupt)) {
		corrupt(d, frame, len);
		d->st.corrupted++;
		v->flags |= MR_IMPAIR_F_CORRUPTED;
	}
	delay = c->delay_ns + mr_sim_rng_upto(&d->rng, c->jitter_ns);
	if (mr_sim_rng_chance(&d->rng, c->reorder)) {
		delay += c->reorder_ns;
		d->st.reordered++;
		v->flags |= MR_IMPAIR_F_REORDERED;
	}
	if (delay > 0) {
		rc = heap_push(im, d, now + delay, frame, len);
		if (rc < 0) {
			d->st.dropped[MR_IMPAIR_DROP_QFULL]++;
			v->action = MR_IMPAIR_DROP;
			return 0;
		}
		d->st.delayed++;
		v->action = MR_IMPAIR_QUEUED;
	}
	if (mr_sim_rng_chance(&d->rng, c->dup)) {
		/* The copy follows the original (same due time, later sequence). */
		if (heap_push(im, d, now + delay, frame, len) == 0) {
			d->st.duplicated++;
			v->flags |= MR_IMPAIR_F_DUP;
		} else {
			d->st.dropped[MR_IMPAIR_DROP_QFULL]++;
		}
	}
	if (v->action == MR_IMPAIR_DELIVER)
		d->st.delivered++;
	return 0;
}

int mr_impair_poll(struct mr_impair *im, enum mr_impair_dir dir, uint64_t now, uint8_t *buf,
		   size_t cap)
{
	struct dir_state *d;
	uint32_t len;

	if (im == NULL || (unsigned int)dir >= MR_IMPAIR_NR_DIRS)
		return -EINVAL;
	d = &im->d[dir];
	if (d->nheld == 0 || d->heap[0].due > now)
		return 0;
	len = d->heap[0].len;
	if (cap < len)
		return -ENOSPC;
	memcpy(buf, d->heap[0].data, len);
	heap_pop(d);
	d->st.delivered++;
	return (int)len;
}

uint64_t mr_impair_next_due(const struct mr_impair *im, enum mr_impair_dir dir)
{
	if (im == NULL || (unsigned int)dir >= MR_IMPAIR_NR_DIRS || im->d[dir].nheld == 0)
		return UINT64_MAX;
	return im->d[dir].heap[0].due;
}

size_t mr_impair_queued(const struct mr_impair *im, enum mr_impair_dir dir)
{
	if (im == NULL || (unsigned int)dir >= MR_IMPAIR_NR_DIRS)
		return 0;
	return im->d[dir].nheld;
}

void mr_impair_get_stats(const struct mr_impair *im, enum mr_impair_dir dir,
			 struct mr_impair_stats *st)
{
	if (im == NULL || (unsigned int)dir >= MR_IMPAIR_NR_DIRS) {
		memset(st, 0, sizeof(*st));
		return;
	}
	*st = im->d[dir].st;
}
