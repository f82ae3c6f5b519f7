#!/usr/bin/env bash
# corpus-table.sh RESULTS: the conformance corpus's results (the lines
# tests/e2e/corpus.bats writes to $MT_CORPUS_RESULTS, MODEL|MODE|OURS|
# TORCH|VERDICT) as the Markdown table of docs/TESTS.md, on stdout.
set -euo pipefail
[ $# -eq 1 ] && [ -r "$1" ] || { echo "usage: corpus-table.sh RESULTS" >&2; exit 2; }
echo '| model | mode | memtrace-bpf | PyTorch | verdict |'
echo '|---|---|---|---|---|'
awk -F'|' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$1"
