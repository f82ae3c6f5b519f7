#!/usr/bin/env bash
# Install every Debian package the build, the demo and the tests need. Idempotent.
set -euo pipefail

pkgs=(
	make clang llvm gcc g++ pkg-config
	libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev
	libyajl-dev libmicrohttpd-dev prometheus
	libcmocka-dev bats bpftrace librsvg2-bin
	libdevel-nytprof-perl
	cppcheck clang-format
	python3 python3-torch libopenblas0-serial
	util-linux procps binutils curl time gdb tmux
	chromium python3-pil go-md2man
)

if [ "$(id -u)" -ne 0 ]; then
	echo "setup.sh: run as root (apt-get needs it): sudo $0" >&2
	exit 2
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
# node and npm (the export tests' checkers): Debian's, unless a node with
# its own npm (NodeSource's) is there already, which Debian's npm conflicts with
if ! command -v npm >/dev/null; then
	command -v node >/dev/null || missing+=(nodejs)
	missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -e /usr/local/cuda/include/cuda_runtime_api.h ]; then
	echo "setup.sh: note: no CUDA toolkit under /usr/local/cuda; cudart tests will be skipped" >&2
fi
