/* SPDX-License-Identifier: MIT
 * libmetaroce: protection domains, daemon-shared buffers, memory regions.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client_priv.h"

#define ACCESS_ALL (MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | \
		    MR_ACCESS_REMOTE_ATOMIC)

struct mrc_pd *mrc_alloc_pd(struct mrc_session *s)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	struct mrc_pd *pd;
	int rc;

	if (s == NULL) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		errno = -mrc_fail(s, ENOMEM, "mrc_alloc_pd: out of memory");
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	rc = mrc_rpc(s, MRC_CTL_ALLOC_PD, &req, -1, &resp, NULL);
	if (rc < 0) {
		free(pd);
		errno = -rc;
		return NULL;
	}
	mrc_obj_link(s, &pd->o, MRC_OBJ_PD, resp.u.obj.handle);
	return pd;
}

/* Sends a destroy-type request for o; on success unlinks and frees it. */
static int obj_destroy(struct mrc_obj *o, uint16_t op)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	int rc;

	memset(&req, 0, sizeof(req));
	req.u.obj.handle = o->handle;
	rc = mrc_rpc(o->s, op, &req, -1, &resp, NULL);
	if (rc < 0)
		return rc;
	mrc_obj_unlink(o);
	mrc_obj_free(o);
	return 0;
}

int mrc_dealloc_pd(struct mrc_pd *pd)
{
	if (pd == NULL)
		return -EINVAL;
	return obj_destroy(&pd->o, MRC_CTL_DEALLOC_PD);
}

void *mrc_alloc_buf(struct mrc_session *s, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	struct mrc_buf *b;
	int fd, rc;

	if (s == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (len == 0 || len > ((size_t)1 << 46)) {
		errno = -mrc_fail(s, EINVAL, "mrc_alloc_buf: bad length %zu", len);
		return NULL;
	}
	len = (len + page - 1) & ~(page - 1);
	b = calloc(1, sizeof(*b));
	if (b == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* Sealed against shrinking: the daemon refuses memory that could vanish under it. */
	fd = memfd_create("metaroce-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		rc = mrc_fail(s, errno, "mrc_alloc_buf: memfd of %zu bytes: %s", len,
			      strerror(errno));
		goto fail;
	}
	b->addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (b->addr == MAP_FAILED) {
		rc = mrc_fail(s, errno, "mrc_alloc_buf: mmap: %s", strerror(errno));
		goto fail;
	}
	b->len = len;
	b->iova = (uint64_t)(uintptr_t)b->addr;
	memset(&req, 0, sizeof(req));
	req.u.map_buf.app_addr = b->iova;
	req.u.map_buf.len = len;
	rc = mrc_rpc(s, MRC_CTL_MAP_BUF, &req, fd, &resp, NULL);
	close(fd);
	fd = -1;
	if (rc < 0) {
		munmap(b->addr, len);
		goto fail;
	}
	mrc_obj_link(s, &b->o, MRC_OBJ_BUF, resp.u.obj.handle);
	return b->addr;
fail:
	if (fd >= 0)
		close(fd);
	free(b);
	errno = -rc;
	return NULL;
}

/* The buffer containing [addr, addr+len), or NULL. */
static struct mrc_buf *buf_find(struct mrc_session *s, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	struct mrc_obj *o;
	struct mrc_buf *found = NULL;

	pthread_mutex_lock(&s->lock);
	for (o = s->objs.next; o != &s->objs; o = o->next) {
		struct mrc_buf *b = (struct mrc_buf *)o;
		uintptr_t base;

		if (o->type != MRC_OBJ_BUF)
			continue;
		base = (uintptr_t)b->addr;
		/* Strictly inside (or, for an empty range, at the start): the address one past a
		 * buffer's end is usually the next buffer's start. */
		if (a >= base && (a - base < b->len || (len == 0 && a == base)) &&
		    len <= b->len - (a - base)) {
			found = b;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

int mrc_free_buf(struct mrc_session *s, void *buf)
{
	struct mrc_buf *b;

	if (s == NULL)
		return -EINVAL;
	b = buf != NULL ? buf_find(s, buf, 0) : NULL;
	if (b == NULL || b->addr != buf || b->foreign)
		return mrc_fail(s, EINVAL, "mrc_free_buf: %p was not returned by mrc_alloc_buf",
				buf);
	if (b->mr_refs > 0)
		return mrc_fail(s, EBUSY, "mrc_free_buf: %u memory region(s) still cover %p",
				b->mr_refs, buf);
	return obj_destroy(&b->o, MRC_CTL_UNMAP_BUF);
}

static bool access_valid(uint32_t access)
{
	/* IBA 10.6.3.1: remote write or atomic access requires local write. */
	return (access & ~(uint32_t)ACCESS_ALL) == 0 &&
	       (!(access & (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_ATOMIC)) ||
		(access & MR_ACCESS_LOCAL_WRITE));
}

/* [addr, addr+len) is inside b; access is valid. */
static struct mrc_mr *reg_in(struct mrc_pd *pd, struct mrc_buf *b, void *addr, size_t len,
			     uint32_t access)
{
	struct mrc_session *s = pd->o.s;
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	struct mrc_mr *mr;
	int rc;

	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	req.u.reg_mr.pd = pd->o.handle;
	req.u.reg_mr.buf = b->o.handle;
	req.u.reg_mr.offset = (uint64_t)((uint8_t *)addr - b->addr);
	req.u.reg_mr.len = len;
	req.u.reg_mr.access = access;
	rc = mrc_rpc(s, MRC_CTL_REG_MR, &req, -1, &resp, NULL);
	if (rc < 0) {
		free(mr);
		errno = -rc;
		return NULL;
	}
	mr->pd = pd;
	mr->buf = b;
	mr->lkey = resp.u.reg_mr.lkey;
	mr->rkey = resp.u.reg_mr.rkey;
	pthread_mutex_lock(&s->lock);
	b->mr_refs++;
	pthread_mutex_unlock(&s->lock);
	mrc_obj_link(s, &mr->o, MRC_OBJ_MR, resp.u.reg_mr.handle);
	return mr;
}

struct mrc_mr *mrc_reg_mr(struct mrc_pd *pd, void *addr, size_t len, uint32_t access)
{
	struct mrc_session *s;
	struct mrc_buf *b;

	if (pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	s = pd->o.s;
	if (addr == NULL || len == 0) {
		errno = -mrc_fail(s, EINVAL, "mrc_reg_mr: empty region");
		return NULL;
	}
	if (!access_valid(access)) {
		errno = -mrc_fail(s, EINVAL,
				  "mrc_reg_mr: access 0x%x invalid (remote write/atomic need "
				  "MR_ACCESS_LOCAL_WRITE)", access);
		return NULL;
	}
	b = buf_find(s, addr, len);
	if (b == NULL) {
		/* Zero copy needs memory the daemon maps; a copying path may lift this later. */
		errno = -mrc_fail(s, EFAULT,
				  "mrc_reg_mr: [%p, +%zu) is not inside a buffer from "
				  "mrc_alloc_buf (the engine can only reach daemon-shared memory)",
				  addr, len);
		return NULL;
	}
	return reg_in(pd, b, addr, len, access);
}

struct mrc_mr *mrc_reg_mr_in(struct mrc_pd *pd, struct mrc_buf *b, void *addr, size_t len,
			     uint32_t access)
{
	struct mrc_session *s;
	uintptr_t a = (uintptr_t)addr, base;

	if (pd == NULL || b == NULL) {
		errno = EINVAL;
		return NULL;
	}
	s = pd->o.s;
	base = (uintptr_t)b->addr;
	if (b->o.s != s || len == 0 || a < base || a - base >= b->len || len > b->len - (a - base)) {
		errno = -mrc_fail(s, EFAULT, "mrc_reg_mr_in: [%p, +%zu) is not inside buffer "
				  "[%p, +%zu) of this session", addr, len, b->addr, b->len);
		return NULL;
	}
	if (!access_valid(access)) {
		errno = -mrc_fail(s, EINVAL, "mrc_reg_mr_in: access 0x%x invalid", access);
		return NULL;
	}
	return reg_in(pd, b, addr, len, access);
}

struct mrc_buf *mrc_map_memfd(struct mrc_session *s, int fd, uint64_t file_offset, void *addr,
			      uint64_t iova, size_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	struct mrc_buf *b;
	int rc;

	if (s == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (fd < 0 || len == 0 || ((uintptr_t)addr | iova | file_offset | len) % page != 0) {
		errno = -mrc_fail(s, EINVAL, "mrc_map_memfd: fd %d, addr %p, iova 0x%llx, offset "
				  "0x%llx, len %zu (need page multiples)", fd, addr,
				  (unsigned long long)iova, (unsigned long long)file_offset, len);
		return NULL;
	}
	if (file_offset != 0 && !(s->features & MRC_FEAT_MAP_OFFSET)) {
		errno = -mrc_fail(s, EOPNOTSUPP, "mrc_map_memfd: the daemon cannot map at a file "
				  "offset (older metaroced)");
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (b == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	req.u.map_buf.app_addr = iova;
	req.u.map_buf.len = len;
	req.u.map_buf.file_offset = file_offset;
	rc = mrc_rpc(s, MRC_CTL_MAP_BUF, &req, fd, &resp, NULL);
	if (rc < 0) {
		free(b);
		errno = -rc;
		return NULL;
	}
	b->addr = addr;
	b->len = len;
	b->iova = iova;
	b->foreign = true;
	mrc_obj_link(s, &b->o, MRC_OBJ_BUF, resp.u.obj.handle);
	return b;
}

int mrc_unmap_memfd(struct mrc_buf *b)
{
	if (b == NULL || !b->foreign)
		return -EINVAL;
	if (b->mr_refs > 0)
		return mrc_fail(b->o.s, EBUSY, "mrc_unmap_memfd: %u memory region(s) still use it",
				b->mr_refs);
	return obj_destroy(&b->o, MRC_CTL_UNMAP_BUF);
}

int mrc_dereg_mr(struct mrc_mr *mr)
{
	struct mrc_buf *b;
	int rc;

	if (mr == NULL)
		return -EINVAL;
	b = mr->buf;
	rc = obj_destroy(&mr->o, MRC_CTL_DEREG_MR);
	if (rc == 0) {
		pthread_mutex_lock(&b->o.s->lock);
		b->mr_refs--;
		pthread_mutex_unlock(&b->o.s->lock);
	}
	return rc;
}

uint32_t mrc_mr_lkey(const struct mrc_mr *mr)
{
	return mr != NULL ? mr->lkey : 0;
}

uint32_t mrc_mr_rkey(const struct mrc_mr *mr)
{
	return mr != NULL ? mr->rkey : 0;
}
