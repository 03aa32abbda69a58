/* SPDX-License-Identifier: MIT
 * Stand-in libefa.so.1 for the metaroce libibverbs directory (see standin_mlx5.c): the
 * efadv_* entries stock perftest imports, answering "not an EFA device".
 */
#include <errno.h>
#include <infiniband/efadv.h>

#define SI_EXPORT __attribute__((visibility("default")))

SI_EXPORT struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx,
					    struct ibv_qp_init_attr_ex *attr_ex,
					    struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
	(void)ibvctx, (void)attr_ex, (void)efa_attr, (void)inlen;
	errno = EOPNOTSUPP;
	return NULL;
}

SI_EXPORT int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr,
				 uint32_t inlen)
{
	(void)ibvctx, (void)attr, (void)inlen;
	return EOPNOTSUPP;
}
