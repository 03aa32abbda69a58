/* SPDX-License-Identifier: MIT
 * libibverbs over metaroce: the device list (one device per daemon socket), open/close,
 * device, port, GID and P_Key queries.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "metaroce/shm_abi.h"
#include "verbs_priv.h"

/* A device must outlive ibv_free_device_list() while contexts use it: one static slot. */
static struct mv_device g_dev;
static pthread_mutex_t g_dev_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *sock_path(void)
{
	const char *p = getenv("METAROCE_SOCK");

	return p != NULL && p[0] != '\0' ? p : MRC_DEFAULT_SOCK;
}

static void eui64(const uint8_t mac[6], uint8_t out[8])
{
	/* RFC 4291 appendix A: the MAC with the universal/local bit inverted, ff:fe inside. */
	out[0] = mac[0] ^ 0x02;
	out[1] = mac[1];
	out[2] = mac[2];
	out[3] = 0xff;
	out[4] = 0xfe;
	out[5] = mac[3];
	out[6] = mac[4];
	out[7] = mac[5];
}

static bool gid_is_v4(const uint8_t g[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, pfx, 12) == 0;
}

static bool gid_is_link_local(const uint8_t g[16])
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

/* The table rxe builds from its netdev (and the layout): 0 the link-local GID from
 * the MAC, 1 the IPv4-mapped address (A17.4.5.1), then a configured non-link-local IPv6
 * address. All entries are RoCE v2 (A17.4.5). */
bool mv_gid(const struct mrc_port_attr *p, unsigned int i, union ibv_gid *gid,
	    enum ibv_gid_type *type)
{
	uint8_t tab[MRC_MAX_GIDS + 1][16];
	unsigned int n = 0, k, cnt = p->gid_count < MRC_MAX_GIDS ? p->gid_count : MRC_MAX_GIDS;

	memset(tab, 0, sizeof(tab));
	tab[0][0] = 0xfe;
	tab[0][1] = 0x80;
	eui64(p->mac, &tab[0][8]);
	n = 1;
	for (k = 0; k < cnt; k++)
		if (gid_is_v4(p->gid[k]))
			memcpy(tab[n++], p->gid[k], 16);
	for (k = 0; k < cnt; k++)
		if (!gid_is_v4(p->gid[k]) && !gid_is_link_local(p->gid[k]))
			memcpy(tab[n++], p->gid[k], 16);
	if (i >= n)
		return false;
	if (gid != NULL)
		memcpy(gid->raw, tab[i], 16);
	if (type != NULL)
		*type = IBV_GID_TYPE_ROCE_V2;
	return true;
}

unsigned int mv_gid_count(const struct mrc_port_attr *p)
{
	unsigned int n = 0;

	while (mv_gid(p, n, NULL, NULL))
		n++;
	return n;
}

#undef ibv_get_device_list
MV_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **list = calloc(2, sizeof(*list));
	struct mrc_session *s;
	const char *name = getenv("METAROCE_DEVICE");
	uint8_t e[8];
	int rc;

	if (num != NULL)
		*num = 0;
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	s = mrc_open(sock_path());
	if (s == NULL) {
		/* No daemon: no device, like a host without RDMA hardware (an empty list). */
		mv_log("no metaroced at %s: %s", sock_path(), strerror(errno));
		errno = errno ? errno : ENODEV;
		return list;
	}
	pthread_mutex_lock(&g_dev_lock);
	rc = mrc_query_port(s, &g_dev.port);
	mrc_close(s);
	if (rc < 0) {
		pthread_mutex_unlock(&g_dev_lock);
		errno = -rc;
		return list;
	}
	g_dev.dev.node_type = IBV_NODE_CA;
	g_dev.dev.transport_type = IBV_TRANSPORT_IB;   /* RoCE is the IB transport */
	snprintf(g_dev.dev.name, sizeof(g_dev.dev.name), "%s",
		 name != NULL && name[0] != '\0' ? name : "metaroce0");
	snprintf(g_dev.dev.dev_name, sizeof(g_dev.dev.dev_name), "uverbs0");
	snprintf(g_dev.dev.dev_path, sizeof(g_dev.dev.dev_path),
		 "/sys/class/infiniband_verbs/uverbs0");
	snprintf(g_dev.dev.ibdev_path, sizeof(g_dev.dev.ibdev_path), "/sys/class/infiniband/%s",
		 g_dev.dev.name);
	snprintf(g_dev.sock, sizeof(g_dev.sock), "%s", sock_path());
	eui64(g_dev.port.mac, e);
	memcpy(&g_dev.guid, e, 8);
	g_dev.index = 0;
	list[0] = &g_dev.dev;
	pthread_mutex_unlock(&g_dev_lock);
	if (num != NULL)
		*num = 1;
	return list;
}

MV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

MV_EXPORT const char *ibv_get_device_name(struct ibv_device *dev)
{
	return dev != NULL ? dev->name : NULL;
}

MV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *dev)
{
	return dev != NULL ? ((struct mv_device *)dev)->guid : 0;
}

MV_EXPORT int ibv_get_device_index(struct ibv_device *dev)
{
	return dev != NULL ? ((struct mv_device *)dev)->index : -1;
}

static struct ibv_context_ops mv_ops = {
	.poll_cq = mv_poll_cq,
	.req_notify_cq = mv_req_notify_cq,
	.post_send = mv_post_send,
	.post_recv = mv_post_recv,
	.post_srq_recv = mv_post_srq_recv,
};

MV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct mv_device *dev = (struct mv_device *)device;
	struct mv_context *c;
	const char *t;
	int rc;

	if (dev == NULL || dev != &g_dev) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->s = mrc_open(dev->sock);
	if (c->s == NULL) {
		rc = errno;
		free(c);
		errno = rc;
		return NULL;
	}
	rc = mrc_query_port(c->s, &c->port);
	if (rc < 0) {
		mrc_close(c->s);
		free(c);
		errno = -rc;
		return NULL;
	}
	c->dev = dev;
	/* Never signalled: metaroce reports no asynchronous events yet, but the fd must be a
	 * real, pollable descriptor (ibv_get_async_event blocks on it, apps poll() it). */
	c->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC);
	c->vctx.context.cmd_fd = -1;
	c->vctx.context.device = device;
	c->vctx.context.ops = mv_ops;
	c->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	pthread_mutex_init(&c->mr_lock, NULL);
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.query_port = mv_query_port;
	c->vctx.query_device_ex = mv_query_device_ex;
	c->vctx.create_cq_ex = mv_create_cq_ex;
	c->vctx.create_qp_ex = mv_create_qp_ex;
	/* Transport selection: by default the daemon's policy decides ([metaroce] peers in
	 * metaroced.conf upgrades QPs toward listed metaroce hosts). $METAROCE_TRANSPORT
	 * overrides it for this process: "metaroce" (the user states the peer is metaroce too;
	 * a stock peer must only ever see plain RoCE v2 RC, docs/metaroce-wire.md) or "rc". */
	t = getenv("METAROCE_TRANSPORT");
	if (t != NULL && (strcmp(t, "metaroce") == 0 || strcmp(t, "rc") == 0)) {
		const char *n = getenv("METAROCE_ENTROPIES");

		c->transport_set = true;
		c->metaroce = strcmp(t, "metaroce") == 0;
		c->n_entropies = n != NULL && atoi(n) >= 1 && atoi(n) <= MRC_MAX_ENTROPIES ?
			(uint16_t)atoi(n) : 16;
		c->cc = c->metaroce ? MRC_CC_METAROCE : MRC_CC_NONE;
	} else if (t != NULL && t[0] != '\0') {
		mv_warn("METAROCE_TRANSPORT=%s ignored (metaroce or rc)", t);
	}
	if (c->vctx.context.async_fd < 0) {
		rc = errno;
		mrc_close(c->s);
		free(c);
		errno = rc;
		return NULL;
	}
	return &c->vctx.context;
}

MV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct mv_context *c;

	if (context == NULL)
		return EINVAL;
	c = mv_ctx(context);
	/* The daemon reclaims every object the application left open; MRs left registered give
	 * their pages back to the process (mv_mrs_release). */
	mrc_close(c->s);
	mv_mrs_release(c);
	while (c->pds != NULL) { /* PDs the app left: their daemon objects went with the session */
		struct mv_pd *pd = c->pds;

		c->pds = pd->next;
		free(pd);
	}
	pthread_mutex_destroy(&c->mr_lock);
	close(context->async_fd);
	pthread_mutex_destroy(&context->mutex);
	free(c);
	return 0;
}

enum ibv_mtu mv_mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return bytes >= 4096 ? IBV_MTU_4096 : IBV_MTU_256;
	}
}

static void fill_device_attr(const struct mv_context *c, struct ibv_device_attr *a)
{
	const struct mrc_port_attr *p = &c->port;

	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "metaroce-%u", MRC_ABI_VERSION);
	a->node_guid = c->dev->guid;
	a->sys_image_guid = c->dev->guid;
	a->max_mr_size = p->max_mr_size;
	a->page_size_cap = (uint64_t)sysconf(_SC_PAGESIZE);
	a->vendor_id = MV_VENDOR_ID;
	a->vendor_part_id = 0;
	a->hw_ver = 0;
	a->max_qp = (int)p->max_qp;
	a->max_qp_wr = (int)p->max_qp_wr;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SYS_IMAGE_GUID;
	a->max_sge = (int)p->max_sge;
	a->max_sge_rd = (int)p->max_sge;
	a->max_cq = (int)p->max_cq;
	a->max_cqe = (int)p->max_cqe;
	a->max_mr = (int)p->max_mr;
	a->max_pd = (int)p->max_pd;
	a->max_qp_rd_atom = MV_MAX_RD_ATOMIC;
	a->max_res_rd_atom = MV_MAX_RD_ATOMIC * (int)p->max_qp;
	a->max_qp_init_rd_atom = MV_MAX_RD_ATOMIC;
	a->atomic_cap = IBV_ATOMIC_HCA;   /* atomics are executed by one engine per QP */
	a->max_pkeys = 1;
	a->max_srq = (int)p->max_qp;
	a->max_srq_wr = (int)p->max_qp_wr;
	a->max_srq_sge = (int)p->max_sge;
	a->local_ca_ack_delay = 15;       /* rxe's value (4.096 us * 2^15) */
	a->phys_port_cnt = 1;
}

#undef ibv_query_device
MV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (context == NULL || attr == NULL)
		return EINVAL;
	fill_device_attr(mv_ctx(context), attr);
	return 0;
}

int mv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *attr, size_t len)
{
	struct ibv_device_attr_ex a;

	if (context == NULL || attr == NULL || len < sizeof(attr->orig_attr))
		return EINVAL;
	if (in != NULL && in->comp_mask != 0)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	fill_device_attr(mv_ctx(context), &a.orig_attr);
	a.phys_port_cnt_ex = 1;
	memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
	if (len > sizeof(a))
		memset((uint8_t *)attr + sizeof(a), 0, len - sizeof(a));
	return 0;
}

int mv_query_port(struct ibv_context *context, uint8_t port, struct ibv_port_attr *attr,
		  size_t len)
{
	struct mv_context *c;
	struct ibv_port_attr a;
	int rc;

	if (context == NULL || attr == NULL)
		return EINVAL;
	c = mv_ctx(context);
	if (port != MV_PORT)
		return EINVAL;
	rc = mrc_query_port(c->s, &c->port);
	if (rc < 0)
		return mv_err(c->s, rc, "query_port");
	memset(&a, 0, sizeof(a));
	a.state = (enum ibv_port_state)c->port.state;
	a.max_mtu = mv_mtu_enum(c->port.max_mtu);
	a.active_mtu = mv_mtu_enum(c->port.active_mtu);
	a.gid_tbl_len = (int)mv_gid_count(&c->port);
	/* RoCE ports: no subnet manager (IBA A17.3); what rxe reports for a RoCE v2 port. */
	a.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	a.max_msg_sz = 1u << 31;             /* IBA 9.7.1: 2^31 bytes per message */
	a.pkey_tbl_len = 1;
	a.lid = 0;
	a.sm_lid = 0;
	a.max_vl_num = 1;
	a.active_width = 2;                  /* 4X */
	a.active_speed = 32;                 /* EDR: nominal, the NIC's speed is not known */
	a.phys_state = c->port.state == MRC_PORT_ACTIVE ? 5 : 3;  /* LinkUp : Disabled */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

#undef ibv_query_port
/* The exported (pre-1.5 ABI) entry: callers pass the older, shorter struct. */
MV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port,
			     struct _compat_ibv_port_attr *attr)
{
	return mv_query_port(context, port, (struct ibv_port_attr *)attr,
			     offsetof(struct ibv_port_attr, port_cap_flags2));
}

MV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port, int index,
			    union ibv_gid *gid)
{
	struct mv_context *c;

	if (context == NULL || gid == NULL || port != MV_PORT || index < 0)
		return -1;
	c = mv_ctx(context);
	if (!mv_gid(&c->port, (unsigned int)index, gid, NULL)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* rdma-core's private enum ibv_gid_type_sysfs (driver.h, not installed). */
enum { MV_GID_TYPE_SYSFS_IB_ROCE_V1 = 0, MV_GID_TYPE_SYSFS_ROCE_V2 = 1 };

MV_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port, unsigned int index,
				 int *type)
{
	if (context == NULL || type == NULL || port != MV_PORT ||
	    !mv_gid(&mv_ctx(context)->port, index, NULL, NULL)) {
		errno = EINVAL;
		return -1;
	}
	*type = MV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

static void gid_entry(struct mv_context *c, unsigned int i, struct ibv_gid_entry *e)
{
	enum ibv_gid_type t;

	memset(e, 0, sizeof(*e));
	mv_gid(&c->port, i, &e->gid, &t);
	e->gid_index = i;
	e->port_num = MV_PORT;
	e->gid_type = t;
	e->ndev_ifindex = 0;   /* the daemon's port is not a kernel netdev */
}

MV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port, uint32_t index,
				struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	struct mv_context *c;

	if (context == NULL || entry == NULL || flags != 0 || entry_size == 0)
		return EINVAL;
	c = mv_ctx(context);
	if (port != MV_PORT)
		return EINVAL;
	if (!mv_gid(&c->port, index, NULL, NULL))
		return ENODATA;
	gid_entry(c, index, &e);
	memcpy(entry, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
	return 0;
}

MV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
				       size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct mv_context *c;
	unsigned int n, i;

	if (context == NULL || flags != 0 || entry_size < sizeof(struct ibv_gid_entry) ||
	    (entries == NULL && max_entries > 0))
		return -EINVAL;
	c = mv_ctx(context);
	n = mv_gid_count(&c->port);
	if (max_entries < n)
		return -EINVAL;
	for (i = 0; i < n; i++)
		gid_entry(c, i, (struct ibv_gid_entry *)((uint8_t *)entries + i * entry_size));
	return n;
}

MV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port, int index,
			     __be16 *pkey)
{
	if (context == NULL || pkey == NULL || port != MV_PORT || index != 0)
		return -1;
	*pkey = htons(0xffff);   /* the default partition, full member (IBA 10.9.1.1) */
	return 0;
}

MV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port, __be16 pkey)
{
	if (context == NULL || port != MV_PORT)
		return -EINVAL;
	return (ntohs(pkey) & 0x7fff) == 0x7fff ? 0 : -ENOENT;
}
