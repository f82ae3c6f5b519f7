// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <bpf/libbpf.h>
#include "lib/err.h"
#include "trace/preflight.h"

#define CAP_SYS_ADMIN 21

static int effective_caps(unsigned long long *caps)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CapEff: %llx", caps) == 1) {
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

static bool has(unsigned long long caps, int cap)
{
	return caps & (1ULL << cap);
}

int mt_preflight(void)
{
	unsigned long long caps = 0;
	struct statfs fs;

	/*
	 * CAP_BPF and CAP_PERFMON are not enough: since the fix of
	 * CVE-2025-38466 (Linux 6.16, and 5.10.240, 5.15.189, 6.1.146,
	 * 6.6.99, 6.12.39 on) a uprobe's perf event needs CAP_SYS_ADMIN,
	 * and /proc/PID/map_files, through which every library is opened,
	 * needs it (or CAP_CHECKPOINT_RESTORE) on every kernel. It covers
	 * BPF and perf too. Another user's process also needs CAP_SYS_PTRACE
	 * (its maps, its memory) and CAP_DAC_READ_SEARCH (its map_files
	 * directory is its owner's, mode 0500); the target is not known
	 * yet here, so the open says that (proc/mapfile.c).
	 */
	/* without procfs the capabilities below cannot even be read */
	if (statfs("/proc", &fs) || fs.f_type != PROC_SUPER_MAGIC) {
		mt_err("no procfs at /proc (a chroot or a container without "
		       "it): the processes are read there; mount it (mount "
		       "-t proc proc /proc) or run memtrace-bpf outside");
		return -ENOENT;
	}
	if (effective_caps(&caps) || !has(caps, CAP_SYS_ADMIN)) {
		mt_err("needs root, or CAP_SYS_ADMIN (and CAP_SYS_PTRACE "
		       "and CAP_DAC_READ_SEARCH for another user's "
		       "process): run it with sudo");
		return -EPERM;
	}
	/*
	 * A chroot or a container without sysfs lacks the file below for
	 * another reason than the kernel: say which (issue 34, item 6)
	 */
	if (statfs("/sys", &fs) || fs.f_type != SYSFS_MAGIC) {
		mt_err("no sysfs at /sys (a chroot or a container without "
		       "it): the uprobes and the kernel's BTF are found "
		       "there; mount it (mount -t sysfs sysfs /sys) or run "
		       "memtrace-bpf outside");
		return -ENOENT;
	}
	if (access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		mt_err("this kernel has no uprobe support "
		       "(CONFIG_UPROBE_EVENTS): use a kernel that has it");
		return -EOPNOTSUPP;
	}
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1) {
		mt_err("this kernel has no BPF ring buffer: Linux 5.8 or "
		       "newer is needed");
		return -EOPNOTSUPP;
	}
	return 0;
}
