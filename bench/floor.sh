#!/usr/bin/env bash
# Where the BPF time of one event goes, part by part (issue 18: the floor
# of the per-event cost). Builds variants of the tool in which
# bpf/memtrace.bpf.c returns early at successive points of an event's path
# (the table VARIANTS below), measures mt_enter's ns per run of each with
# bench/bpfcost.py (bpf_stats on W2's loop; the variants of a mode
# interleaved in one run), and gives each part's cost as the difference of
# the medians of the variant that returns after it and the one before.
# Writes the section "Where one event's BPF time goes" of bench/RESULTS.md.
# Run as root, about 3.5 minutes with the defaults (make bench runs it).
#
# The variants are built in a scratch copy (git archive) of this tree's
# tracked files, uncommitted changes included (git stash create, which
# touches neither the tree nor the stash list), or of the commit REV.
#
# Environment knobs: REV (the tree), REPS (3), ITERS (150 timed W2
# iterations), OUT (bench/RESULTS.md), KEEP=1 keeps the work directory.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=floor
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
REV=${REV:-}
REPS=${REPS:-3}
ITERS=${ITERS:-150}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
SRC_FILE=bpf/memtrace.bpf.c
TITLE="Where one event's BPF time goes"

# One row a variant, in the order an event's path reaches its return
# point: name | mode it is measured in (np: -q --no-python, q: -q) |
# anchor: the one line of bpf/memtrace.bpf.c (leading and trailing blanks
# aside) the guard is put before; - for none | the guard | what the variant
# runs beyond the row before it in its mode. The guards are always true (no
# instruction pointer or traced pid is 1, no cookie all ones): a guard
# rather than a bare return keeps the code after it in the source, so that
# -Werror finds no unused function; where clang proves a guard true (the
# cookie on the event's path) it drops that code, which changes
# nothing measured. Past the program's first line a guard reads no ctx
# field: clang may reuse a ctx+offset pointer, which the verifier rejects.
# Each mode's last row, full, is the tool unchanged. New/Delete, which make
# W2's events, have MT_F_SELFCALL and no MT_F_TVARS or MT_F_STASH.
VARIANTS="\
none|np|if (wanted())|if (PT_REGS_IP(ctx) != 1) return 0;|mt_enter returns at once: the program's entry and exit and bpf_stats' own accounting, the floor of any BPF program
cookie|np|if (!(cookie & MT_F_STASH)) {|if (cookie != ~0ULL) return;|bpf_get_attach_cookie (record_entry returns at its start)
batch|np|e->ts = bpf_ktime_get_ns();|if (cookie != ~0ULL) return NULL;|the event's slot in this CPU's batch (two per-CPU lookups, the busy count) and, once in MT_BATCH events, the ring buffer output of the batch; with them bpf_get_current_task_btf and the checks after fill (fill returns at its start: the event is left unwritten)
ts|np|e->pid = task->tgid;|if (cookie != ~0ULL) return NULL;|bpf_ktime_get_ns, the event's time stamp
task|np|tv = cookie & MT_F_TVARS ?|if (cookie != ~0ULL) return NULL;|ids from the task_struct, bpf_get_smp_processor_id, the argument registers, the caller (the probe's ip: no user read)
full|np|-|-|the rest of fill: the MT_F_TVARS check (no lookup for New/Delete), the defaults of the thread's vars, the thread's name
q-event|q|if (walk)|if (ev->pid != 1) return;|the event as with --no-python, in -q: entry_event returns before the walk and backward's Node
py-entry|q|w.c = bpf_map_lookup_elem(&pyconf, &ev->pid);|if (ev->pid != 1) return;|walk_python returns before its pyconf lookup; node_tls, after it, reads backward's Node from libtorch_cpu's TLS: the process's nodetls (hash map lookup by pid), the thread's vars (task storage), one user read (the Node)
py-conf|q|tstate = thread_state(w.c);|if (ev->pid != 1) return;|the process's pyconf (hash map lookup by pid)
py-ts|q|w.st = bpf_map_lookup_elem(&scratch, &zero);|if (ev->pid != 1) return;|thread_state: the thread state's pointer from its TLS slot, one user read
py-bufs|q|if (!read_tstate(&w, tstate))|if (ev->pid != 1) return;|the per-CPU scratch stack, bulk buffer and walk generation lookups
py-tstate|q|copy_stack(w.bulk);|if (ev->pid != 1) return;|read_tstate: the thread state's frame pointer and data stack (chunk, top, limit) in one user read; on 3.11 and 3.12 the current frame through the _PyCFrame, one more
py-copy|q|w.max = w.c->max_depth < MT_MAX_FRAMES ? w.c->max_depth : MT_MAX_FRAMES;|if (ev->pid != 1) return;|copy_stack: the top of the data stack's chunk, up to MT_BULK bytes, in one user read
py-stacks|q|if (bpf_map_lookup_elem(&stacks, &w.hash))|if (ev->pid != 1) return;|the frame walk: bpf_loop over the frames in the copy, a read only for a frame outside it (3.12+: a copy of the C stack at the first entry frame), the hash; and, the stack named, node_tls's second user read (the sequence counter, outside backward)
full|q|-|-|the stacks map: the lookup of the stack's id, and its store when the stack is new"

need_root "uprobes and bpf_stats need it"
whole_numbers REPS ITERS
[ -r "$LIB" ] || die "$LIB missing (python3-torch)"
command -v bpftool >/dev/null || die "bpftool missing (bench/bpfcost.py names the programs with it)"
if [ -n "$REV" ]; then
	COMMIT=$(git rev-parse --verify "$REV^{commit}") ||
		die "REV=$REV: not a commit of this repository"
	SRC_DESC="git $(git rev-parse --short "$COMMIT")"
else
	COMMIT=$(git stash create) || die "git stash create failed"
	COMMIT=${COMMIT:-$(git rev-parse HEAD)}
	SRC_DESC="this tree at git $(git rev-parse --short HEAD)"
	git diff --quiet HEAD -- user bpf ||
		SRC_DESC+=" with uncommitted changes in user/ or bpf/"
fi

make_work floor || die "cannot make a work directory"
T_START=$(date +%s)
mkdir "$WORK/src" "$WORK/bin"
git archive "$COMMIT" | tar -x -C "$WORK/src" || die "cannot copy $SRC_DESC into $WORK/src"
cp "$WORK/src/$SRC_FILE" "$WORK/memtrace.bpf.c.orig"

# apply_edit NAME ANCHOR GUARD: the guard put before the anchor's one line
# in the copy's bpf/memtrace.bpf.c, with that line's indent
apply_edit() {
	local name=$1 anchor=$2 guard=$3 f=$WORK/src/$SRC_FILE n
	n=$(awk -v a="$anchor" '{ t = $0; gsub(/^[ \t]+|[ \t]+$/, "", t) } t == a { n++ } END { print n + 0 }' "$f")
	[ "$n" = 1 ] ||
		die "edit $name: its anchor '$anchor' is on $n lines of $SRC_FILE in $SRC_DESC, not 1: update VARIANTS in bench/floor.sh"
	awk -v a="$anchor" -v g="$guard" '
		{ t = $0; gsub(/^[ \t]+|[ \t]+$/, "", t) }
		t == a { ind = $0; sub(/[^ \t].*$/, "", ind); print ind g }
		{ print }' "$f" >"$f.new"
	mv "$f.new" "$f"
	! cmp -s "$f" "$WORK/memtrace.bpf.c.orig" ||
		die "edit $name did not change $SRC_FILE"
}

# build_variant NAME ANCHOR GUARD: $WORK/bin/NAME, the tool with the edit
build_variant() {
	local name=$1 anchor=$2 guard=$3
	cp "$WORK/memtrace.bpf.c.orig" "$WORK/src/$SRC_FILE"
	if [ "$anchor" != - ]; then
		apply_edit "$name" "$anchor" "$guard"
	fi
	if ! make -C "$WORK/src" -j2 memtrace-bpf >"$WORK/make-$name.log" 2>&1; then
		tail -n 30 "$WORK/make-$name.log" >&2
		die "variant $name does not build (above: the end of its make output)"
	fi
	cp "$WORK/src/memtrace-bpf" "$WORK/bin/$name"
	echo "floor: built $name"
}

# measure MODE ARGS...: the variants of MODE interleaved in one bpfcost.py
# run with the tool's ARGS; $WORK/MODE.tsv: name, median, min, max, runs of
# mt_enter's ns per run
measure() {
	local mode=$1 mts=() name
	shift
	while IFS='|' read -r name m _; do
		if [ "$m" = "$mode" ]; then
			mts+=(--mt "$WORK/bin/$name")
		fi
	done <<<"$VARIANTS"
	$PY "$ROOT/bench/bpfcost.py" --reps "$REPS" --iters "$ITERS" "${mts[@]}" -- "$@" |
		tee "$WORK/$mode.out" >&2 || die "bench/bpfcost.py failed in the $mode run"
	sed -n 's|^mt=.*/\([^/ ]*\) prog=mt_enter ns_per_run median=\([0-9]*\) min=\([0-9]*\) max=\([0-9]*\) runs=\([0-9]*\)$|\1\t\2\t\3\t\4\t\5|p' \
		"$WORK/$mode.out" >"$WORK/$mode.tsv"
	while IFS='|' read -r name m _; do
		if [ "$m" = "$mode" ] && ! grep -q "^$name"$'\t' "$WORK/$mode.tsv"; then
			die "no mt_enter figure for variant $name in the $mode run"
		fi
	done <<<"$VARIANTS"
}

while IFS='|' read -r name _ anchor guard _; do
	[ -e "$WORK/bin/$name" ] || build_variant "$name" "$anchor" "$guard"
done <<<"$VARIANTS"
measure np -q --no-python
measure q -q
T_END=$(date +%s)

# table MODE: the markdown table of MODE's parts
table() {
	printf '%s\n' "$VARIANTS" |
		awk -F'|' -v mode="$1" -v res="$WORK/$1.tsv" '
		BEGIN {
			while ((getline l < res) > 0) {
				split(l, f, "\t")
				med[f[1]] = f[2]; lo[f[1]] = f[3]; hi[f[1]] = f[4]
				runs = f[5]
			}
			print "| part (what the variant runs beyond the row above) | variant | ns | cumulative ns (median of the variant) | min–max of the variant |"
			print "|---|---|---|---|---|"
		}
		$2 == mode {
			d = n++ ? med[$1] - prev : med[$1]
			printf "| %s | `%s` | %d | %d | %d–%d |\n", $5, $1, d, med[$1], lo[$1], hi[$1]
			prev = med[$1]
		}
		END { printf "\nmt_enter runs a W2 run: %d.\n", runs }'
}

CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
{
	echo "## $TITLE"
	echo
	echo "Measured $(date -u) by \`bench/floor.sh\` ($((T_END - T_START)) s) on ${CPU_MODEL:-an unnamed CPU}, $(nproc) cores, kernel $(uname -r) $(uname -m); memtrace-bpf built from $SRC_DESC. W2 = \`$W2_SHAPE --iters $ITERS\`, $REPS repetitions."
	echo
	echo "Each variant is the tool with one early return added to \`$SRC_FILE\` (the table VARIANTS in \`bench/floor.sh\`: an always-true guard before a named line, so the code after it is still built and verified); \`bench/bpfcost.py\` runs the variants of a mode interleaved, one W2 run each a repetition, and reads \`mt_enter\`'s run_time_ns / run_cnt (bpf_stats: the program alone, not the trap; bpf_stats' own cost is in the first row). A part's ns is the difference of the medians of its variant and the one above; parts of a few ns are within the spread (the min–max column)."
	echo
	echo "\`memtrace-bpf -q --no-python\`, \`mt_enter\` ns a run:"
	echo
	table np
	echo
	echo "\`memtrace-bpf -q\` (every Python stack walked), \`mt_enter\` ns a run:"
	echo
	table q
	echo
	echo "Command (as root, in the tree): \`REPS=$REPS ITERS=$ITERS${REV:+ REV=$REV} bench/floor.sh\`."
} >"$WORK/section.md"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
put_section "$OUT" "$TITLE" "$WORK/section.md"
cat "$WORK/section.md"
echo "floor: wrote its section of $OUT in $((T_END - T_START)) s"
