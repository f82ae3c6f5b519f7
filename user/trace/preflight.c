// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "trace/preflight.h"

#define CAP_SYS_ADMIN 21
#define CAP_PERFMON 38
#define CAP_BPF 39

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

int mt_preflight(char *err, size_t errlen)
{
	unsigned long long caps = 0;

	if (effective_caps(&caps) ||
	    !(has(caps, CAP_SYS_ADMIN) ||
	      (has(caps, CAP_BPF) && has(caps, CAP_PERFMON)))) {
		snprintf(err, errlen,
			 "needs root, or CAP_BPF and CAP_PERFMON: run it with "
			 "sudo");
		return -EPERM;
	}
	if (access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		snprintf(err, errlen,
			 "this kernel has no uprobe support "
			 "(CONFIG_UPROBE_EVENTS): use a kernel that has it");
		return -EOPNOTSUPP;
	}
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1) {
		snprintf(err, errlen,
			 "this kernel has no BPF ring buffer: Linux 5.8 or "
			 "newer is needed");
		return -EOPNOTSUPP;
	}
	return 0;
}
