#!/usr/bin/env bash
# Install the npm tools the export tests use into DIR (default .output/npm):
# speedscope (its file-format JSON schema) and ajv-cli (a JSON-schema
# validator).
# Idempotent: an install with every package present does nothing.
set -euo pipefail

dir=${1:-.output/npm}
pkgs=(speedscope@1.25.0 ajv-cli@5.0.0)

command -v npm >/dev/null || {
	echo "npm-tools.sh: npm missing: run scripts/setup.sh" >&2
	exit 2
}
mkdir -p "$dir"
need=()
for p in "${pkgs[@]}"; do
	[ -e "$dir/node_modules/${p%@*}/package.json" ] || need+=("$p")
done
[ ${#need[@]} -eq 0 ] && exit 0
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "${need[@]}"
