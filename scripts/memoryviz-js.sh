#!/usr/bin/env bash
# memoryviz-js.sh: print the path of MemoryViz.js, the program of PyTorch's
# memory viewer: pytorch.org/memory_viz, and the pages that
# torch.cuda._memory_viz's trace_plot() and segment_plot() write, which
# import it from PyTorch's main branch on a CDN this machine cannot reach.
# No Debian binary package and no npm package ships it; Debian's pytorch
# source package does. It is taken from trixie's (PyTorch 2.6; the pool
# answered 404 for sid's and forky's 2.14.1 source, whose binaries it
# has), fetched once per machine with apt-get source (its hashes checked
# against the signed Sources index) and cached outside the clone, under
# MT_MEMORYVIZ (default /var/cache/memtrace-bpf/memoryviz), beside a
# VERSION file naming the source package it came from.
set -euo pipefail

suite=trixie
mirror=${MT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${MT_MEMORYVIZ:-/var/cache/memtrace-bpf/memoryviz}
js=$cache/MemoryViz.js

if [ -s "$js" ]; then
	echo "$js"
	exit 0
fi
mkdir -p "$cache"
# one fetcher at a time: a second caller waits, then finds it there
exec 9>"$cache.lock"
flock 9
if [ ! -s "$js" ]; then
	work=$(mktemp -d /tmp/memtrace-memoryviz.XXXXXX)
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
	echo "deb-src $mirror $suite main" >"$work/sources.list"
	# a private source list and index: the system's apt setup is left
	# alone; apt's download user could not write into this 0700 folder
	apt=(apt-get -q -o Dir::Etc::SourceList="$work/sources.list"
		-o Dir::Etc::SourceParts=/nonexistent
		-o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache"
		-o Acquire::Retries=5 -o APT::Sandbox::User=root)
	echo "memoryviz-js.sh: fetching Debian $suite's pytorch source for MemoryViz.js, once per machine" >&2
	if ! "${apt[@]}" update >&2 ||
		! (cd "$work" && "${apt[@]}" source --download-only pytorch >&2); then
		echo "memoryviz-js.sh: apt-get could not fetch Debian $suite's pytorch source from $mirror (the output above says why)" >&2
		exit 1
	fi
	dsc=("$work"/pytorch_*.dsc)
	orig=("$work"/pytorch_*.orig.tar.*)
	if ! tar -xf "${orig[0]}" -C "$work" --wildcards --no-anchored \
		'torch/utils/viz/MemoryViz.js'; then
		echo "memoryviz-js.sh: ${orig[0]##*/} has no torch/utils/viz/MemoryViz.js" >&2
		exit 1
	fi
	found=("$work"/*/torch/utils/viz/MemoryViz.js)
	sed -n 's/^Version: /pytorch /p' "${dsc[0]}" >"$cache/VERSION"
	cp "${found[0]}" "$js.tmp"
	mv "$js.tmp" "$js"
fi
echo "$js"
