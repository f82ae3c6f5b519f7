# Sourced by the bench scripts that add a section to bench/RESULTS.md after
# bench/run.sh wrote it: put_section OUT TITLE FILE replaces the section
# "## TITLE" of OUT (up to the next "## " heading) with FILE, or appends it.
put_section() {
	local out=$1 title=$2 file=$3
	if grep -q "^## $title\$" "$out" 2>/dev/null; then
		awk -v t="## $title" '$0 == t {skip=1; next} /^## /{skip=0} !skip' \
			"$out" >"$out.tmp"
		mv "$out.tmp" "$out"
	fi
	{ echo; cat "$file"; } >>"$out"
}
