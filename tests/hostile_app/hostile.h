/* SPDX-License-Identifier: MIT
 * mr_hostile: a hostile application against the real metaroced (tests/hostile_app). It uses
 * libmetaroce for ordinary setup and then bypasses it through the library's private structs
 * (stack/shm/client_priv.h: ring pointers, private indices, handles) to publish impossible ring
 * indices and forged descriptors, to send control requests naming other sessions' or destroyed
 * objects, and to deregister, unmap or destroy while work is in flight.
 *
 * Every case checks what the hostile app itself must see (a negative errno, an error
 * completion for the forged WR, no completion it did not ask for, no foreign bytes in its
 * memory) and that the daemons still answer (a fresh session: open, query_port, alloc_pd).
 * What the other, well-behaved apps see is checked by the driving script (hostile_app.sh).
 */
#ifndef MR_HOSTILE_H
#define MR_HOSTILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metaroce/metaroce.h"
#include "metaroce/shm_abi.h"
#include "shm/client_priv.h"

/* One end of a hostile QP pair: a session on one daemon with one buffer, MR, CQ and QP. */
struct hside {
	struct mrc_session *s;
	struct mrc_port_attr port;
	struct mrc_pd *pd;
	struct mrc_cq *cq;
	uint8_t *buf;
	size_t len;
	struct mrc_mr *mr;
	struct mrc_qp *qp;
	uint32_t psn;
};

struct hopts {
	const char *sock[2];      /* daemon A, daemon B */
	int pid[2];               /* their PIDs (for /proc/PID/status), 0 = unknown */
	const char *hold;         /* quota cases: hold the resources until this file exists */
	unsigned int timeout_s;   /* per wait */
};

extern const struct hopts *g_opt;
extern unsigned int g_failed;

/* Records one failed expectation (the case continues: every check is reported). */
void hfail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define HCHECK(cond, ...) do { if (!(cond)) hfail(__VA_ARGS__); } while (0)

uint64_t hnow_ms(void);
void hsleep_ms(unsigned int ms);

/* Session + PD + buffer (len bytes, filled with fill) + MR (all access) + CQ + QP in INIT.
 * Exits the process on failure: setup is not what the cases test. */
void hside_open(struct hside *h, int daemon, size_t len, uint32_t sq, uint32_t rq,
		uint32_t cq_depth, uint8_t fill);
void hside_close(struct hside *h);
/* Both QPs to RTS, connected to each other (RoCE v2 GID index 1, the port's MTU). timeout:
 * local ACK timeout code (IBA 9.7.6.1.3), retry: retry_cnt and rnr_retry. */
void hpair_connect(struct hside *a, struct hside *b, uint8_t timeout, uint8_t retry);

/* Polls cq until want completions arrived or timeout_ms passed; returns how many. */
int hpoll(struct mrc_cq *cq, struct mr_wc *wc, int want, unsigned int timeout_ms);
/* Polls for quiet_ms and returns how many completions arrived (expecting none). */
int hpoll_quiet(struct mrc_cq *cq, struct mr_wc *wc, int max, unsigned int quiet_ms);

/* The next SQ/RQ slot at the private producer index (not yet published). */
struct mrc_sqe *hsqe_next(struct mrc_qp *qp);
struct mrc_rqe *hrqe_next(struct mrc_qp *qp);
/* Rings qp's doorbell (shm_abi.h) after a ring index was written by hand: what the library
 * does after every post, and what a hostile app that wants the daemon to look would do. */
void hring(struct mrc_qp *qp);
void hsq_publish(struct mrc_qp *qp, uint32_t n);
void hrq_publish(struct mrc_qp *qp, uint32_t n);

/* One control request with an arbitrary handle (bypasses the library's own checks). */
int hctl_obj(struct mrc_session *s, uint16_t op, uint32_t handle);

/* A daemon answers a fresh session (open, query_port, alloc_pd, create_cq, close) within the
 * library's timeout. Returns 0 or the failing step's negative errno. */
int hping(int daemon);
/* Checks both daemons answer; reports a failure naming the case step otherwise. */
void hcheck_daemons(const char *step);

/* /proc/PID/status field in kB (VmRSS, VmSize), -1 if unknown. */
long hproc_kb(int daemon, const char *field);

/* Cases: each returns after reporting its checks through hfail/hok. */
void case_ring_sq_jump(void);
void case_ring_sq_back(void);
void case_ring_rq_jump(void);
void case_ring_garbage(void);
void case_cq_cons_games(void);
void case_ring_error_report(void);
void case_sqe_bad_fields(void);
void case_sge_overflow(void);
void case_remote_wrap(void);
void case_foreign_keys(void);
void case_foreign_handles(void);
void case_double_destroy(void);
void case_dereg_inflight_write(void);
void case_dereg_inflight_remote(void);
void case_dereg_inflight_read(void);
void case_destroy_qp_inflight(void);
void case_crash_midflight(void);
void case_queue_overflow(void);
void case_cq_overrun_report(void);
void case_eventfd_block(void);
void case_quota_qp(void);
void case_quota_mr(void);
void case_quota_mem(void);

#endif
