# The checks of a traced CUDA run against PyTorch's own account of it,
# shared by tests/e2e/cuda.bats (Debian's CUDA PyTorch on the stand-in)
# and scripts/gpu-check.sh (any CUDA PyTorch on a real GPU), so that both
# hold the tool to the same list.
#
# Each check reads TRACE (memtrace-bpf --keys output, stopped at the
# moment the fixture printed its figures), MODEL (what
# tests/fixtures/cuda_model.py printed: memory_stats(), memory_snapshot())
# and PID (the traced process), returns 0 when the two agree and 1 after
# saying on stderr what differs. Each line returns on its own failure
# (`|| ck_fail ... || return 1`): the callers run the checks both under
# set -e (bats) and inside an if (gpu-check.sh), where set -e does not
# reach into a function.

# ck_field LINE KEY: the value of key=value in LINE
ck_field() {
	sed -nE "s/.* $2=([^ ]+).*/\1/p" <<<"$1"
}

# ck_torch DEV KEY: PyTorch's figure KEY for device DEV (cuda:N)
ck_torch() {
	ck_field "$(grep "^torch dev=$1 " "$MODEL")" "$2"
}

# ck_fail WHAT: say what differs, and fail
ck_fail() {
	echo "check: $*" >&2
	return 1
}

# ck_live EVENT [CALLER]: the sizes of EVENT's allocations alive at the
# trace's end (from its # live groups), one a line, sorted; CALLER keeps
# those made from that library only
ck_live() {
	awk -v ev="$1" -v caller="${2:-}" '$1 == "#" && $2 == "live" && $4 == "event=" ev {
		for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		if (caller != "" && index(f["caller"], caller) != 1) next
		for (i = 0; i < f["count"]; i++) print f["size"] }' "$TRACE" | sort -n
}

# ck_snapshot WHAT DEV: the sizes of memory_snapshot()'s segments or
# active blocks on DEV, sorted
ck_snapshot() {
	grep "^$1 dev=$2 " "$MODEL" | sed -E 's/.* size=([0-9]+).*/\1/' | sort -n
}

# ck_same WHAT A B: two files of lines are equal
ck_same() {
	diff -u "$2" "$3" >&2 || ck_fail "$1 differ (above: - PyTorch, + memtrace-bpf)" || return 1
}

# the caching allocator's totals and peaks, and its block events, are
# memory_stats()'s
ck_c10() {
	local dev=$1 line
	line="^# device pid=$PID dev=$dev source=c10 allocated=$(ck_torch "$dev" allocated) allocated_peak=$(ck_torch "$dev" allocated_peak) reserved=$(ck_torch "$dev" reserved) reserved_peak=$(ck_torch "$dev" reserved_peak)\$"
	grep -q "$line" "$TRACE" || ck_fail "no line /$line/" || return 1
	[ "$(grep -cE "^[^#].*: c10:alloc: .* dev=$dev " "$TRACE")" -eq "$(ck_torch "$dev" allocs)" ] ||
		ck_fail "$dev: c10:alloc events are not memory_stats()'s allocation.all.allocated" || return 1
	[ "$(grep -cE "^[^#].*: c10:free: .* dev=$dev " "$TRACE")" -eq "$(ck_torch "$dev" frees)" ] ||
		ck_fail "$dev: c10:free events are not memory_stats()'s allocation.all.freed" || return 1
}

# one device's events, counts and bytes, are memory_stats()'s
ck_c10_bytes() {
	local dev=$1
	grep -q "^# event c10:alloc count=$(ck_torch "$dev" allocs) bytes=$(ck_torch "$dev" alloc_bytes)\$" "$TRACE" ||
		ck_fail "c10:alloc count and bytes are not memory_stats()'s" || return 1
	grep -q "^# event c10:free count=$(ck_torch "$dev" frees) bytes=$(ck_torch "$dev" free_bytes)\$" "$TRACE" ||
		ck_fail "c10:free count and bytes are not memory_stats()'s" || return 1
}

# the blocks alive at the end are the snapshot's active blocks (DEVs)
ck_blocks() {
	local dev
	ck_same "live blocks and memory_snapshot()'s active blocks" \
		<(for dev in "$@"; do ck_snapshot block "$dev"; done | sort -n) \
		<(ck_live c10:alloc)
}

# PyTorch's segments are its cudaMalloc calls, reserved their sum
ck_segments() {
	local dev=$1
	ck_same "live cudaMalloc calls of libc10_cuda and memory_snapshot()'s segments" \
		<(ck_snapshot segment "$dev") <(ck_live cudart:cudaMalloc libc10_cuda) || return 1
	grep -q "^# device pid=$PID dev=$dev source=cudart current=$(ck_torch "$dev" reserved) peak=$(ck_torch "$dev" reserved_peak)\$" "$TRACE" ||
		ck_fail "the cudart layer's current and peak are not reserved and its peak" || return 1
}

# fragmentation: reserved - allocated over the segments, and in each
# segment the report lists
ck_frag() {
	local dev=$1 reserved allocated line start want n=0
	reserved=$(ck_torch "$dev" reserved)
	allocated=$(ck_torch "$dev" allocated)
	grep -q "^# frag pid=$PID dev=$dev .* waste_last=$((reserved - allocated)) reserved_last=$reserved allocated_last=$allocated\$" "$TRACE" ||
		ck_fail "# frag's last waste is not reserved - allocated" || return 1
	grep -q "^# frag segments=$(ck_torch "$dev" segments) bytes=$reserved used=$allocated blocks=$(ck_torch "$dev" active_blocks) blocks_outside=0 " "$TRACE" ||
		ck_fail "# frag segments= is not memory_snapshot()'s" || return 1
	while read -r line; do
		start=$(ck_field "$line" start)
		want=$(grep "^segment dev=$dev addr=$start " "$MODEL")
		[ "$(ck_field "$line" size)" = "$(ck_field "$want" size)" ] &&
			[ "$(ck_field "$line" used)" = "$(ck_field "$want" allocated)" ] ||
			ck_fail "segment $start: '$line', PyTorch: '$want'" || return 1
		n=$((n + 1))
	done < <(grep '^# frag segment pid=' "$TRACE")
	[ "$n" -ge 1 ] || ck_fail "no # frag segment line" || return 1
}

# ck_segment_size SIZE: the segment PyTorch's caching allocator asks
# cudaMalloc for, for a request of SIZE bytes (CUDACachingAllocator.cpp:
# round_size to 512 B, then get_allocation_size: up to kSmallSize, 1 MiB,
# a 2 MiB segment; under kMinLargeAlloc, 10 MiB, a 20 MiB one; larger
# ones rounded up to kRoundLarge, 2 MiB)
ck_segment_size() {
	local s=$((($1 + 511) / 512 * 512))
	if ((s <= 1048576)); then
		echo 2097152
	elif ((s < 10485760)); then
		echo 20971520
	else
		echo $(((s + 2097151) / 2097152 * 2097152))
	fi
}

# an OOM (cuda_model.py --oom): the allocator's block with the size asked
# for and the line that asked, the runtime's failure and the retry of the
# segment that size needs (free memory + 1 GiB, the request, is no
# multiple of 2 MiB where other libraries hold device memory), and the
# counts of memory_stats()
ck_oom() {
	local dev=$1 file=$2 oom size line seg
	oom=$(grep '^oom ' "$MODEL")
	size=$(ck_field "$oom" size)
	line=$(ck_field "$oom" line)
	[ -n "$size" ] || ck_fail "the model printed no oom line" || return 1
	seg=$(ck_segment_size "$size")
	sed -n '/^# OOM pid=.* c10:oom /,/^#   top live/p' "$TRACE" >"$TRACE.oom"
	grep -qE "^# OOM pid=$PID tid=$PID dev=$dev at [0-9.]+ s: c10:oom size=$size \([^)]*\): the caching allocator gave up$" "$TRACE.oom" ||
		ck_fail "no OOM block of c10:oom size=$size" || return 1
	grep -q "^#	force_oom ($file:$line)$" "$TRACE.oom" ||
		ck_fail "the OOM block's stack lacks force_oom ($file:$line)" || return 1
	grep -qE "^# OOM pid=$PID tid=$PID dev=[^ ]+ at [0-9.]+ s: cudart:cudaMalloc size=$seg \([^)]*\) failed: cudaErrorMemoryAllocation \(2\)$" "$TRACE" ||
		ck_fail "no OOM block of the failed cudaMalloc size=$seg (the segment of $size)" || return 1
	grep -qE "^# OOM retry pid=$PID tid=$PID: [0-9]+ cached segments freed \([^)]*\), then cudart:cudaMalloc size=$seg again: failed num_alloc_retries=[1-9][0-9]*$" "$TRACE" ||
		ck_fail "no # OOM retry line" || return 1
	[ "$(ck_torch "$dev" num_ooms)" -ge 1 ] || ck_fail "PyTorch counted no OOM" || return 1
	grep -q "^# oom failed_allocations=[1-9][0-9]* num_alloc_retries=$(ck_torch "$dev" num_alloc_retries) allocator_gave_up=$(ck_torch "$dev" num_ooms) " "$TRACE" ||
		ck_fail "# oom's num_alloc_retries and allocator_gave_up are not memory_stats()'s" || return 1
}

# expandable segments: the driver's mappings are the reserved memory
ck_vmm() {
	local dev=$1
	grep -qE '^[^#].*: cuda:cuMemCreate: ' "$TRACE" || ck_fail "no cuMemCreate" || return 1
	grep -qE '^[^#].*: cuda:cuMemMap: ' "$TRACE" || ck_fail "no cuMemMap" || return 1
	! grep -qE '^[^#].*: cudart:cudaMalloc: .* caller=libc10_cuda' "$TRACE" ||
		ck_fail "a cudaMalloc of libc10_cuda under expandable segments" || return 1
	grep -q "^# device pid=$PID dev=[^ ]* source=vmm current=$(ck_torch "$dev" reserved) peak=$(ck_torch "$dev" reserved_peak)\$" "$TRACE" ||
		ck_fail "the vmm layer's current and peak are not reserved and its peak" || return 1
}

# backend:cudaMallocAsync: a tensor a cudaMallocAsync, the live bytes
# PyTorch's allocated
ck_async() {
	local dev=$1
	[ "$(grep -cE '^[^#].*: cudart:cudaMallocAsync: ' "$TRACE")" -gt 50 ] ||
		ck_fail "fewer than 50 cudaMallocAsync" || return 1
	[ "$(ck_torch "$dev" allocated_peak)" -gt 0 ] || ck_fail "PyTorch's peak is 0" || return 1
	# no caching allocator reports a block to learn the device from
	grep -q "^# device pid=$PID dev=cuda:? source=cudart current=$(ck_torch "$dev" allocated) peak=$(ck_torch "$dev" allocated_peak)\$" "$TRACE" ||
		ck_fail "the cudart layer's current and peak are not allocated and its peak" || return 1
}

# backward on PyTorch's CUDA autograd thread is the module whose forward
# made the node, and Adam's state is made in the optimizer phase
ck_backward() {
	local name bytes n=0
	grep -qE "^pt_autograd_0 $PID/[0-9]+ .*: c10:alloc: .* phase=backward module=stack\.1\.down node=" "$TRACE" ||
		ck_fail "no allocation of stack.1.down's backward on pt_autograd_0" || return 1
	while read -r _ name bytes; do
		case $name in *.attn.out_proj) continue ;; esac
		grep -E "^[^#].*: c10:alloc: .* size=$bytes .* phase=backward " "$TRACE" |
			grep -qE " module=$name node=[A-Za-z]*Backward[0-9]*\$" ||
			ck_fail "no gradient of $name ($bytes B) in its backward" || return 1
		[ "$(grep -cE "^[^#].*: c10:alloc: .* size=$bytes .* phase=optimizer " "$TRACE")" -ge 2 ] ||
			ck_fail "no Adam state of $name ($bytes B) in phase=optimizer" || return 1
		n=$((n + 1))
	done < <(grep '^weight ' "$MODEL")
	[ "$n" -ge 6 ] || ck_fail "only $n weights checked" || return 1
}

# --module-log's records are those the hooks of cuda_model.py --modlog
# wrote inside the process (in MiB, as the log), record by record: forward,
# backward and the optimizer's step
ck_modlog() {
	local ours=$1 hooks=$2
	ck_same "--module-log and the in-process hooks' records" \
		<(awk '{ printf "%s %s %.3f %.3f %.3f %.3f\n", $1, $2, $3 / 1048576, $4 / 1048576, $5 / 1048576, $6 / 1048576 }' "$hooks") \
		<(grep '^step=' "$ours" |
			sed -E 's/^step=[0-9]+ module=([^ ]+) stage=([^ ]+) allocated_mib=([^ ]+) reserved_mib=([^ ]+) max_allocated_mib=([^ ]+) max_reserved_mib=([^ ]+).*/\1 \2 \3 \4 \5 \6/') || return 1
	[ "$(grep -c ' post_backward ' "$hooks")" -ge 20 ] ||
		ck_fail "fewer than 20 post_backward hook records" || return 1
}

# no failed call, no lost event or stack
ck_clean() {
	! grep -E '^# (failed|LOST) |^# lost [a-z_]+=[1-9]' "$TRACE" >&2 ||
		ck_fail "failed calls or lost events (above)" || return 1
}
