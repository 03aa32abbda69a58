/* SPDX-License-Identifier: MIT
 * MetaRoCE offer in perftest's version field (see negotiate.h for the layout and the evidence
 * that stock perftest ignores it).
 */
#include "negotiate.h"

#include <errno.h>
#include <string.h>

static const char *const cc_names[MR_MRC_CC_MAX + 1] = { "none", "dcqcn", "metaroce" };

static bool offer_valid(const struct mr_mrc_offer *o)
{
	return o->metaroce && o->n_entropies >= 1 && o->n_entropies <= MR_MRC_MAX_ENTROPIES &&
	       o->cc <= MR_MRC_CC_MAX;
}

int mr_mrc_version_encode(const struct mr_mrc_offer *o, uint8_t out[MR_PT_VERSION_LEN])
{
	if (out == NULL)
		return -EINVAL;
	if (o != NULL && o->metaroce && !offer_valid(o))
		return -EINVAL;
	mr_pt_version_encode(out);
	if (o == NULL || !o->metaroce)
		return 0; /* byte-identical to stock perftest */
	_Static_assert(sizeof(MR_PT_VERSION) - 1 < MR_MRC_MARKER_OFF, "NUL before the marker");
	memcpy(out + MR_MRC_MARKER_OFF, MR_MRC_MARKER, 4);
	out[9] = MR_MRC_FLAG_METAROCE;
	out[10] = (uint8_t)(o->n_entropies >> 8);
	out[11] = (uint8_t)o->n_entropies;
	out[12] = o->cc;
	return 0;
}

int mr_mrc_version_decode(const uint8_t in[MR_PT_VERSION_LEN], struct mr_mrc_offer *o)
{
	struct mr_mrc_offer p;

	if (o == NULL)
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	if (in == NULL)
		return 0;
	/* The marker only counts behind a terminated version string: what atof() sees ends
	 * before it, so a stock reader never mistakes it for part of the version. */
	if (memchr(in, 0, MR_MRC_MARKER_OFF) == NULL ||
	    memcmp(in + MR_MRC_MARKER_OFF, MR_MRC_MARKER, 4) != 0 ||
	    !(in[9] & MR_MRC_FLAG_METAROCE))
		return 0;
	p.metaroce = true;
	p.n_entropies = (uint16_t)(in[10] << 8 | in[11]);
	p.cc = in[12];
	if (!offer_valid(&p))
		return 0; /* damaged or from a future version we cannot honour: plain RoCE */
	*o = p;
	return 1;
}

bool mr_mrc_negotiate(const struct mr_mrc_offer *mine, const struct mr_mrc_offer *peer,
		      struct mr_mrc_offer *out)
{
	struct mr_mrc_offer r = { 0 };

	if (mine != NULL && peer != NULL && offer_valid(mine) && offer_valid(peer)) {
		r.metaroce = true;
		r.n_entropies = mine->n_entropies < peer->n_entropies ? mine->n_entropies
								       : peer->n_entropies;
		r.cc = mine->cc < peer->cc ? mine->cc : peer->cc;
	}
	if (out != NULL)
		*out = r;
	return r.metaroce;
}

int mr_mrc_cc_from_name(const char *name, uint8_t *cc)
{
	if (name == NULL || cc == NULL)
		return -EINVAL;
	for (unsigned i = 0; i <= MR_MRC_CC_MAX; i++)
		if (strcmp(name, cc_names[i]) == 0) {
			*cc = (uint8_t)i;
			return 0;
		}
	return -EINVAL;
}

const char *mr_mrc_cc_name(uint8_t cc)
{
	return cc <= MR_MRC_CC_MAX ? cc_names[cc] : "unknown";
}
