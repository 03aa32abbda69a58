/* SPDX-License-Identifier: MIT
 * mrsim's fabric mode: verified RDMA WRITE flows over the multipath fabric simulator
 * (drivers/sim/sim_fabric.h) with plain RoCE or MetaRoCE, loss, reordering, incast and
 * congestion control, reported as text and as one JSON record. */
#ifndef MR_MRSIM_FABRIC_H
#define MR_MRSIM_FABRIC_H

#include <stdbool.h>

/* True if argv asks for fabric mode (--transport, --entropies, --fabric-paths, --incast, --cc
 * or --fabric). */
bool mr_mrsim_fabric_wanted(int argc, char **argv);
/* Run fabric mode. Returns the exit status: 0 verified, 1 failed, 2 bad arguments. */
int mr_mrsim_fabric_main(int argc, char **argv);

#endif
