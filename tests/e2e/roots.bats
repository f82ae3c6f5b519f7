#!/usr/bin/env bats
# Debian's own Python and PyTorch in a container and in a plain chroot,
# traced from the host with -p and with --: trixie (CPython 3.13, torch
# 2.6) and sid (CPython 3.14, torch 2.14). The roots are built once per
# machine by scripts/debian-root.sh (cached outside the clone). A real
# model trains on the CPU (attrib_model.py, whose tensors have sizes no
# other tensor has); what the user sees is asserted as attrib.bats does on
# the host's Python.

load helpers

setup_file() {
	need_roots trixie sid
}

teardown() {
	root_unstage
	[ -n "${MT_PID:-}" ] && kill "$MT_PID" 2>/dev/null || true
}

# model_p SUITE WAY: attrib_model.py --steps 2 in SUITE's root entered WAY,
# held at its first call, traced with -p (and $MTARGS); sets TRACE and MODEL
model_p() {
	local root="ROOT_${1^^}"
	root_stage "${!root}" "$ROOT/tests/fixtures/attrib_model.py"
	in_root "${!root}" "$2"
	HELD=1 fixture_in_root fx "${IN_ROOT[@]}" /usr/bin/python3 \
		"$STAGE/attrib_model.py" --steps 2
	trace 1 --keys -p "$fx_PID" ${MTARGS:-}
	release fx
	settle fx '^root '
	finish
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
}

# model_cmd SUITE WAY: the same started by memtrace-bpf -- (the command is
# the way into the root); held before its exit so that its names are read
# from the living process
model_cmd() {
	local root="ROOT_${1^^}" dir
	root_stage "${!root}" "$ROOT/tests/fixtures/attrib_model.py"
	in_root "${!root}" "$2"
	dir=${!root}$STAGE
	ln -sfn "$dir/fx.hold" "$BATS_TEST_TMPDIR/fx.hold"
	: >"$BATS_TEST_TMPDIR/trace.out"
	MT_HOLD="$STAGE/fx.hold" "$MT" --keys -o "$BATS_TEST_TMPDIR/trace.out" -- \
		"${IN_ROOT[@]}" /usr/bin/python3 "$STAGE/attrib_model.py" --steps 2 \
		>"$BATS_TEST_TMPDIR/fx.out" 2>"$BATS_TEST_TMPDIR/trace.err" &
	MT_PID=$!
	settle fx '^root '
	finish
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
}

# event lines (no stack lines) with this exact size
sized() {
	grep -E "^[^#	].* size=$1 " "$TRACE" || true
}

# the libraries are attached, and CPU allocations come with their sizes
assert_events() {
	local torch=$1 mark
	cat "$BATS_TEST_TMPDIR/trace.err"
	grep -q "^# attach pid=[0-9]* lib=.*/libc10\.so\.$torch " "$TRACE"
	grep -q "^# attach pid=[0-9]* lib=.*/libtorch_cpu\.so\.$torch " "$TRACE"
	mark=$(awk '$1=="mark"{print $3}' "$MODEL")
	# one marker per step, each allocated and freed (shown for a failure)
	sized "$mark"
	grep -E '^# (summary|lost|late)' "$TRACE" || true
	[ "$(sized "$mark" | grep -c ': c10:cpu_alloc: .* dev=cpu ')" -eq 2 ]
	[ "$(sized "$mark" | grep -c ': c10:cpu_free: .* dev=cpu ')" -eq 2 ]
	[ "$(events c10:cpu_alloc | wc -l)" -gt 100 ]
}

# assert_python MINOR: the CPython 3.MINOR walked, stacks, module paths,
# phases and backward attribution
assert_python() {
	local line bytes name n lines
	grep -q "^# python pid=[0-9]* version=3\\.$1$" "$TRACE"
	read -r _ line bytes < <(grep '^mark ' "$MODEL")
	# the exact file and line, as the target names its file
	grep -A1 -E "^[^#	].*: c10:cpu_alloc: .* size=$bytes " "$TRACE" |
		grep -q "^	make_mark ($STAGE/attrib_model.py:$line)$"
	while read -r _ name bytes; do
		lines=$(sized "$bytes" | grep ': c10:cpu_alloc: ' | grep ' phase=forward ')
		echo "act $name ($bytes B): $lines"
		grep -q " module=$name\$" <<<"$lines"
		# the only other forward allocation of that size: the ReLU's output
		[ "$(grep -v -e " module=$name\$" -e ' module=[^ ]*\.act$' <<<"$lines" | grep -c .)" -eq 0 ]
	done < <(grep '^act ' "$MODEL")
	# backward's Nodes read from libtorch_cpu's TLS, not probed
	grep -q "^# autograd pid=[0-9]* mode=tls\$" "$TRACE"
	# a weight's gradient: made in backward by the node its forward made
	while read -r _ name bytes; do
		echo "grad $name"
		sized "$bytes" | grep ': c10:cpu_alloc: ' | grep ' phase=backward ' |
			grep -q " module=$name node=AddmmBackward0\$"
	done < <(grep '^weight ' "$MODEL" | grep -v ' head ')
	# Adam's exp_avg and exp_avg_sq
	while read -r _ name bytes; do
		n=$(sized "$bytes" | grep ': c10:cpu_alloc: ' | grep -c ' phase=optimizer ')
		echo "adam $name: $n"
		[ "$n" -ge 2 ]
	done < <(grep '^weight ' "$MODEL")
}

@test "trixie, container (pivot_root), -p: events, stacks, modules, phases" {
	model_p trixie container
	assert_events '2\.6\.0'
	# the container's paths: as the target sees them
	grep -q "^# attach pid=$fx_PID lib=/usr/lib/x86_64-linux-gnu/libc10\.so\.2\.6\.0 " "$TRACE"
	assert_python 13
}

@test "trixie, plain chroot, -p: events, stacks, modules, phases" {
	model_p trixie chroot
	assert_events '2\.6\.0'
	# no mount namespace: maps names the file by our path to it
	grep -q "^# attach pid=$fx_PID lib=$ROOT_TRIXIE/usr/lib/x86_64-linux-gnu/libc10\.so\.2\.6\.0 " "$TRACE"
	assert_python 13
}

@test "trixie, container, --: events, stacks, modules, phases" {
	model_cmd trixie container
	assert_events '2\.6\.0'
	assert_python 13
}

@test "trixie, plain chroot, --: events, stacks, modules, phases" {
	model_cmd trixie chroot
	assert_events '2\.6\.0'
	assert_python 13
}

@test "sid, container (pivot_root), -p: events, stacks, modules, phases" {
	model_p sid container
	assert_events '2\.14\.[0-9]*'
	assert_python 14
}

@test "sid, plain chroot, -p: events, stacks, modules, phases" {
	model_p sid chroot
	assert_events '2\.14\.[0-9]*'
	assert_python 14
}

@test "sid, container, --: events, stacks, modules, phases" {
	model_cmd sid container
	assert_events '2\.14\.[0-9]*'
	assert_python 14
}

@test "sid, plain chroot, --: events, stacks, modules, phases" {
	model_cmd sid chroot
	assert_events '2\.14\.[0-9]*'
	assert_python 14
}

@test "sid (torch 2.14), chroot, -p: DataParallel-like replicas on new threads each step, each Node named" {
	root_stage "$ROOT_SID" "$ROOT/tests/fixtures/forward_threads.py"
	replicas_p chroot "$ROOT_SID" /usr/bin/python3 "$STAGE/forward_threads.py"
}

@test "trixie (torch 2.6), chroot: forward on two threads, each Node named after its own thread's layer" {
	two_threads "$ROOT_TRIXIE" cpu chroot "$ROOT_TRIXIE"
}

@test "sid (torch 2.14), chroot: forward on two threads, each Node named after its own thread's layer" {
	two_threads "$ROOT_SID" cpu chroot "$ROOT_SID"
}

@test "trixie (torch 2.6), container: --module-log nests each module call in its parent's, every step" {
	MTARGS="--module-log $BATS_TEST_TMPDIR/mod.log" model_p trixie container
	cat "$BATS_TEST_TMPDIR/mod.log"
	modlog_check "$BATS_TEST_TMPDIR/mod.log" 2
}

@test "sid (torch 2.14), plain chroot: --module-log nests each module call in its parent's, every step" {
	MTARGS="--module-log $BATS_TEST_TMPDIR/mod.log" model_p sid chroot
	cat "$BATS_TEST_TMPDIR/mod.log"
	modlog_check "$BATS_TEST_TMPDIR/mod.log" 2
}

@test "a library replaced on disk after it was mapped is still the one probed" {
	dir=$BATS_TEST_TMPDIR/lib
	mkdir -p "$dir"
	cp "$FIX/fake/libcudart.so.13" "$dir/"
	LD_LIBRARY_PATH=$dir fixture fx "$FIX/cudart_calls" malloc 5555
	# as a package upgrade does: another file renamed over the path
	cp /bin/true "$dir/new"
	mv -f "$dir/new" "$dir/libcudart.so.13"
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q "^# attach pid=$fx_PID lib=$dir/libcudart\.so\.13\\\\x20(deleted) probes=" "$TRACE"
	events cudart:cudaMalloc | grep -q " size=5555 dev=cuda:? ret=0 "
}
