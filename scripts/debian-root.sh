#!/usr/bin/env bash
# debian-root.sh SUITE: print the directory of a Debian root that holds the
# Python and PyTorch the end-to-end tests run in containers and chroots,
# building it first if this machine has none. Roots come from Debian's own
# registry through mmdebstrap; each takes a few minutes, so it is cached
# outside the clone, under MT_ROOTS (default /var/cache/memtrace-bpf/roots),
# in a folder named for the suite and a hash of what it holds: a change of
# the list builds a new root.
#   trixie: CPython 3.13 with python3-torch (torch 2.6)
#   sid:    CPython 3.14 with python3-torch, and a bare python3.15
#   cuda:   trixie's CPython 3.13 with python3-torch-cuda (torch 2.6 built
#           for CUDA 12.4, from contrib; its CUDA libraries from non-free).
#           The libraries that need a GPU (the CUDA runtime and driver,
#           cuBLAS, cuDNN, NVML) are not installed: one local package,
#           memtrace-cuda-standin, stands for them, and scripts/
#           cuda-standin.sh puts the stand-ins of user/standin/ in their
#           place when it runs a command there. Real cuDNN cannot come
#           anyway: Debian's nvidia-cudnn downloads it from outside at
#           install time.
set -euo pipefail

suite=${1:?usage: debian-root.sh trixie|sid|cuda}
dist=$suite
components=main
standin=
case "$suite" in
trixie) pkgs=python3,python3-torch ;;
sid) pkgs=python3,python3-torch,python3.15 ;;
cuda)
	dist=trixie
	components=main,contrib,non-free
	# binutils: torch's memory history resolves C++ frames with addr2line;
	# torchvision and torchaudio: the conformance corpus (tests/conformance)
	pkgs=python3,python3-torch-cuda,binutils,python3-torchvision,python3-torchaudio
	# The versions are those python3-torch-cuda 2.6.0+dfsg-7+b1 asks for.
	standin='Package: memtrace-cuda-standin
Version: 1
Architecture: all
Maintainer: memtrace-bpf tests <root@localhost>
Provides: nvidia-cudnn (= 9.0.0.312~cuda12), libcudart12 (= 12.4.127~12.4.1-2), libcublas12 (= 12.4.5.8~12.4.1-2), libcublaslt12 (= 12.4.5.8~12.4.1-2), libcuda1 (= 550.163.01-2), libcuda.so.1 (= 550.163.01-2)
Conflicts: nvidia-cudnn, libcudart12, libcublas12, libcublaslt12, libcuda1
Replaces: nvidia-cudnn, libcudart12, libcublas12, libcublaslt12, libcuda1
Description: the GPU libraries of this root are memtrace-bpf stand-ins
 The CUDA runtime, driver, cuBLAS, cuDNN and NVML come from
 memtrace-bpf tests/standin at run time (scripts/cuda-standin.sh).
'
	;;
*)
	echo "debian-root.sh: unknown suite '$suite' (trixie, sid or cuda)" >&2
	exit 2
	;;
esac
mirror=${MT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${MT_ROOTS:-/var/cache/memtrace-bpf/roots}
key=$(printf '%s %s%s' "$suite" "$pkgs" "${standin:+ $components $standin}" |
	sha256sum | cut -c1-12)
root=$cache/$suite-$key

if [ -x "$root/usr/bin/python3" ]; then
	echo "$root"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "debian-root.sh: building a root needs root (mmdebstrap): sudo $0 $suite" >&2
	exit 2
fi

# retry TRIES WHAT CMD...: CMD, tried again after a pause when it fails,
# 30 s then four times longer each time (a registry hiccup passes in a
# minute, a mirror's sync in a few); the last failure names WHAT failed
retry() {
	local tries=$1 what=$2 i pause=30
	shift 2
	for ((i = 1; ; i++)); do
		"$@" && return 0
		if [ "$i" -ge "$tries" ]; then
			echo "debian-root.sh: $what failed $tries times; giving up (the output above says why)" >&2
			return 1
		fi
		echo "debian-root.sh: $what failed (try $i of $tries); trying again in $pause s" >&2
		sleep "$pause"
		pause=$((pause * 4))
	done
}

# close_fds: close every descriptor above 2 in this shell. A caller's
# open descriptors reach mmdebstrap and apt: BATS leaves its fd 11 (a
# pipe to its output) open, mmdebstrap gives apt a fd 11 of its own
# (APT::Keep-Fds), and the inherited one broke every download under BATS
# ("apt download failed"), never outside it.
close_fds() {
	local fd
	for fd in /proc/$BASHPID/fd/*; do
		fd=${fd##*/}
		[ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null
	done
	return 0
}

if ! command -v mmdebstrap >/dev/null; then
	retry 3 "apt-get update" apt-get update -qq >&2
	retry 3 "apt-get install mmdebstrap" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends mmdebstrap >&2
fi
mkdir -p "$cache"
# one archive cache for every root and every try: a retry fetches only
# what the failed one did not, and a second root only what the first lacked
archives=$cache/apt-archives
mkdir -p "$archives"
# one builder at a time per root: a second caller waits, then finds it built
exec 9>"$root.lock"
flock 9
if [ ! -x "$root/usr/bin/python3" ]; then
	echo "debian-root.sh: building the Debian $suite root ($pkgs) in $root, once per machine" >&2
	include=("--include=$pkgs")
	if [ -n "$standin" ]; then
		# apt installs a local package from the same path inside the
		# root as outside: it is copied in there, and removed at the end
		deb=$(mktemp -d /tmp/memtrace-standin.XXXXXX)
		trap 'rm -rf "$deb"' EXIT
		mkdir -p "$deb/pkg/DEBIAN"
		printf '%s' "$standin" >"$deb/pkg/DEBIAN/control"
		dpkg-deb --root-owner-group --build "$deb/pkg" \
			"$deb/memtrace-cuda-standin.deb" >&2
		include+=("--include=$deb/memtrace-cuda-standin.deb"
			"--setup-hook=mkdir -p \"\$1$deb\" && cp $deb/memtrace-cuda-standin.deb \"\$1$deb/\""
			"--customize-hook=rm -rf \"\$1$deb\"")
	fi
	# apt retries each download itself; a whole run is tried again when
	# one still fails ("apt download failed"). sid's Release file can be
	# past its Valid-Until date between pushes. The archives come in from
	# the cache and go back to it: the essential set's once extracted (a
	# run that fails later keeps them; essential/unlink skipped so that
	# they stay), all of them at the end.
	build() {
		rm -rf "$root.tmp"
		(
			close_fds
			exec mmdebstrap --variant=apt --components="$components" \
				"${include[@]}" \
				--aptopt='Acquire::Check-Valid-Until "false"' \
				--aptopt='Acquire::Retries "5"' \
				--skip=essential/unlink \
				--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
				--setup-hook="sync-in $archives /var/cache/apt/archives/" \
				--extract-hook="sync-out /var/cache/apt/archives $archives" \
				--customize-hook="sync-out /var/cache/apt/archives $archives" \
				"$dist" "$root.tmp" "$mirror" >&2
		)
	}
	if ! retry 3 "mmdebstrap of the $suite root (downloading and unpacking its packages from $mirror)" build; then
		rm -rf "$root.tmp"
		exit 1
	fi
	mv "$root.tmp" "$root"
fi
echo "$root"
