/* SPDX-License-Identifier: MIT
 * The shm server's additions for a sharded daemon (stack/shm/shm_server.h): one listening
 * socket (mr_shm_listen / mr_shm_accept) owned by a control thread, and servers without a
 * socket that adopt accepted connections (mr_shm_server_create_unbound / _adopt). Asserts on
 * session counts, errors, fd ownership and the socket file's lifetime.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/shm_server.h"

static int fake_obj(void *be, void **o)
{
	(void)be;
	*o = be;
	return 0;
}

static int fake_cq(void *be, uint32_t depth, void **cq)
{
	(void)depth;
	*cq = be;
	return 0;
}

static int fake_poll_cq(void *be, void *cq, int n, struct mr_wc *wc)
{
	(void)be, (void)cq, (void)n, (void)wc;
	return 0;
}

static int fake_qp(void *be, void *pd, void *scq, void *rcq, const struct mr_shm_qp_caps *caps,
		   void **qp, uint32_t *qpn)
{
	(void)pd, (void)scq, (void)rcq, (void)caps;
	*qp = be;
	*qpn = 17;
	return 0;
}

static int fake_send(void *be, void *qp, const struct mr_send_wr *wr)
{
	(void)be, (void)qp, (void)wr;
	return 0;
}

static int fake_recv(void *be, void *qp, const struct mr_recv_wr *wr)
{
	(void)be, (void)qp, (void)wr;
	return 0;
}

static const struct mr_shm_backend_ops ops = {
	.alloc_pd = fake_obj, .create_cq = fake_cq, .poll_cq = fake_poll_cq,
	.create_qp = fake_qp, .post_send = fake_send, .post_recv = fake_recv,
};

static int dial(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_listen_accept_adopt(void **state)
{
	char path[64];
	struct mr_shm_server_params p = { .ops = &ops, .max_sessions = 1 };
	struct mr_shm_server_stats st;
	struct mr_shm_server *srv[2];
	struct stat sb;
	int lsock, c1, c2, s1, s2, i;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/mr-test-adopt-%ld.sock", (long)getpid());
	unlink(path);
	assert_int_equal(mr_shm_listen(NULL, 0), -EINVAL);
	assert_int_equal(mr_shm_accept(-1), -EINVAL);
	lsock = mr_shm_listen(path, 0);
	assert_true(lsock >= 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0660);
	/* A live socket is never stolen. */
	assert_int_equal(mr_shm_listen(path, 0), -EADDRINUSE);
	/* That check connected (and hung up) to find the socket live: drain its connection. */
	i = mr_shm_accept(lsock);
	assert_true(i >= 0);
	close(i);
	assert_int_equal(mr_shm_accept(lsock), -EAGAIN);

	p.sock_path = NULL; /* ignored by the unbound constructor */
	for (i = 0; i < 2; i++) {
		srv[i] = mr_shm_server_create_unbound(&p);
		assert_non_null(srv[i]);
		assert_int_equal(mr_shm_server_nsessions(srv[i]), 0);
	}
	assert_null(mr_shm_server_create_unbound(NULL));
	assert_int_equal(errno, EINVAL);

	c1 = dial(path);
	c2 = dial(path);
	s1 = mr_shm_accept(lsock);
	s2 = mr_shm_accept(lsock);
	assert_true(s1 >= 0 && s2 >= 0);
	assert_true(fcntl(s1, F_GETFL) & O_NONBLOCK);
	assert_int_equal(mr_shm_accept(lsock), -EAGAIN);
	/* One session per server, as a sharded daemon places them. */
	assert_int_equal(mr_shm_server_adopt(srv[0], s1), 0);
	assert_int_equal(mr_shm_server_adopt(srv[1], s2), 0);
	assert_int_equal(mr_shm_server_nsessions(srv[0]), 1);
	assert_int_equal(mr_shm_server_nsessions(srv[1]), 1);
	mr_shm_server_get_stats(srv[0], &st);
	assert_int_equal(st.sessions_opened, 1);

	/* max_sessions 1: refused, and the fd is consumed (closed) either way. */
	{
		int c3 = dial(path), s3 = mr_shm_accept(lsock);

		assert_true(s3 >= 0);
		assert_int_equal(mr_shm_server_adopt(srv[0], s3), -EBUSY);
		assert_false(fd_open(s3));
		close(c3);
		c3 = dial(path);
		s3 = mr_shm_accept(lsock);
		assert_int_equal(mr_shm_server_adopt(NULL, s3), -EINVAL);
		assert_false(fd_open(s3));
		close(c3);
	}
	assert_int_equal(mr_shm_server_adopt(srv[0], -1), -EINVAL);

	/* The app goes away: its own server notices and reclaims the session. */
	close(c1);
	for (i = 0; i < 100 && mr_shm_server_nsessions(srv[0]) > 0; i++) {
		mr_shm_server_poll_ctl(srv[0]);
		usleep(1000);
	}
	assert_int_equal(mr_shm_server_nsessions(srv[0]), 0);
	assert_int_equal(mr_shm_server_nsessions(srv[1]), 1);
	mr_shm_server_get_stats(srv[0], &st);
	assert_int_equal(st.sessions_closed, 1);

	/* Unbound servers own no socket file: destroying them leaves the listener's. */
	mr_shm_server_destroy(srv[0]);
	mr_shm_server_destroy(srv[1]);
	assert_int_equal(stat(path, &sb), 0);
	close(c2);
	close(lsock);
	/* A stale file (no listener) is replaced. */
	lsock = mr_shm_listen(path, 0600);
	assert_true(lsock >= 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	close(lsock);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_accept_adopt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
