#!/usr/bin/env bash
# cuda-standin.sh: run a CUDA PyTorch command without a GPU. The command
# runs in the Debian root of Debian's CUDA PyTorch (python3-torch-cuda 2.6,
# scripts/debian-root.sh cuda), whose GPU libraries are the stand-ins of
# user/standin: a CUDA runtime, driver, cuBLAS/cuBLASLt, NVML and cuDNN
# that serve "device memory" from host memory and run no kernel. Everything
# above them is real: PyTorch's caching allocator, its statistics, its OOM
# path and expandable segments, so a model makes the allocations it makes
# on a GPU (shapes, not values, decide them); the values computed are
# garbage. Both are built on first use (the root once per machine, a few
# minutes; it needs root).
#
#   cuda-standin.sh [--devices N] [--device-mem SIZE] [--fail-above SIZE]
#                   [--fail-after SIZE] [--bind DIR]... [--lib-last]
#                   -- COMMAND [ARG...]
#   cuda-standin.sh --root    print the root's directory
#   cuda-standin.sh --lib     print the stand-ins' directory inside the root
#
# SIZE is bytes or a number with K, M, G (KiB, MiB, GiB). --devices: how
# many devices (1-8, default 1); --device-mem: memory of each (default
# 16GiB); --fail-above: a device allocation larger than SIZE fails as out
# of memory; --fail-after: a device allocation fails when it would bring
# the bytes allocated over the process's life (frees not subtracted) above
# SIZE. COMMAND's paths are the root's: the host's /tmp is not
# there (stage files under the root's tmp, "$(cuda-standin.sh --root)/tmp"),
# except each DIR of --bind, which is the host's own DIR, at the same
# path, for this command only (read and write: the command runs as root).
# --lib-last puts the stand-ins after the caller's LD_LIBRARY_PATH, not
# before it: they then stand for a GPU machine's installed CUDA, and a
# command that brings its own CUDA libraries through LD_LIBRARY_PATH (as
# memtrace-bpf estimate --dry-run does, from a --bind folder) loads those.
# It runs as root, in a mount namespace of its own with /proc and a
# private /dev/shm, and keeps the caller's environment and process id
# (exec), so that `memtrace-bpf -- cuda-standin.sh -- python3 x.py` traces
# the command itself.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
me=cuda-standin.sh
lib=/opt/memtrace-standin/lib

usage() {
	sed -n 's/^#   //p' "$0" | head -5 >&2
	exit 2
}

die() {
	echo "$me: $*" >&2
	exit 2
}

# size_ok VALUE: bytes or a number with K, M, G, KiB, MiB or GiB
size_ok() {
	[[ $1 =~ ^[0-9]+([KMG](iB)?)?$ ]]
}

env=()
binds=()
last=
while [ $# -gt 0 ]; do
	case $1 in
	--root | --lib) what=$1 ;;
	--devices)
		[[ ${2:-} =~ ^[1-8]$ ]] || die "--devices wants 1 to 8, not '${2:-}'"
		env+=("MT_STANDIN_DEVICES=$2")
		shift
		;;
	--device-mem | --fail-above | --fail-after)
		size_ok "${2:-}" || die "$1 wants a size (bytes, or a number with K, M, G, KiB, MiB, GiB), not '${2:-}'"
		opt=${1#--}
		opt=${opt//-/_}
		env+=("MT_STANDIN_${opt^^}=$2")
		shift
		;;
	--bind)
		[ -d "${2:-}" ] || die "--bind wants a directory of this host, not '${2:-}'"
		binds+=("$(cd "$2" && pwd)")
		shift
		;;
	--lib-last) last=1 ;;
	--)
		shift
		break
		;;
	-h | --help) usage ;;
	*) die "unknown option '$1' (options then -- COMMAND; --help)" ;;
	esac
	shift
done

root=$("$top/scripts/debian-root.sh" cuda) ||
	die "no CUDA PyTorch root: scripts/debian-root.sh cuda failed (above)"
case ${what:-} in
--root)
	echo "$root"
	exit 0
	;;
esac
[ "$(id -u)" -eq 0 ] || die "running in the root needs root: sudo $0 $*"

# The stand-ins are built here and copied into the root when they changed,
# each by a rename, so that a process still running keeps the old file.
make -s --no-print-directory -C "$top" standin >&2 || die "building the stand-ins (make standin) failed"
mkdir -p "$root$lib"
for f in "$top"/.output/standin/*.so*; do
	cmp -s "$f" "$root$lib/${f##*/}" && continue
	cp "$f" "$root$lib/.${f##*/}.new"
	mv "$root$lib/.${f##*/}.new" "$root$lib/${f##*/}"
done
if [ "${what:-}" = --lib ]; then
	echo "$lib"
	exit 0
fi
[ $# -gt 0 ] || die "no command to run (-- COMMAND; --help)"

# The stand-ins come before the root's own libraries (and before the
# caller's LD_LIBRARY_PATH, unless --lib-last); the knobs reach them
# through the environment, which the command's children inherit. The
# --bind folders are given as one colon-separated word.
IFS=:
bound="${binds[*]}"
unset IFS
ldpath="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -z "$last" ] || ldpath="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$lib"
# The mount points of --bind are made in the shared root, where they would
# stay: a watcher, forked before the exec (which keeps the command's pid
# for a tracer), waits for the command's end, then unmounts them in this
# mount namespace (lazily: a tracer's uprobes on a library under a bind
# hold it until the tracer ends) and removes the folders it made, deepest
# first.
exec unshare --mount --propagation private -- /bin/sh -c '
r=$1 bound=$2 made=
shift 2
mount -t proc proc "$r/proc" && mount -t tmpfs -o mode=1777 shm "$r/dev/shm" || exit 97
IFS=:
for d in $bound; do
	p=$d
	while [ -n "$p" ] && [ ! -e "$r$p" ]; do
		made="$made$r$p:"
		p=${p%/*}
	done
	mkdir -p "$r$d" && mount --bind "$d" "$r$d" || exit 97
done
unset IFS
if [ -n "$made" ]; then
	(
		# one process that waits, not a sleep forked every turn
		tail -s 0.2 --pid=$$ -f /dev/null
		IFS=:
		for d in $bound; do umount -l "$r$d" 2>/dev/null; done
		for d in $made; do rmdir "$d" 2>/dev/null; done
	) </dev/null >/dev/null 2>&1 &
fi
exec chroot "$r" "$@"' sh "$root" "$bound" \
	env LD_LIBRARY_PATH="$ldpath" "${env[@]}" "$@"
