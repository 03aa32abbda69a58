/* SPDX-License-Identifier: MIT
 * ibv_reg_mr on any application memory, zero copy: the registered pages are re-mapped in
 * place onto a memfd shared with the daemon.
 *
 * One sparse memfd per process (the "arena"), 2^47 bytes long, whose file offset of a page is
 * that page's virtual address. Registering [addr, addr+len):
 *   1. round to pages [start, end); pages already shared (another MR) are kept as they are;
 *   2. for the others: check the mapping (/proc/self/maps: private, readable, not hugetlb),
 *      copy the current contents into the arena at offset = address (pwrite), then
 *      mmap(MAP_SHARED | MAP_FIXED) the arena over the same range with the same protection:
 *      same addresses, same contents, and the daemon can map the same pages
 *      (mrc_map_memfd with file_offset = start);
 *   3. count users per page range, so overlapping and adjacent registrations of the same
 *      pages reuse the shared pages, and deregistration keeps them shared while other MRs
 *      use them. When the last one goes, the pages become private anonymous memory again
 *      (copy to a fresh mapping, mremap it over the range atomically) and the arena's pages
 *      are freed (hole punched).
 *
 * Limits (docs/verbs.md):
 *  - page granularity: the bytes sharing a page with the MR (other heap data) live in the
 *    memfd too and are mapped by the daemon, which only touches [addr, addr+len) (MR bounds
 *    are checked per request by the shm server and the transport);
 *  - concurrent writers: a store by another thread into these pages while they are being
 *    copied (steps 2 and the restore) can be lost; register before sharing the memory
 *    between threads, as with any registration that is not atomic;
 *  - fork: shared pages would not be copy-on-write in a child. A pthread_atfork child
 *    handler gives the child a private copy of every shared range before fork() returns,
 *    which is what a modern kernel gives a forked verbs application (ibv_is_fork_initialized
 *    says IBV_FORK_UNNEEDED); the child cannot use the parent's MRs (as with verbs);
 *  - hugetlb memory (MAP_HUGETLB, hugetlbfs) cannot be split into 4 KiB pages: rejected with
 *    EOPNOTSUPP and a message (transparent huge pages are fine, the kernel splits them);
 *    shared mappings (MAP_SHARED files, SysV shm) are rejected with EOPNOTSUPP: re-mapping
 *    them would cut them off from their other users;
 *  - the range must be mapped (else EFAULT) and below 2^47.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "verbs_priv.h"

#define ARENA_SIZE (1ull << 47)

struct seg {
	uintptr_t start, end;
	uint32_t refs;
	int prot;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_fd = -1;
static dev_t g_dev;
static ino_t g_ino;
static struct seg *g_seg;   /* sorted by start, disjoint */
static size_t g_nseg, g_capseg;

/* Whole-page copies between application memory and the memfd go through the kernel with raw
 * system calls: they deliberately cover bytes around the MR (other heap chunks, allocator
 * redzones) that a sanitizer's pread/pwrite/memcpy interceptors would call out of bounds. */
static int copy_file(bool to_file, int fd, void *mem, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		long n = syscall(to_file ? SYS_pwrite64 : SYS_pread64, fd, (uint8_t *)mem + done,
				 len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* ---- back to private memory (last deregistration, fork child) ---- */
static int privatize(int fd, uintptr_t start, uintptr_t end, int prot)
{
	size_t len = end - start;
	void *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int rc;

	if (tmp == MAP_FAILED)
		return -errno;
	/* The pages' contents are the memfd's at offset = address. */
	rc = copy_file(false, fd, tmp, len, start);
	if (rc == 0 && (mprotect(tmp, len, prot) < 0 ||
			mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start) ==
				MAP_FAILED))
		rc = -errno;
	if (rc != 0)
		munmap(tmp, len);
	return rc;
}

static void atfork_prepare(void)
{
	pthread_mutex_lock(&g_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&g_lock);
}

static void atfork_child(void)
{
	size_t i;

	for (i = 0; i < g_nseg; i++)
		privatize(g_fd, g_seg[i].start, g_seg[i].end, g_seg[i].prot);
	/* The child's pages are its own now; it starts with an empty table (its MRs, if any,
	 * would be new registrations through a new session). */
	g_nseg = 0;
	if (g_fd >= 0)
		close(g_fd);
	g_fd = -1;
	pthread_mutex_unlock(&g_lock);
}

static void init_once(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static int arena_fd(char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (g_fd >= 0)
		return g_fd;
	fd = memfd_create("metaroce-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	/* Sparse: only registered pages take memory. Sealed against shrinking (the daemon
	 * refuses memory that could vanish under its mapping). */
	if (fd < 0 || ftruncate(fd, (off_t)ARENA_SIZE) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "memfd for registered memory: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	g_fd = fd;
	g_dev = st.st_dev;
	g_ino = st.st_ino;
	return fd;
}

/* ---- /proc/self/maps ---- */
struct vma {
	uintptr_t start, end;
	int prot;
	bool shared, ours, special, hugetlb;
	uint64_t offset;
};

/* Calls fn for each mapping overlapping [start, end), clipped to it, in address order;
 * gaps (unmapped pages) are reported as vma.prot = -1. Returns fn's first non-zero result. */
static int vma_walk(uintptr_t start, uintptr_t end, int (*fn)(const struct vma *, void *),
		    void *arg)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	uintptr_t at = start;
	int rc = 0;

	if (f == NULL)
		return -errno;
	while (rc == 0 && at < end && fgets(line, sizeof(line), f) != NULL) {
		unsigned long s, e, maj, min;
		unsigned long long off, ino;
		char perm[5], path[4096] = "";
		struct vma v;

		if (sscanf(line, "%lx-%lx %4s %llx %lx:%lx %llu %4095[^\n]", &s, &e, perm, &off,
			   &maj, &min, &ino, path) < 7)
			continue;
		if (e <= at)
			continue;
		if (s >= end)
			break;
		if (s > at) {
			memset(&v, 0, sizeof(v));
			v.start = at;
			v.end = s < end ? s : end;
			v.prot = -1;
			rc = fn(&v, arg);
			at = v.end;
			if (rc != 0 || at >= end)
				break;
		}
		memset(&v, 0, sizeof(v));
		v.start = at > s ? at : s;
		v.end = e < end ? e : end;
		v.prot = (perm[0] == 'r' ? PROT_READ : 0) | (perm[1] == 'w' ? PROT_WRITE : 0) |
			 (perm[2] == 'x' ? PROT_EXEC : 0);
		v.shared = perm[3] == 's';
		v.offset = off + (v.start - s);
		{
			const char *p = path;

			while (*p == ' ')
				p++;
			v.ours = g_fd >= 0 && ino == (unsigned long long)g_ino &&
				 makedev(maj, min) == g_dev;
			v.hugetlb = strstr(p, "anon_hugepage") != NULL ||
				    strstr(p, "/hugepages") != NULL;
			v.special = p[0] == '[' && strncmp(p, "[heap]", 6) != 0 &&
				    strncmp(p, "[stack", 6) != 0 && strncmp(p, "[anon", 5) != 0;
		}
		rc = fn(&v, arg);
		at = v.end;
	}
	fclose(f);
	if (rc == 0 && at < end) {
		struct vma v = { .start = at, .end = end, .prot = -1 };

		rc = fn(&v, arg);
	}
	return rc;
}

struct check_arg {
	char *err;
	size_t errlen;
};

static int check_vma(const struct vma *v, void *argp)
{
	struct check_arg *a = argp;

	if (v->prot < 0 || !(v->prot & PROT_READ)) {
		snprintf(a->err, a->errlen, "[0x%" PRIxPTR ", 0x%" PRIxPTR ") is not mapped "
			 "readable", v->start, v->end);
		return -EFAULT;
	}
	if (v->hugetlb) {
		snprintf(a->err, a->errlen, "[0x%" PRIxPTR ", 0x%" PRIxPTR ") is hugetlb memory, "
			 "which metaroce cannot remap onto shared 4 KiB pages; use ordinary or "
			 "transparent-huge-page memory", v->start, v->end);
		return -EOPNOTSUPP;
	}
	if (v->ours) {
		/* Shared already but not in the table: only a bug (or a foreign fork) gets here. */
		snprintf(a->err, a->errlen, "[0x%" PRIxPTR ", 0x%" PRIxPTR ") is already "
			 "shared memory of an unknown registration", v->start, v->end);
		return -EEXIST;
	}
	if (v->shared || v->special) {
		snprintf(a->err, a->errlen, "[0x%" PRIxPTR ", 0x%" PRIxPTR ") is a shared or "
			 "special mapping, which cannot be re-mapped in place for the daemon",
			 v->start, v->end);
		return -EOPNOTSUPP;
	}
	return 0;
}

struct remap_arg {
	int fd;
	char *err;
	size_t errlen;
	int prot;           /* of the first VMA: the segment records one protection */
};

static int remap_vma(const struct vma *v, void *argp)
{
	struct remap_arg *a = argp;
	size_t len = v->end - v->start;
	int rc = copy_file(true, a->fd, (void *)v->start, len, v->start);

	if (rc < 0) {
		snprintf(a->err, a->errlen, "copy into the shared memfd: %s", strerror(-rc));
		return rc;
	}
	if (mmap((void *)v->start, len, v->prot, MAP_SHARED | MAP_FIXED, a->fd,
		 (off_t)v->start) == MAP_FAILED) {
		int e = errno;

		/* Failures seen in practice (hugetlb VMAs that cannot be split, the map count
		 * limit) happen before the old mapping is touched. */
		snprintf(a->err, a->errlen, "map the shared memfd over [0x%" PRIxPTR ", +%zu): %s",
			 v->start, len, strerror(e));
		return -e;
	}
	if (a->prot == -1)
		a->prot = v->prot;
	return 0;
}

static int restore_vma(const struct vma *v, void *argp)
{
	int fd = *(const int *)argp;

	/* Only pages still mapped from the arena at their own address: the application may
	 * have unmapped (free()) or replaced them since; those are left alone. */
	if (v->prot >= 0 && v->ours && v->offset == v->start)
		privatize(fd, v->start, v->end, v->prot);
	return 0;
}

static int seg_reserve(size_t n)
{
	struct seg *p;
	size_t cap = g_capseg ? g_capseg : 16;

	if (n <= g_capseg)
		return 0;
	while (cap < n)
		cap *= 2;
	p = realloc(g_seg, cap * sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	g_seg = p;
	g_capseg = cap;
	return 0;
}

static void seg_insert(size_t at, const struct seg *s)
{
	memmove(&g_seg[at + 1], &g_seg[at], (g_nseg - at) * sizeof(*g_seg));
	g_seg[at] = *s;
	g_nseg++;
}

/* Splits the segment containing x (strictly inside) in two. */
static int seg_split(uintptr_t x)
{
	size_t i;

	for (i = 0; i < g_nseg; i++) {
		if (g_seg[i].start < x && x < g_seg[i].end) {
			struct seg hi = g_seg[i];

			if (seg_reserve(g_nseg + 1) < 0)
				return -ENOMEM;
			hi.start = x;
			g_seg[i].end = x;
			seg_insert(i + 1, &hi);
			return 0;
		}
	}
	return 0;
}

int mv_remap_get(uintptr_t start, uintptr_t end, int *fdp, char *err, size_t errlen)
{
	struct check_arg ca = { err, errlen };
	uintptr_t at;
	size_t i;
	int fd, rc = 0;

	pthread_once(&g_once, init_once);
	if (start >= end || end > ARENA_SIZE) {
		snprintf(err, errlen, "[0x%" PRIxPTR ", 0x%" PRIxPTR ") is outside the 47-bit "
			 "address space metaroce can share", start, end);
		return -EFAULT;
	}
	pthread_mutex_lock(&g_lock);
	fd = arena_fd(err, errlen);
	if (fd < 0) {
		pthread_mutex_unlock(&g_lock);
		return -ENOMEM;
	}
	/* 2 splits + at most one new segment per gap: reserve generously first so that no
	 * step below fails half-way for lack of memory. */
	if (seg_reserve(2 * g_nseg + 4) < 0) {
		pthread_mutex_unlock(&g_lock);
		return -ENOMEM;
	}
	/* Check every gap before changing anything: all or nothing. */
	at = start;
	for (i = 0; i < g_nseg && rc == 0 && at < end; i++) {
		if (g_seg[i].end <= at)
			continue;
		if (g_seg[i].start >= end)
			break;
		if (g_seg[i].start > at)
			rc = vma_walk(at, g_seg[i].start, check_vma, &ca);
		at = g_seg[i].end;
	}
	if (rc == 0 && at < end)
		rc = vma_walk(at, end, check_vma, &ca);
	if (rc != 0) {
		pthread_mutex_unlock(&g_lock);
		return rc;
	}
	seg_split(start);
	seg_split(end);
	/* Walk again: bump covered segments, remap and insert the gaps. */
	at = start;
	i = 0;
	while (at < end) {
		while (i < g_nseg && g_seg[i].end <= at)
			i++;
		if (i < g_nseg && g_seg[i].start <= at) {
			g_seg[i].refs++;
			at = g_seg[i].end;
			i++;
			continue;
		}
		{
			uintptr_t gap_end = i < g_nseg && g_seg[i].start < end ? g_seg[i].start : end;
			struct remap_arg ra = { fd, err, errlen, -1 };
			struct seg s;

			rc = vma_walk(at, gap_end, remap_vma, &ra);
			if (rc != 0) {
				/* Pages of this gap remapped so far stay shared with their data
				 * intact; undo them so that the table stays exact. */
				vma_walk(at, gap_end, restore_vma, &fd);
				break;
			}
			s.start = at;
			s.end = gap_end;
			s.refs = 1;
			s.prot = ra.prot < 0 ? PROT_READ | PROT_WRITE : ra.prot;
			seg_insert(i, &s);
			i++;
			at = gap_end;
		}
	}
	pthread_mutex_unlock(&g_lock);
	if (rc != 0) {
		mv_remap_put(start, at);  /* drop what this call took */
		return rc;
	}
	*fdp = fd;
	return 0;
}

void mv_remap_put(uintptr_t start, uintptr_t end)
{
	size_t i;

	if (start >= end)
		return;
	pthread_mutex_lock(&g_lock);
	for (i = 0; i < g_nseg;) {
		struct seg *s = &g_seg[i];

		if (s->end <= start || s->start >= end) {
			i++;
			continue;
		}
		/* Segments were split at this registration's bounds when it was taken. */
		if (s->refs > 0)
			s->refs--;
		if (s->refs == 0) {
			vma_walk(s->start, s->end, restore_vma, &g_fd);
			if (g_fd >= 0)
				fallocate(g_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					  (off_t)s->start, (off_t)(s->end - s->start));
			memmove(s, s + 1, (g_nseg - i - 1) * sizeof(*s));
			g_nseg--;
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&g_lock);
}
