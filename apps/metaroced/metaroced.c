/* SPDX-License-Identifier: MIT
 * metaroced: the daemon's entry point. Shard 0's engine runs on the main lcore until
 * SIGINT/SIGTERM (daemon.c has the rest).
 */
#include "daemon.h"

int main(int argc, char **argv)
{
	int rc = mrd_start(argc, argv, false);

	if (rc != 0)
		return rc < 0 ? 0 : rc;
	mr_engine_run(mrd_shard0());
	mrd_join();
	return mrd_finish(0);
}
