#!/usr/bin/env bash
# debian-root.sh SUITE: print the directory of a Debian SUITE root that holds
# the Python and PyTorch the end-to-end tests run in containers and chroots,
# building it first if this machine has none. Roots come from Debian's own
# registry through mmdebstrap; each is about 1.3 GiB and takes a few minutes,
# so it is cached outside the clone, under MT_ROOTS (default
# /var/cache/memtrace-bpf/roots), in a folder named for the suite and a hash
# of the packages it holds: a change of the list builds a new root.
#   trixie: CPython 3.13 with python3-torch (torch 2.6)
#   sid:    CPython 3.14 with python3-torch, and a bare python3.15
set -euo pipefail

suite=${1:?usage: debian-root.sh trixie|sid}
case "$suite" in
trixie) pkgs=python3,python3-torch ;;
sid) pkgs=python3,python3-torch,python3.15 ;;
*)
	echo "debian-root.sh: unknown suite '$suite' (trixie or sid)" >&2
	exit 2
	;;
esac
mirror=${MT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${MT_ROOTS:-/var/cache/memtrace-bpf/roots}
key=$(printf '%s %s' "$suite" "$pkgs" | sha256sum | cut -c1-12)
root=$cache/$suite-$key

if [ -x "$root/usr/bin/python3" ]; then
	echo "$root"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "debian-root.sh: building a root needs root (mmdebstrap): sudo $0 $suite" >&2
	exit 2
fi
command -v mmdebstrap >/dev/null || {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >&2
}
mkdir -p "$cache"
# one builder at a time per root: a second caller waits, then finds it built
exec 9>"$root.lock"
flock 9
if [ ! -x "$root/usr/bin/python3" ]; then
	rm -rf "$root.tmp"
	echo "debian-root.sh: building the Debian $suite root ($pkgs) in $root, once per machine" >&2
	# sid's Release file can be past its Valid-Until date between pushes
	mmdebstrap --quiet --variant=apt --include="$pkgs" \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		"$suite" "$root.tmp" "$mirror" >&2
	mv "$root.tmp" "$root"
fi
echo "$root"
