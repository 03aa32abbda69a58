/* SPDX-License-Identifier: MIT
 * Fuzz target: the RC responder and completer (IBA 9.7) against a live QP (fz_transport.c).
 */
#include "fz_transport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_transport_run(data, size, MR_TRANSPORT_RC);
}
