/* SPDX-License-Identifier: MIT */
#ifndef MR_TEST_SIM_RC_ERRORS_H
#define MR_TEST_SIM_RC_ERRORS_H
/* Runs the error-path scenarios (retry and RNR exhaustion, flush); returns failures. */
int test_sim_rc_errors(void);
/* Exact go-back-N counts under loss masks, and determinism; returns failures. */
int test_sim_rc_mask(void);
#endif
