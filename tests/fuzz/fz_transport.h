/* SPDX-License-Identifier: MIT
 * The transport fuzz interpreter (fz_transport.c), shared by fuzz_rc and fuzz_mrt.
 */
#ifndef MR_TESTS_FZ_TRANSPORT_H
#define MR_TESTS_FZ_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "transport/rc.h"

/* Runs one input; aborts (a libFuzzer crash) on any invariant violation. */
int fz_transport_run(const uint8_t *data, size_t size, enum mr_transport t);

/* libFuzzer's entry point, defined by each target (declared here for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
