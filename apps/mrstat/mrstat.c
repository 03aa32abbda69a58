/* SPDX-License-Identifier: MIT
 * mrstat: metaroced's counters, live, over the daemon's stats socket (<socket>.stats), under
 * the names rxe's `rdma statistic` and mlx5's hw counters / `ethtool -S` use.
 *
 *   mrstat [show|port|qp|shard|link] [--json] [--watch [SEC]] [--count N] [--reset]
 *          [-z|--nonzero] [-v] [--sock PATH]
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "render.h"
#include "stats_doc.h"

#define DEFAULT_SOCK "/run/metaroce/metaroced.sock"
#define STATS_SUFFIX ".stats"
#define MAX_DOC (64u << 20)

static volatile sig_atomic_t g_stop;

static void on_sigint(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mrstat [show|port|qp|shard|link] [options]\n"
		"  show (default)  the port's counters, like `rdma statistic show`\n"
		"  port            every port counter, one per line, like `ethtool -S`\n"
		"  qp              one line per QP (-v: every counter of every QP)\n"
		"  shard           every engine shard's counters\n"
		"  link            the device/port view (rdma link show, ibv_devinfo -v)\n"
		"options:\n"
		"  --json          JSON instead of text\n"
		"  --watch [SEC]   repeat every SEC seconds (default 1) with per-second rates\n"
		"  --count N       with --watch: stop after N samples\n"
		"  --reset         zero the counters (the daemon keeps the baseline; raw dumps keep\n"
		"                  the raw values)\n"
		"  -z, --nonzero   only counters that are non-zero (watching: that changed)\n"
		"  -v, --verbose   qp: every counter\n"
		"  --sock PATH     metaroced's socket (default $METAROCE_SOCK, else %s);\n"
		"                  the stats socket is PATH%s\n", DEFAULT_SOCK, STATS_SUFFIX);
}

static int stats_path(char *out, size_t n, const char *sock)
{
	size_t l = strlen(sock), sl = strlen(STATS_SUFFIX);
	bool has = l >= sl && strcmp(sock + l - sl, STATS_SUFFIX) == 0;

	if ((size_t)snprintf(out, n, "%s%s", sock, has ? "" : STATS_SUFFIX) >= n)
		return -ENAMETOOLONG;
	return 0;
}

/* One request; the reply (until the daemon closes) in *buf. 0 or negative errno. */
static int query(const char *path, const char *req, char **buf, size_t *len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	size_t cap = 1 << 16;
	int fd, e;

	*buf = NULL;
	*len = 0;
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
		e = -errno;
		close(fd);
		return e;
	}
	*buf = malloc(cap);
	if (*buf == NULL) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (cap - *len < 65536) {
			char *nb = cap < MAX_DOC ? realloc(*buf, cap * 2) : NULL;

			if (nb == NULL) {
				close(fd);
				return -E2BIG;
			}
			*buf = nb;
			cap *= 2;
		}
		r = recv(fd, *buf + *len, cap - *len - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno == EAGAIN ? -ETIMEDOUT : -errno;
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		*len += (size_t)r;
	}
	(*buf)[*len] = '\0';
	close(fd);
	return 0;
}

static void unreachable(const char *path, int rc)
{
	fprintf(stderr, "mrstat: cannot reach metaroced at %s: %s\n", path, strerror(-rc));
	if (rc == -ENOENT || rc == -ECONNREFUSED)
		fprintf(stderr, "mrstat: is metaroced running? Start it (metaroced -c FILE), or point "
			"--sock / $METAROCE_SOCK at its socket (the one apps use; mrstat adds \"%s\")\n",
			STATS_SUFFIX);
	else if (rc == -EACCES)
		fprintf(stderr, "mrstat: permission denied: run as the daemon's user or root\n");
}

static int fetch(const char *path, struct mr_doc *d)
{
	char *buf, err[160];
	size_t len;
	int rc = query(path, "stats", &buf, &len);

	if (rc < 0) {
		unreachable(path, rc);
		free(buf);
		return rc;
	}
	if (strncmp(buf, "error ", 6) == 0) {
		fprintf(stderr, "mrstat: metaroced: %s", buf + 6);
		free(buf);
		return -EPROTO;
	}
	rc = mr_doc_parse(d, buf, len, err, sizeof(err));
	free(buf);
	if (rc < 0)
		fprintf(stderr, "mrstat: %s\n", err);
	return rc;
}

static int parse_view(const char *s, enum mr_view *v)
{
	static const struct {
		const char *name;
		enum mr_view v;
	} views[] = {
		{"show", MR_VIEW_SUMMARY}, {"statistic", MR_VIEW_SUMMARY}, {"port", MR_VIEW_PORT},
		{"qp", MR_VIEW_QP}, {"shard", MR_VIEW_SHARD}, {"link", MR_VIEW_LINK},
		{"dev", MR_VIEW_LINK}, {"devinfo", MR_VIEW_LINK},
	};
	size_t i;

	for (i = 0; i < sizeof(views) / sizeof(views[0]); i++)
		if (strcmp(s, views[i].name) == 0) {
			*v = views[i].v;
			return 0;
		}
	return -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"watch", optional_argument, NULL, 'w'},
		{"count", required_argument, NULL, 'n'},
		{"reset", no_argument, NULL, 'r'},
		{"nonzero", no_argument, NULL, 'z'},
		{"verbose", no_argument, NULL, 'v'},
		{"sock", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct mr_render_opts ro = { .view = MR_VIEW_SUMMARY };
	const char *sock = getenv("METAROCE_SOCK");
	double watch = 0;
	long count = 0;
	bool reset = false, view_given;
	char path[108], *end;
	int opt, rc;

	if (sock == NULL || sock[0] == '\0')
		sock = DEFAULT_SOCK;
	while ((opt = getopt_long(argc, argv, "zvhs:", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			ro.json = true;
			break;
		case 'w':
			watch = 1;
			/* --watch 2 as well as --watch=2 */
			if (optarg == NULL && optind < argc && argv[optind][0] >= '0' &&
			    argv[optind][0] <= '9')
				optarg = argv[optind++];
			if (optarg != NULL) {
				watch = strtod(optarg, &end);
				if (*end != '\0' || watch < 0.05 || watch > 3600) {
					fprintf(stderr, "mrstat: --watch: '%s' is not a number of "
						"seconds in [0.05, 3600]\n", optarg);
					return 2;
				}
			}
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end != '\0' || count < 1) {
				fprintf(stderr, "mrstat: --count: '%s' is not a positive integer\n",
					optarg);
				return 2;
			}
			break;
		case 'r':
			reset = true;
			break;
		case 'z':
			ro.nonzero = true;
			break;
		case 'v':
			ro.verbose = true;
			break;
		case 's':
			sock = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	view_given = optind < argc;
	if (optind < argc && parse_view(argv[optind++], &ro.view) < 0) {
		fprintf(stderr, "mrstat: unknown view '%s' (show, port, qp, shard, link)\n",
			argv[optind - 1]);
		return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "mrstat: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (stats_path(path, sizeof(path), sock) < 0) {
		fprintf(stderr, "mrstat: socket path too long: %s\n", sock);
		return 2;
	}
	if (reset) {
		char *buf;
		size_t len;

		rc = query(path, "reset", &buf, &len);
		if (rc < 0) {
			unreachable(path, rc);
			free(buf);
			return 1;
		}
		if (strncmp(buf, "ok", 2) != 0) {
			fprintf(stderr, "mrstat: reset refused: %s", buf);
			free(buf);
			return 1;
		}
		free(buf);
		/* `mrstat --reset` alone just resets; with a view or --watch it then shows. */
		if (watch == 0 && !view_given) {
			printf("counters reset\n");
			return 0;
		}
	}
	if (watch == 0) {
		struct mr_doc d;

		if (fetch(path, &d) < 0)
			return 1;
		mr_render(stdout, &d, NULL, &ro);
		mr_doc_free(&d);
		return 0;
	}
	{
		struct sigaction sa = { .sa_handler = on_sigint };
		struct mr_doc prev = {0}, cur;
		bool have = false;
		long n = 0;

		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		while (!g_stop) {
			struct timespec ts;

			if (fetch(path, &cur) < 0) {
				if (have)
					mr_doc_free(&prev);
				return 1;
			}
			if (!ro.json) {
				time_t t = time(NULL);
				char tb[32];

				strftime(tb, sizeof(tb), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
				printf("--- %s%s ---\n", tb, have ? "" : " (rates from the next sample)");
			}
			mr_render(stdout, &cur, have ? &prev : NULL, &ro);
			if (have)
				mr_doc_free(&prev);
			prev = cur;
			have = true;
			if (count > 0 && ++n >= count)
				break;
			ts.tv_sec = (time_t)watch;
			ts.tv_nsec = (long)((watch - (double)ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
		}
		if (have)
			mr_doc_free(&prev);
	}
	return 0;
}
