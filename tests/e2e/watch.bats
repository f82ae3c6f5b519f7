#!/usr/bin/env bats
# --watch's device sizes: NVML asked in a helper process, so that a
# libnvidia-ml that crashes or hangs is a reason in a line and the trace
# goes on; nvidia-smi where NVML gives nothing. NVML is the stand-in's
# (user/standin/nvml.c), made to die of SIGFPE or hang in nvmlInit_v2 by
# MT_STANDIN_NVML_FAULT; nvidia-smi a script. The device is the stand-in
# runtime of the fixtures (fakecudart.c). On a GPU host the static binary
# died of SIGFPE at its first --watch line (a static glibc 2.36 loading the
# host's libnvidia-ml of glibc 2.39): the last test does that for real, the
# static binary run in the CUDA root, whose glibc is trixie's.

load helpers

# watch ARG...: memtrace-bpf -q --watch 0.2 ARG... -- a process holding
# 1 MiB of cuda:0 for 1.5 s (WATCH_MS), with the stand-in's NVML first on
# the library path and a PATH of the system's folders only (BIN, when
# set, before them); run's output and status
watch() {
	local ms=${WATCH_MS:-1500}
	run env PATH="${BIN:+$BIN:}/usr/sbin:/usr/bin:/sbin:/bin" \
		LD_LIBRARY_PATH="$ROOT/.output/standin:$FIX/fake" \
		"$MT" -q --watch 0.2 "$@" -- "$FIX/cudart_calls" setdevice 0 \
		malloc 1048576 sleep "$ms"
	echo "$output"
}

# fake_smi STATUS LINE...: a script standing for nvidia-smi in BIN: it
# keeps its arguments in BIN/args, prints the LINEs and exits with STATUS
fake_smi() {
	local status=$1
	shift
	BIN=$BATS_TEST_TMPDIR/bin
	mkdir -p "$BIN"
	{
		echo '#!/bin/sh'
		echo "echo \"\$*\" >$BIN/args"
		printf "echo '%s'\n" "$@"
		echo "exit $status"
	} >"$BIN/nvidia-smi"
	chmod +x "$BIN/nvidia-smi"
}

setup_file() {
	! PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v nvidia-smi ||
		{ echo "this host has an nvidia-smi: the tests need none" >&2 && false; }
}

teardown() {
	root_unstage
}

@test "--watch: the stand-in's NVML gives the device's size" {
	MT_STANDIN_DEVICE_MEM=3GiB watch
	[ "$status" -eq 0 ]
	grep -qE '^# watch 0\.[2-9]s at=[0-9.]+ pid=[0-9]+ cuda:0 used=1\.00 MiB of 3\.00 GiB ' <<<"$output"
	! grep -q 'device size unknown' <<<"$output"
}

@test "--watch: NVML dying of SIGFPE is a reason in a line, and the trace goes on to its report" {
	MT_STANDIN_NVML_FAULT=fpe watch
	[ "$status" -eq 0 ]
	[ "$(grep -c '^# watch cuda:0: device size unknown' <<<"$output")" -eq 1 ]
	grep -qx '# watch cuda:0: device size unknown (NVML: nvmlInit_v2 killed by SIGFPE in a helper process; no nvidia-smi on PATH); --device-mem BYTES gives it' <<<"$output"
	[ "$(grep -cE '^# watch [0-9.]+s .* cuda:0 used=1\.00 MiB of unknown ' <<<"$output")" -ge 5 ]
	grep -q '^memtrace-bpf report: ' <<<"$output"
}

@test "--watch: where NVML gives nothing, nvidia-smi's sizes, and why not NVML's" {
	fake_smi 0 "0, 81559" "1, 40960"
	MT_STANDIN_NVML_FAULT=fpe watch
	[ "$status" -eq 0 ]
	[ "$(cat "$BIN/args")" = "--query-gpu=index,memory.total --format=csv,noheader,nounits" ]
	grep -qx '# watch: device sizes from nvidia-smi (NVML: nvmlInit_v2 killed by SIGFPE in a helper process)' <<<"$output"
	# 81559 MiB, from the first line on
	[ "$(grep -cE '^# watch [0-9.]+s .* cuda:0 used=1\.00 MiB of 79\.6 GiB ' <<<"$output")" -eq "$(grep -cE '^# watch [0-9.]+s ' <<<"$output")" ]
	! grep -q 'device size unknown' <<<"$output"
	# NVML's own answer comes first when there is one
	MT_STANDIN_DEVICE_MEM=3GiB watch
	grep -qE '^# watch [0-9.]+s .* cuda:0 used=1\.00 MiB of 3\.00 GiB ' <<<"$output"
	! grep -q 'nvidia-smi' <<<"$output"
}

@test "--watch: an nvidia-smi that fails is named with its first line" {
	fake_smi 9 "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."
	MT_STANDIN_NVML_FAULT=fpe watch
	[ "$status" -eq 0 ]
	grep -qx "# watch cuda:0: device size unknown (NVML: nvmlInit_v2 killed by SIGFPE in a helper process; nvidia-smi exited with 9: NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.); --device-mem BYTES gives it" <<<"$output"
}

# the helper is a fork of the tracer: its command line is the tracer's
helpers_left() {
	pgrep -f "^$MT -q --watch 0\.2" || true
}

@test "--watch: an NVML that hangs is given up after 10 s, while the trace goes on; a tracer ending first ends it" {
	WATCH_MS=13000 MT_STANDIN_NVML_FAULT=hang watch
	[ "$status" -eq 0 ]
	grep -qx '# watch cuda:0: device size unknown (NVML: nvmlInit_v2 timed out after 10 s in a helper process; no nvidia-smi on PATH); --device-mem BYTES gives it' <<<"$output"
	# a line every 0.2 s meanwhile, the size not yet known, nor said so
	[ "$(grep -cE '^# watch [0-9.]+s .* of unknown ' <<<"$output")" -ge 40 ]
	[ "$(grep -B1 'device size unknown' <<<"$output" | sed -nE '1s/^# watch ([0-9]+)\..*/\1/p')" -ge 9 ]
	[ -z "$(helpers_left)" ]
	MT_STANDIN_NVML_FAULT=hang watch
	[ "$status" -eq 0 ]
	! grep -q 'device size unknown' <<<"$output"
	[ -z "$(helpers_left)" ]
}

@test "--watch: the static binary in a root of another glibc: NVML's load dies in its helper, the trace goes on" {
	need_roots cuda
	STANDIN=$ROOT/scripts/cuda-standin.sh
	"$STANDIN" --lib >/dev/null
	root_stage "$ROOT_CUDA" "$ROOT/.output/static/memtrace-bpf"
	# trixie's glibc, not the build's
	[ "$(chroot "$ROOT_CUDA" getconf GNU_LIBC_VERSION)" != "glibc $(getconf GNU_LIBC_VERSION | cut -d' ' -f2)" ]
	mkdir "$ROOT_CUDA$STAGE/bin"
	BIN=$ROOT_CUDA$STAGE/bin
	printf '#!/bin/sh\necho "0, 24576"\n' >"$BIN/nvidia-smi"
	chmod +x "$BIN/nvidia-smi"
	for path in /usr/sbin:/usr/bin:/sbin:/bin "$STAGE/bin:/usr/sbin:/usr/bin:/sbin:/bin"; do
		run env PATH="$path" "$STANDIN" --bind /sys -- "$STAGE/memtrace-bpf" -q --watch 0.2 -- \
			/usr/bin/python3 -c 'import ctypes, time
c = ctypes.CDLL("libcudart.so.12")
p = ctypes.c_void_p()
assert c.cudaMalloc(ctypes.byref(p), 1 << 20) == 0
time.sleep(1.5)'
		echo "$output"
		[ "$status" -eq 0 ]
		grep -q '^memtrace-bpf report: ' <<<"$output"
		if [ "$path" = /usr/sbin:/usr/bin:/sbin:/bin ]; then
			grep -qx "# watch cuda:0: device size unknown (NVML: dlopen(libnvidia-ml.so.1) killed by SIGFPE in a helper process: a static memtrace-bpf cannot load this system's libnvidia-ml; no nvidia-smi on PATH); --device-mem BYTES gives it" <<<"$output"
		else
			grep -qx "# watch: device sizes from nvidia-smi (NVML: dlopen(libnvidia-ml.so.1) killed by SIGFPE in a helper process: a static memtrace-bpf cannot load this system's libnvidia-ml)" <<<"$output"
			grep -qE '^# watch [0-9.]+s .* cuda:0 used=1\.00 MiB of 24\.0 GiB ' <<<"$output"
		fi
	done
}
