#!/usr/bin/python3
"""Run a command, its stdout to /dev/null or FILE; print its wall time and peak RSS.

Usage: timecmd.py [-o FILE] -- COMMAND [ARG...]

Output, one line on stdout:

    wall_s=<seconds> maxrss_kb=<peak resident set of COMMAND, kB> rc=<exit status>

The wall time is from just before the fork to the child's exit
(time.perf_counter).  The peak RSS is GNU time's %M (/usr/bin/time, from
the Debian package "time") when that is installed: its ru_maxrss starts
from time's own ~1 MB.  Without it, this process's wait4(2) ru_maxrss,
which can start from the RSS of the forked Python (~7 MB), so small
figures are then too high; maxrss_kb is followed by "(wait4)" then.
stderr is left to the caller.
"""

import os
import sys
import tempfile
import time

GNU_TIME = "/usr/bin/time"


def main():
    args = sys.argv[1:]
    out = os.devnull
    if args[:1] == ["-o"] and len(args) > 1:
        out, args = args[1], args[2:]
    if args[:1] != ["--"] or len(args) < 2:
        sys.exit("usage: timecmd.py [-o FILE] -- COMMAND [ARG...]")
    cmd = args[1:]
    rssfile = None
    if os.access(GNU_TIME, os.X_OK):
        fd, rssfile = tempfile.mkstemp(prefix="timecmd.")
        os.close(fd)
        cmd = [GNU_TIME, "-q", "-f", "%M", "-o", rssfile, "--"] + cmd
    null = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(null, 1)
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter()
    os.close(null)
    rss = f"{ru.ru_maxrss}(wait4)"
    if rssfile:
        with open(rssfile) as f:
            lines = f.read().split()
        os.unlink(rssfile)
        if lines and lines[-1].isdigit():
            rss = lines[-1]
    print(f"wall_s={t1 - t0:.4f} maxrss_kb={rss} "
          f"rc={os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    main()
