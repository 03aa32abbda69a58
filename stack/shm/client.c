/* SPDX-License-Identifier: MIT
 * libmetaroce: session, control requests to the daemon, error reporting.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client_priv.h"
#include "shm_membarrier.h"
#include "shm_sock.h"

#define DEFAULT_TIMEOUT_MS 10000

int mrc_fail(struct mrc_session *s, int err, const char *fmt, ...)
{
	va_list ap;

	if (s != NULL) {
		va_start(ap, fmt);
		vsnprintf(s->err, sizeof(s->err), fmt, ap);
		va_end(ap);
	}
	return -err;
}

const char *mrc_op_name(uint16_t op)
{
	static const char *const names[MRC_CTL_OP_MAX] = {
		[MRC_CTL_HELLO] = "hello", [MRC_CTL_QUERY_PORT] = "query_port",
		[MRC_CTL_ALLOC_PD] = "alloc_pd", [MRC_CTL_DEALLOC_PD] = "dealloc_pd",
		[MRC_CTL_MAP_BUF] = "map_buf", [MRC_CTL_UNMAP_BUF] = "unmap_buf",
		[MRC_CTL_REG_MR] = "reg_mr", [MRC_CTL_DEREG_MR] = "dereg_mr",
		[MRC_CTL_CREATE_CQ] = "create_cq", [MRC_CTL_DESTROY_CQ] = "destroy_cq",
		[MRC_CTL_CREATE_QP] = "create_qp", [MRC_CTL_MODIFY_QP] = "modify_qp",
		[MRC_CTL_QUERY_QP] = "query_qp", [MRC_CTL_DESTROY_QP] = "destroy_qp",
	};

	return op < MRC_CTL_OP_MAX && names[op] != NULL ? names[op] : "?";
}

/* The metaroced [limits] fields (configs/metaroced.conf) an -EDQUOT answer to op is about. */
static const char *quota_fields(uint16_t op)
{
	switch (op) {
	case MRC_CTL_ALLOC_PD:
		return "session_max_pd";
	case MRC_CTL_REG_MR:
		return "session_max_mr";
	case MRC_CTL_CREATE_CQ:
		return "session_max_cq or session_max_wr (CQ entries count as WRs)";
	case MRC_CTL_CREATE_QP:
		return "session_max_qp, session_max_wr (send + receive WRs) or session_max_inline";
	default:
		return "session_max_*";
	}
}

const char *mrc_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case EFAULT:
		return "memory is not daemon-shared (allocate it with mrc_alloc_buf)";
	case ENOENT:
		return "no such object in this session";
	case EPROTO:
		return "protocol or ABI version mismatch with the daemon";
	case ECONNRESET:
		return "daemon closed the session";
	case ETIMEDOUT:
		return "daemon did not answer";
	case EDQUOT:
		return "per-session quota of the daemon reached";
	default:
		return strerror(err);
	}
}

const char *mrc_last_error(const struct mrc_session *s)
{
	return s != NULL ? s->err : "no session";
}

void mrc_obj_link(struct mrc_session *s, struct mrc_obj *o, int type, uint32_t handle)
{
	o->type = type;
	o->s = s;
	o->handle = handle;
	pthread_mutex_lock(&s->lock);
	o->prev = &s->objs;
	o->next = s->objs.next;
	s->objs.next->prev = o;
	s->objs.next = o;
	pthread_mutex_unlock(&s->lock);
}

void mrc_obj_unlink(struct mrc_obj *o)
{
	pthread_mutex_lock(&o->s->lock);
	o->prev->next = o->next;
	o->next->prev = o->prev;
	o->prev = o->next = o;
	pthread_mutex_unlock(&o->s->lock);
}

void mrc_obj_free(struct mrc_obj *o)
{
	switch (o->type) {
	case MRC_OBJ_BUF: {
		struct mrc_buf *b = (struct mrc_buf *)o;

		if (!b->foreign)
			munmap(b->addr, b->len);
		break;
	}
	case MRC_OBJ_CQ: {
		struct mrc_cq *cq = (struct mrc_cq *)o;

		munmap(cq->map, cq->map_len);
		close(cq->evfd);
		break;
	}
	case MRC_OBJ_QP: {
		struct mrc_qp *qp = (struct mrc_qp *)o;

		munmap(qp->map, qp->map_len);
		break;
	}
	case MRC_OBJ_SRQ: {
		struct mrc_srq *q = (struct mrc_srq *)o;

		munmap(q->map, q->map_len);
		break;
	}
	default:
		break;
	}
	free(o);
}

int mrc_rpc(struct mrc_session *s, uint16_t op, struct mrc_ctl_req *req, int fd_in,
	    struct mrc_ctl_resp *resp, int *fd_out)
{
	bool from_daemon = false;
	int rc;

	if (fd_out != NULL)
		*fd_out = -1;
	req->hdr.version = MRC_ABI_VERSION;
	req->hdr.op = op;
	req->hdr.status = 0;
	req->hdr.reserved = 0;
	pthread_mutex_lock(&s->lock);
	if (mrc_embed_kick_fn != NULL)
		mrc_embed_kick_fn(); /* the embedded engine serves the request while we wait */
	req->hdr.seq = ++s->seq;
	rc = mr_shm_send(s->sock, req, sizeof(*req), &fd_in, fd_in >= 0 ? 1 : 0);
	while (rc == 0) {
		int fds[MR_SHM_MAX_FDS];
		unsigned int nfds = 0, i;
		ssize_t n = mr_shm_recv(s->sock, resp, sizeof(*resp), fds, MR_SHM_MAX_FDS, &nfds, 0);

		if (n == 0) {
			rc = -ECONNRESET;
			break;
		}
		if (n < 0) {
			rc = n == -EAGAIN || n == -EWOULDBLOCK ? -ETIMEDOUT : (int)n;
			break;
		}
		/* A late answer to a request that timed out earlier: skip it. */
		if ((size_t)n != sizeof(*resp) || resp->hdr.seq != req->hdr.seq ||
		    resp->hdr.op != op) {
			for (i = 0; i < nfds; i++)
				close(fds[i]);
			if ((size_t)n == sizeof(*resp) && resp->hdr.seq == 0 && resp->hdr.status < 0) {
				rc = resp->hdr.status; /* daemon rejected the message itself */
				from_daemon = true;
				break;
			}
			continue;
		}
		for (i = 0; i < nfds; i++) {
			if (i == 0 && fd_out != NULL)
				*fd_out = fds[0];
			else
				close(fds[i]);
		}
		rc = resp->hdr.status;
		from_daemon = true;
		break;
	}
	pthread_mutex_unlock(&s->lock);
	if (rc < 0 && !from_daemon)
		mrc_fail(s, -rc, "mrc %s: %s", mrc_op_name(op),
			 rc == -ECONNRESET ? "daemon closed the session" : mrc_strerror(rc));
	else if (rc == -EDQUOT)
		mrc_fail(s, EDQUOT, "mrc %s: per-session quota reached (metaroced [limits] %s)",
			 mrc_op_name(op), quota_fields(op));
	else if (rc < 0)
		mrc_fail(s, -rc, "mrc %s: daemon refused: %s", mrc_op_name(op), mrc_strerror(rc));
	return rc;
}

struct mrc_session *mrc_open(const char *sock_path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct mrc_session *s;
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	const char *env;
	struct timeval tv;
	long ms = DEFAULT_TIMEOUT_MS;
	int rc, db_fd = -1;

	rc = mrc_embed_open(&sock_path); /* $METAROCE_ENGINE: the daemon in this process */
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	if (sock_path == NULL)
		sock_path = getenv("METAROCE_SOCK");
	if (sock_path == NULL)
		sock_path = MRC_DEFAULT_SOCK;
	if (strlen(sock_path) >= sizeof(addr.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(addr.sun_path, sock_path);
	env = getenv("METAROCE_TIMEOUT_MS");
	if (env != NULL && atol(env) > 0)
		ms = atol(env);
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->objs.next = s->objs.prev = &s->objs;
	pthread_mutex_init(&s->lock, NULL);
	s->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->sock < 0)
		goto fail_errno;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	if (setsockopt(s->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(s->sock, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		goto fail_errno;
	memset(&req, 0, sizeof(req));
	req.u.hello.abi_version = MRC_ABI_VERSION;
	req.u.hello.pid = (uint32_t)getpid();
	/* METAROCE_NO_DOORBELL=1: the daemon scans this session's QPs instead (before/after
	 * measurements, tests of that path). */
	env = getenv("METAROCE_NO_DOORBELL");
	if (env == NULL || strcmp(env, "1") != 0)
		req.u.hello.features = MRC_FEAT_DOORBELL;
	/* The fence-free doorbell (shm_abi.h mrc_db_ring_asym) needs this process registered for
	 * the daemon's barrier. Registered at every open, so that a child after fork() is too.
	 * METAROCE_NO_DB_ASYM=1: every post fences (before/after measurements). */
	env = getenv("METAROCE_NO_DB_ASYM");
	if ((req.u.hello.features & MRC_FEAT_DOORBELL) && (env == NULL || strcmp(env, "1") != 0) &&
	    mr_membarrier_global_ok() &&
	    mr_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0)
		req.u.hello.features |= MRC_FEAT_DB_ASYM;
	rc = mrc_rpc(s, MRC_CTL_HELLO, &req, -1, &resp, &db_fd);
	if (rc < 0) {
		if (db_fd >= 0)
			close(db_fd);
		errno = -rc;
		goto fail;
	}
	s->id = resp.u.hello.session_id;
	s->features = resp.u.hello.features;
	if (db_fd >= 0) {
		void *m = (s->features & MRC_FEAT_DOORBELL) ?
			mmap(NULL, sizeof(*s->db), PROT_READ | PROT_WRITE, MAP_SHARED, db_fd, 0) :
			MAP_FAILED;

		close(db_fd);
		/* The daemon now serves this session's QPs only when rung: without the
		 * mapping they would never run, so the open fails instead. */
		if (m == MAP_FAILED) {
			errno = EPROTO;
			goto fail;
		}
		s->db = m;
		s->db_asym = (s->features & MRC_FEAT_DB_ASYM) &&
			     (req.u.hello.features & MRC_FEAT_DB_ASYM);
	}
	return s;
fail_errno:
fail:
	rc = errno;
	if (s->sock >= 0)
		close(s->sock);
	pthread_mutex_destroy(&s->lock);
	free(s);
	errno = rc;
	return NULL;
}

int mrc_close(struct mrc_session *s)
{
	if (s == NULL)
		return -EINVAL;
	/* Closing the socket makes the daemon reclaim every object of the session. */
	close(s->sock);
	while (s->objs.next != &s->objs) {
		struct mrc_obj *o = s->objs.next;

		s->objs.next = o->next;
		mrc_obj_free(o);
	}
	if (s->db != NULL)
		munmap(s->db, sizeof(*s->db));
	pthread_mutex_destroy(&s->lock);
	free(s);
	return 0;
}

uint32_t mrc_features(const struct mrc_session *s)
{
	return s != NULL ? s->features : 0;
}

int mrc_query_port(struct mrc_session *s, struct mrc_port_attr *attr)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	int rc;

	if (s == NULL)
		return -EINVAL;
	if (attr == NULL)
		return mrc_fail(s, EINVAL, "mrc_query_port: attr is NULL");
	memset(&req, 0, sizeof(req));
	rc = mrc_rpc(s, MRC_CTL_QUERY_PORT, &req, -1, &resp, NULL);
	if (rc == 0)
		*attr = resp.u.port;
	return rc;
}
