#!/usr/bin/env bash
# Check that each folder of user/ includes only its own headers and those of
# the folders below it. Arguments: the folders, bottom layer first (the
# Makefile's LAYERS). Prints each include that goes up, and fails if any does.
set -euo pipefail
cd "$(dirname "$0")/.."

bad=0
below=()
for layer in "$@"; do
	allowed=" $layer ${below[*]:-} "
	while IFS=: read -r file line inc; do
		dir=${inc%%/*}
		case "$allowed" in
		*" $dir "*) ;;
		*)
			echo "check-layers: $file:$line includes \"$inc\": $layer/ may use only ${below[*]:-no other folder} and itself" >&2
			bad=1
			;;
		esac
	done < <(grep -HnoE '^#include "[a-z]+/[^"]+"' user/"$layer"/*.[ch] |
		sed -E 's/:#include "([^"]+)"$/:\1/')
	below+=("$layer")
done
exit $bad
