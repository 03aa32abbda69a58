/* SPDX-License-Identifier: MIT
 * mrbpf: load the RoCE v2 tc impairment program (mr_tc_impair.bpf.o) on a device's clsact
 * hook and drive it:
 *   mrbpf attach DEV [--loss P] [--ecn P] [--dir egress|ingress|both] [--obj FILE]
 *   mrbpf set DEV [--loss P] [--ecn P]     change the probabilities of an attached program
 *   mrbpf stats DEV                        seen/dropped/marked counters
 *   mrbpf detach DEV                       remove the program and the clsact qdisc
 * Maps are pinned under $MR_BPF_PIN_DIR (default /sys/fs/bpf)/mrbpf_DEV_{cfg,stats} (bpffs
 * is mounted there if needed) so that later invocations find them. Note `ip netns exec`
 * remounts /sys, hiding /sys/fs/bpf: inside netns use a bpffs mounted elsewhere. Exit 0 ok, 1 failure, 2 bad arguments. */
#include <errno.h>
#include <math.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "mr_tc_impair.h"

#ifndef MR_BPF_OBJ
#define MR_BPF_OBJ "mr_tc_impair.bpf.o"
#endif
#define BPFFS "/sys/fs/bpf"
#define BPF_FS_MAGIC_NUM 0xcafe4a11

static void usage(FILE *f)
{
	fputs("usage: mrbpf attach DEV [--loss P] [--ecn P] [--dir egress|ingress|both] "
	      "[--obj FILE]\n"
	      "       mrbpf set DEV [--loss P] [--ecn P]\n"
	      "       mrbpf stats DEV\n"
	      "       mrbpf detach DEV\n",
	      f);
}

static int prob(const char *flag, const char *s, __u32 *thresh)
{
	char *end;
	double p;

	errno = 0;
	p = strtod(s, &end);
	if (errno || end == s || *end || !(p >= 0 && p <= 1)) {
		fprintf(stderr, "mrbpf: invalid value '%s' for %s: expected a probability in "
				"[0, 1]\n", s, flag);
		return -1;
	}
	/* p * 2^32, saturating: p = 1 must drop every packet (prandom < 0xffffffff is not
	 * always true, so 1 is special-cased by the caller's threshold of UINT32_MAX and a
	 * negligible 2^-32 miss is accepted). */
	*thresh = p >= 1 ? UINT32_MAX : (__u32)llround(p * 4294967296.0);
	return 0;
}

static const char *pin_dir(void)
{
	const char *d = getenv("MR_BPF_PIN_DIR");

	return d != NULL && d[0] != '\0' ? d : BPFFS;
}

static void pin_path(char *buf, size_t len, const char *dev, const char *what)
{
	snprintf(buf, len, "%s/mrbpf_%s_%s", pin_dir(), dev, what);
}

static int ensure_bpffs(void)
{
	struct statfs st;

	if (statfs(pin_dir(), &st) == 0 && (unsigned long)st.f_type == BPF_FS_MAGIC_NUM)
		return 0;
	mkdir(pin_dir(), 0700);
	if (mount("bpf", pin_dir(), "bpf", 0, NULL) < 0) {
		fprintf(stderr, "mrbpf: cannot mount bpffs on %s: %s\n", pin_dir(),
			strerror(errno));
		return -1;
	}
	return 0;
}

static int set_cfg(const char *dev, const struct mr_bpf_cfg *cfg)
{
	char path[256];
	__u32 key = 0;
	int fd, rc;

	pin_path(path, sizeof(path), dev, "cfg");
	fd = bpf_obj_get(path);
	if (fd < 0) {
		fprintf(stderr, "mrbpf: %s: not attached (%s)\n", dev, strerror(errno));
		return -1;
	}
	rc = bpf_map_update_elem(fd, &key, cfg, BPF_ANY);
	close(fd);
	if (rc < 0)
		fprintf(stderr, "mrbpf: cannot update config: %s\n", strerror(errno));
	return rc < 0 ? -1 : 0;
}

static int do_attach(const char *dev, unsigned int ifindex, const struct mr_bpf_cfg *cfg,
		     const char *dir, const char *objpath)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)ifindex,
		    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	struct bpf_object *obj;
	struct bpf_program *prog;
	char path[256];
	int rc, fd;

	if (ensure_bpffs() < 0)
		return 1;
	obj = bpf_object__open_file(objpath, NULL);
	if (obj == NULL || libbpf_get_error(obj)) {
		fprintf(stderr, "mrbpf: cannot open %s\n", objpath);
		return 1;
	}
	if (bpf_object__load(obj) < 0) {
		fprintf(stderr, "mrbpf: cannot load %s: %s\n", objpath, strerror(errno));
		bpf_object__close(obj);
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "mr_tc_impair");
	fd = prog ? bpf_program__fd(prog) : -1;
	pin_path(path, sizeof(path), dev, "cfg");
	unlink(path);
	rc = bpf_map__pin(bpf_object__find_map_by_name(obj, "mr_cfg"), path);
	pin_path(path, sizeof(path), dev, "stats");
	unlink(path);
	if (rc == 0)
		rc = bpf_map__pin(bpf_object__find_map_by_name(obj, "mr_stats"), path);
	if (fd < 0 || rc < 0 || set_cfg(dev, cfg) < 0) {
		fprintf(stderr, "mrbpf: cannot set up maps\n");
		bpf_object__close(obj);
		return 1;
	}
	rc = bpf_tc_hook_create(&hook);
	if (rc < 0 && rc != -EEXIST) {
		fprintf(stderr, "mrbpf: cannot create clsact on %s: %s\n", dev, strerror(-rc));
		bpf_object__close(obj);
		return 1;
	}
	for (int k = 0; k < 2; k++) {
		enum bpf_tc_attach_point ap = k ? BPF_TC_INGRESS : BPF_TC_EGRESS;
		LIBBPF_OPTS(bpf_tc_hook, h1, .ifindex = (int)ifindex, .attach_point = ap);
		LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 1, .priority = 1, .prog_fd = fd,
			    .flags = BPF_TC_F_REPLACE);

		if (strcmp(dir, "both") != 0 && strcmp(dir, k ? "ingress" : "egress") != 0)
			continue;
		rc = bpf_tc_attach(&h1, &opts);
		if (rc < 0) {
			fprintf(stderr, "mrbpf: cannot attach to %s %s: %s\n", dev,
				k ? "ingress" : "egress", strerror(-rc));
			bpf_object__close(obj);
			return 1;
		}
	}
	/* The tc filter and the pins keep program and maps alive after we exit. */
	bpf_object__close(obj);
	printf("mrbpf: attached to %s (%s), loss %.6g, ecn %.6g\n", dev, dir,
	       cfg->loss_thresh / 4294967296.0, cfg->ecn_thresh / 4294967296.0);
	return 0;
}

static int do_detach(const char *dev, unsigned int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)ifindex,
		    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	char path[256];
	int rc = bpf_tc_hook_destroy(&hook); /* deletes the clsact qdisc and its filters */

	pin_path(path, sizeof(path), dev, "cfg");
	unlink(path);
	pin_path(path, sizeof(path), dev, "stats");
	unlink(path);
	if (rc < 0 && rc != -ENOENT && rc != -EINVAL) {
		fprintf(stderr, "mrbpf: cannot remove clsact from %s: %s\n", dev, strerror(-rc));
		return 1;
	}
	printf("mrbpf: detached from %s\n", dev);
	return 0;
}

static int do_stats(const char *dev)
{
	static const char *const names[MR_BPF_NR_STATS] = { "seen", "dropped", "marked",
							     "not_ect" };
	char path[256];
	int ncpu = libbpf_num_possible_cpus(), fd;
	__u64 *vals;
	struct mr_bpf_cfg cfg = { 0, 0 };
	__u32 key = 0;

	if (ncpu <= 0)
		return 1;
	pin_path(path, sizeof(path), dev, "cfg");
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		bpf_map_lookup_elem(fd, &key, &cfg);
		close(fd);
	}
	pin_path(path, sizeof(path), dev, "stats");
	fd = bpf_obj_get(path);
	if (fd < 0) {
		fprintf(stderr, "mrbpf: %s: not attached (%s)\n", dev, strerror(errno));
		return 1;
	}
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (vals == NULL) {
		close(fd);
		return 1;
	}
	printf("loss %.6g ecn %.6g", cfg.loss_thresh / 4294967296.0,
	       cfg.ecn_thresh / 4294967296.0);
	for (__u32 k = 0; k < MR_BPF_NR_STATS; k++) {
		unsigned long long sum = 0;

		if (bpf_map_lookup_elem(fd, &k, vals) == 0)
			for (int c = 0; c < ncpu; c++)
				sum += vals[c];
		printf(" %s %llu", names[k], sum);
	}
	printf("\n");
	free(vals);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct mr_bpf_cfg cfg = { 0, 0 };
	const char *dir = "egress", *obj = getenv("MR_BPF_OBJ") ? getenv("MR_BPF_OBJ") : MR_BPF_OBJ;
	unsigned int ifindex;
	const char *cmd, *dev;

	if (argc < 3) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	dev = argv[2];
	if (strlen(dev) >= IF_NAMESIZE || strchr(dev, '/')) {
		fprintf(stderr, "mrbpf: bad device name '%s'\n", dev);
		return 2;
	}
	for (int i = 3; i < argc; i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "mrbpf: %s needs a value\n", argv[i]);
			return 2;
		}
		if (strcmp(argv[i], "--loss") == 0) {
			if (prob("--loss", argv[i + 1], &cfg.loss_thresh) < 0)
				return 2;
		} else if (strcmp(argv[i], "--ecn") == 0) {
			if (prob("--ecn", argv[i + 1], &cfg.ecn_thresh) < 0)
				return 2;
		} else if (strcmp(argv[i], "--dir") == 0) {
			dir = argv[i + 1];
			if (strcmp(dir, "egress") && strcmp(dir, "ingress") && strcmp(dir, "both")) {
				fprintf(stderr, "mrbpf: --dir: expected egress, ingress or both\n");
				return 2;
			}
		} else if (strcmp(argv[i], "--obj") == 0) {
			obj = argv[i + 1];
		} else {
			fprintf(stderr, "mrbpf: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	ifindex = if_nametoindex(dev);
	if (ifindex == 0) {
		fprintf(stderr, "mrbpf: no device '%s'\n", dev);
		return 1;
	}
	if (strcmp(cmd, "attach") == 0)
		return do_attach(dev, ifindex, &cfg, dir, obj);
	if (strcmp(cmd, "set") == 0)
		return set_cfg(dev, &cfg) < 0 ? 1 : 0;
	if (strcmp(cmd, "detach") == 0)
		return do_detach(dev, ifindex);
	if (strcmp(cmd, "stats") == 0)
		return do_stats(dev);
	usage(stderr);
	return 2;
}
