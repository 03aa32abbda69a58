/* SPDX-License-Identifier: MIT
 * Per-session handle table. A handle names one object of one session: slot index + 1 in the
 * low 16 bits, a generation in the high 16 bits. The generation changes when a slot is freed
 * (a stale handle no longer resolves) and starts from a per-session salt, so a handle copied
 * from another session almost never resolves either (and then only to this session's own
 * object: tables are never shared).
 */
#ifndef MR_SHM_HANDLE_H
#define MR_SHM_HANDLE_H

#include <stdint.h>

enum mr_shm_obj_type {
	MR_SHM_OBJ_NONE = 0,
	MR_SHM_OBJ_PD,
	MR_SHM_OBJ_BUF,
	MR_SHM_OBJ_MR,
	MR_SHM_OBJ_CQ,
	MR_SHM_OBJ_QP,
	MR_SHM_OBJ_SRQ,
};

struct mr_shm_hslot {
	void *obj;
	uint16_t type;  /* enum mr_shm_obj_type; NONE = free */
	uint16_t gen;
	uint32_t next_free;
};

struct mr_shm_htab {
	struct mr_shm_hslot *slot;
	uint32_t cap;
	uint32_t free_head;  /* slot index, cap = none */
	uint32_t used;
};

#define MR_SHM_HTAB_MAX 65535u

/* -EINVAL (cap 0 or > MR_SHM_HTAB_MAX), -ENOMEM. */
int mr_shm_htab_init(struct mr_shm_htab *t, uint32_t cap, uint16_t salt);
void mr_shm_htab_fini(struct mr_shm_htab *t);
/* Returns the new handle, or 0 when the table is full. */
uint32_t mr_shm_htab_add(struct mr_shm_htab *t, enum mr_shm_obj_type type, void *obj);
/* The object, or NULL if handle does not name a live object of that type. */
void *mr_shm_htab_get(const struct mr_shm_htab *t, uint32_t handle, enum mr_shm_obj_type type);
/* The live object of that type in slot index (a handle's low 16 bits minus 1, whatever its
 * generation), or NULL: for indices that come from app memory (the doorbell). */
void *mr_shm_htab_at(const struct mr_shm_htab *t, uint32_t index, enum mr_shm_obj_type type);
/* Removes and returns the object, or NULL as mr_shm_htab_get. */
void *mr_shm_htab_del(struct mr_shm_htab *t, uint32_t handle, enum mr_shm_obj_type type);

#endif
