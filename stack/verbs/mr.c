/* SPDX-License-Identifier: MIT
 * libibverbs over metaroce: protection domains and memory regions on any application memory
 * (the pages are shared with the daemon in place, see mem_remap.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_priv.h"

/* Access bits the engine enforces; the rest of enum ibv_access_flags is either a hint we may
 * ignore (IBV_ACCESS_OPTIONAL_RANGE: relaxed ordering...; MW_BIND without MWs; HUGETLB) or a
 * feature metaroce lacks. */
#define MV_ACCESS_ENGINE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define MV_ACCESS_IGNORED (IBV_ACCESS_MW_BIND | IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE)

MV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct mv_context *c;
	struct mv_pd *pd;

	if (context == NULL) {
		errno = EINVAL;
		return NULL;
	}
	c = mv_ctx(context);
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL)
		return NULL;
	pd->m = mrc_alloc_pd(c->s);
	if (pd->m == NULL) {
		int e = errno;

		free(pd);
		errno = e;
		return NULL;
	}
	pd->pd.context = context;
	pd->pd.handle = 0;
	pthread_mutex_lock(&c->mr_lock);
	pd->next = c->pds;
	if (c->pds != NULL)
		c->pds->prev = pd;
	c->pds = pd;
	pthread_mutex_unlock(&c->mr_lock);
	return &pd->pd;
}

MV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct mv_pd *pd = (struct mv_pd *)ibpd;
	int rc;

	if (pd == NULL)
		return EINVAL;
	rc = mrc_dealloc_pd(pd->m);
	if (rc < 0)
		return mv_err(mv_ctx(ibpd->context)->s, rc, "ibv_dealloc_pd");
	mv_pd_unlink(mv_ctx(ibpd->context), pd);
	free(pd);
	return 0;
}

void mv_pd_unlink(struct mv_context *c, struct mv_pd *pd)
{
	pthread_mutex_lock(&c->mr_lock);
	if (pd->prev != NULL)
		pd->prev->next = pd->next;
	else
		c->pds = pd->next;
	if (pd->next != NULL)
		pd->next->prev = pd->prev;
	pthread_mutex_unlock(&c->mr_lock);
}

static struct ibv_mr *reg(struct ibv_pd *ibpd, void *addr, size_t len, uint64_t iova,
			  unsigned int access)
{
	struct mv_pd *pd = (struct mv_pd *)ibpd;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)addr;
	struct mv_context *c;
	struct mv_mr *mr;
	char err[256] = "";
	int fd, rc;

	if (pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	c = mv_ctx(ibpd->context);
	if (len == 0 || a + len < a) {
		errno = EINVAL;
		return NULL;
	}
	if (access & ~(unsigned int)(MV_ACCESS_ENGINE | MV_ACCESS_IGNORED)) {
		/* ZERO_BASED, ON_DEMAND, FLUSH_*, atomic write... */
		mv_warn("ibv_reg_mr: access flags 0x%x not supported",
			access & ~(unsigned int)(MV_ACCESS_ENGINE | MV_ACCESS_IGNORED));
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* IBA 10.6.3.1 (C10-23): remote write or atomic access requires local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	/* The daemon maps whole pages: an iova must keep the address's offset in its page. */
	if ((iova & (page - 1)) != (a & (page - 1))) {
		mv_warn("ibv_reg_mr_iova: iova 0x%llx and address %p differ in their page offset",
			(unsigned long long)iova, addr);
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return NULL;
	mr->pg_start = a & ~(page - 1);
	mr->pg_end = (a + len + page - 1) & ~(page - 1);
	rc = mv_remap_get(mr->pg_start, mr->pg_end, &fd, err, sizeof(err));
	if (rc < 0) {
		mv_warn("ibv_reg_mr(%p, %zu): %s", addr, len, err);
		free(mr);
		errno = -rc;
		return NULL;
	}
	mr->view = mrc_map_memfd(c->s, fd, mr->pg_start, (void *)mr->pg_start,
				 iova - (a - mr->pg_start), mr->pg_end - mr->pg_start);
	if (mr->view == NULL)
		goto fail;
	mr->m = mrc_reg_mr_in(pd->m, mr->view, addr, len, access & MV_ACCESS_ENGINE);
	if (mr->m == NULL)
		goto fail;
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = addr;
	mr->mr.length = len;
	mr->mr.lkey = mrc_mr_lkey(mr->m);
	mr->mr.rkey = mrc_mr_rkey(mr->m);
	mr->mr.handle = mr->mr.lkey;
	pthread_mutex_lock(&c->mr_lock);
	mr->next = c->mrs;
	if (c->mrs != NULL)
		c->mrs->prev = mr;
	c->mrs = mr;
	pthread_mutex_unlock(&c->mr_lock);
	return &mr->mr;
fail:
	rc = errno;
	mv_warn("ibv_reg_mr(%p, %zu): %s", addr, len, mrc_last_error(c->s));
	if (mr->view != NULL)
		mrc_unmap_memfd(mr->view);
	mv_remap_put(mr->pg_start, mr->pg_end);
	free(mr);
	errno = rc;
	return NULL;
}

#undef ibv_reg_mr
MV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
MV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					 uint64_t iova, int access)
{
	return reg(pd, addr, length, iova, (unsigned int)access);
}

MV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					  uint64_t iova, unsigned int access)
{
	return reg(pd, addr, length, iova, access);
}

MV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct mv_mr *mr = (struct mv_mr *)ibmr;
	struct mv_context *c;
	struct mrc_session *s;
	int rc;

	if (mr == NULL)
		return EINVAL;
	c = mv_ctx(ibmr->context);
	s = c->s;
	/* The daemon refuses while work in flight uses the MR; the pages stay shared until it
	 * has let go of them. */
	rc = mrc_dereg_mr(mr->m);
	if (rc < 0)
		return mv_err(s, rc, "ibv_dereg_mr");
	rc = mrc_unmap_memfd(mr->view);
	if (rc < 0)
		mv_log("ibv_dereg_mr: unmap window: %s", mrc_last_error(s));
	else
		mv_remap_put(mr->pg_start, mr->pg_end);
	pthread_mutex_lock(&c->mr_lock);
	if (mr->prev != NULL)
		mr->prev->next = mr->next;
	else
		c->mrs = mr->next;
	if (mr->next != NULL)
		mr->next->prev = mr->prev;
	pthread_mutex_unlock(&c->mr_lock);
	free(mr);
	return 0;
}

void mv_mrs_release(struct mv_context *c)
{
	/* The session is closed: the daemon reclaims its QPs and mappings. The pages go private
	 * now; a late engine write can only land in the memfd, never in the process's memory. */
	while (c->mrs != NULL) {
		struct mv_mr *mr = c->mrs;

		c->mrs = mr->next;
		mv_remap_put(mr->pg_start, mr->pg_end);
		free(mr);
	}
}

MV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			   size_t length, int access)
{
	(void)mr, (void)flags, (void)pd, (void)addr, (void)length, (void)access;
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

MV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					   uint64_t iova, int fd, int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
	errno = EOPNOTSUPP;
	return NULL;
}
