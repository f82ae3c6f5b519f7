#!/usr/bin/env bash
# Install the npm tools the export tests use into DIR (default .output/npm):
# speedscope (its file-format JSON schema, and its app, which the tests open
# our files in), ajv-cli (a JSON-schema validator), playwright-core (drives
# Debian's Chromium: it downloads no browser), and d3 5 with esbuild:
# the page that torch.cuda._memory_viz writes loads MemoryViz.js, which
# imports d3 5 from a CDN this machine cannot reach; DIR/d3.mjs is npm's
# d3 5 bundled by esbuild into the one ES module the tests serve for it.
# Idempotent: an install with every package present does nothing.
set -euo pipefail

dir=${1:-.output/npm}
pkgs=(speedscope@1.25.0 ajv-cli@5.0.0 d3@5.16.0 esbuild@0.28.2
	playwright-core@1.65.1)

command -v npm >/dev/null || {
	echo "npm-tools.sh: npm missing: run scripts/setup.sh" >&2
	exit 2
}
mkdir -p "$dir"
need=()
for p in "${pkgs[@]}"; do
	[ -e "$dir/node_modules/${p%@*}/package.json" ] || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "${need[@]}"
fi
# d3 5's d3.event is a live binding, which a bundle keeps and a copy of
# its UMD build's global would not: MemoryViz's zoom and mouse handlers
# read it
if [ ! -s "$dir/d3.mjs" ] || [ "$dir/node_modules/d3/package.json" -nt "$dir/d3.mjs" ]; then
	# esbuild resolves its standard input's imports from the folder it runs in
	(cd "$dir" && echo 'export * from "d3";' |
		node_modules/.bin/esbuild --bundle --format=esm \
			--log-level=warning --outfile=d3.mjs.tmp &&
		mv d3.mjs.tmp d3.mjs)
fi
