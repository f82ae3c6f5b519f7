// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "proc/maps.h"
#include "proc/procinfo.h"

void mt_cmdline_parse(FILE *f, char *buf, size_t len)
{
	size_t n = fread(buf, 1, len - 1, f);

	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	while (n && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
}

void mt_proc_cmdline(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	mt_cmdline_parse(f, buf, len);
	fclose(f);
}

int mt_proc_exe(int pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	if (len < 2)
		return -ENAMETOOLONG;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

void mt_join_args(char **argv, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; argv[i] && n < len; i++) {
		int w = snprintf(buf + n, len - n, "%s%s", i ? " " : "",
				 argv[i]);

		if (w < 0)
			break;
		n += (size_t)w;
	}
}

bool mt_torch_version(int pid, const char *path, char *buf, size_t len)
{
	const char *base = mt_basename(path), *v;
	char vpath[4096];
	bool found;
	FILE *f;

	if (strncmp(base, "libc10.so", 9))
		return false;
	v = base + 9;
	if (*v == '.' && v[1]) {
		snprintf(buf, len, "%s", v + 1);
		return true;
	}
	snprintf(vpath, sizeof(vpath), "/proc/%d/root%.*s/../version.py", pid,
		 (int)(base - path), path);
	f = fopen(vpath, "re");
	if (!f)
		return false;
	found = mt_version_py_parse(f, buf, len);
	fclose(f);
	return found;
}

bool mt_version_py_parse(FILE *f, char *buf, size_t len)
{
	char line[256];

	while (fgets(line, sizeof(line), f)) {
		char ver[128];

		if (sscanf(line, "__version__ = '%127[^']'", ver) == 1) {
			snprintf(buf, len, "%s", ver);
			return true;
		}
	}
	return false;
}
