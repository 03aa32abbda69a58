/* SPDX-License-Identifier: MIT
 * Per-session handle table with generation numbers (see shm_handle.h).
 */
#include "shm_handle.h"

#include <errno.h>
#include <stdlib.h>

int mr_shm_htab_init(struct mr_shm_htab *t, uint32_t cap, uint16_t salt)
{
	uint32_t i;

	if (cap == 0 || cap > MR_SHM_HTAB_MAX)
		return -EINVAL;
	t->slot = calloc(cap, sizeof(*t->slot));
	if (t->slot == NULL)
		return -ENOMEM;
	t->cap = cap;
	t->used = 0;
	for (i = 0; i < cap; i++) {
		/* Different starting generations per slot and per session. */
		t->slot[i].gen = (uint16_t)(salt + i * 0x9e37u);
		t->slot[i].next_free = i + 1;
	}
	t->free_head = 0;
	return 0;
}

void mr_shm_htab_fini(struct mr_shm_htab *t)
{
	free(t->slot);
	t->slot = NULL;
	t->cap = 0;
}

uint32_t mr_shm_htab_add(struct mr_shm_htab *t, enum mr_shm_obj_type type, void *obj)
{
	struct mr_shm_hslot *s;
	uint32_t i = t->free_head;

	if (i >= t->cap || type == MR_SHM_OBJ_NONE || obj == NULL)
		return 0;
	s = &t->slot[i];
	t->free_head = s->next_free;
	s->obj = obj;
	s->type = (uint16_t)type;
	t->used++;
	return (uint32_t)s->gen << 16 | (i + 1);
}

static struct mr_shm_hslot *slot_of(const struct mr_shm_htab *t, uint32_t handle,
				    enum mr_shm_obj_type type)
{
	uint32_t i = (handle & 0xffffu);
	struct mr_shm_hslot *s;

	if (i == 0 || i > t->cap)
		return NULL;
	s = &t->slot[i - 1];
	if (s->type != type || type == MR_SHM_OBJ_NONE || s->gen != (uint16_t)(handle >> 16))
		return NULL;
	return s;
}

void *mr_shm_htab_get(const struct mr_shm_htab *t, uint32_t handle, enum mr_shm_obj_type type)
{
	struct mr_shm_hslot *s = slot_of(t, handle, type);

	return s != NULL ? s->obj : NULL;
}

void *mr_shm_htab_at(const struct mr_shm_htab *t, uint32_t index, enum mr_shm_obj_type type)
{
	if (index >= t->cap || t->slot[index].type != type)
		return NULL;
	return t->slot[index].obj;
}

void *mr_shm_htab_del(struct mr_shm_htab *t, uint32_t handle, enum mr_shm_obj_type type)
{
	struct mr_shm_hslot *s = slot_of(t, handle, type);
	void *obj;

	if (s == NULL)
		return NULL;
	obj = s->obj;
	s->obj = NULL;
	s->type = MR_SHM_OBJ_NONE;
	s->gen++;
	s->next_free = t->free_head;
	t->free_head = (uint32_t)(s - t->slot);
	t->used--;
	return obj;
}
