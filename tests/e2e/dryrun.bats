#!/usr/bin/env bats
# estimate --dry-run: a CUDA PyTorch job run on the stand-in GPU that the
# binary carries, as a user runs it: the static binary copied into the
# CUDA root (Debian's python3-torch-cuda 2.6; no CUDA runtime on its
# library path) and run there in a privileged container. The CUDA
# runtime, driver, cuBLAS, NVML and cuDNN are stand-ins (user/standin);
# the allocator whose figures the dry run reports is PyTorch's own, so its
# peaks must be PyTorch's max_memory_allocated/reserved to the byte.

load helpers

setup_file() {
	echo "# the CUDA runtime here is a stand-in (user/standin); the allocator is PyTorch's" >&3
	need_roots cuda
}

teardown() {
	root_unstage
}

# stage_dry: the static binary and the fixtures staged in the CUDA root,
# once a test
stage_dry() {
	[ -n "${STAGE:-}" ] && return
	root_stage "$ROOT_CUDA" "$ROOT/.output/static/memtrace-bpf" \
		"$ROOT/tests/fixtures/cuda_model.py" "$ROOT/tests/fixtures/dryrun_job.py" \
		"$ROOT/tests/fixtures/cudnn_job.py"
}

# dry ARG...: memtrace-bpf estimate --dry-run ARG... inside the CUDA root,
# in a privileged container; run's output and status. @STAGE@ in an ARG
# is the stage's path there.
dry() {
	stage_dry
	in_root "$ROOT_CUDA" privileged
	run "${IN_ROOT[@]}" "$STAGE/memtrace-bpf" estimate --dry-run "${@//@STAGE@/$STAGE}"
	echo "$output"
}

@test "dry run: the static binary alone in a container gives PyTorch's own peaks, and leaves nothing behind" {
	! ls "$ROOT_CUDA"/usr/lib/x86_64-linux-gnu/libcudart.so* 2>/dev/null
	dry -- /usr/bin/python3 @STAGE@/cuda_model.py --steps 2
	[ "$status" -eq 0 ]
	read -r alloc res < <(sed -nE 's/^torch dev=cuda:0 .*allocated_peak=([0-9]+) reserved=[0-9]+ reserved_peak=([0-9]+) .*/\1 \2/p' <<<"$output")
	[ "$alloc" -gt 50000000 ]
	[ "$(dry_key peak_allocated)" = "$alloc" ]
	[ "$(dry_key peak_reserved)" = "$res" ]
	grep -q '^memtrace-bpf estimate --dry-run: /usr/bin/python3 .* on 1 stand-in H100-80GB (79.6 GiB, compute capability 9.0, 132 multiprocessors)' <<<"$output"
	grep -q '^Fits       yes: no allocation failed, and the command ended with exit 0$' <<<"$output"
	grep -qE '^# attach pid=[0-9]+ lib=/tmp/memtrace-dryrun\.[A-Za-z0-9]+/libcudart\.so\.12 ' <<<"$output"
	# the report follows, with the GPU's tables only, and its peak's kinds
	grep -q '^cuda:0 c10: .* at the peak' <<<"$output"
	grep -qE '^ +kinds: [a-z_]+ [0-9.]+%' <<<"$output"
	! grep -q '^cpu: ' <<<"$output"
	! ls -d "$ROOT_CUDA"/tmp/memtrace-dryrun.* 2>/dev/null
}

@test "dry run: a preset is the device PyTorch sees, and decides what it allocates" {
	dry --device A100-40GB -- /usr/bin/python3 @STAGE@/dryrun_job.py
	[ "$status" -eq 0 ]
	grep -q '^device name=memtrace-bpf_CUDA_stand-in_(A100-40GB) cc=8.0 sms=108 total=42949672960$' <<<"$output"
	a100=$(dry_key peak_allocated)
	[ "$a100" = "$(sed -nE 's/^torch allocated_peak=([0-9]+) .*/\1/p' <<<"$output")" ]
	dry --device 24GiB --devices 2 -- /usr/bin/python3 @STAGE@/dryrun_job.py
	[ "$status" -eq 0 ]
	grep -q '^device name=memtrace-bpf_CUDA_stand-in cc=9.0 sms=132 total=25769803776$' <<<"$output"
	grep -q ' on 2 stand-in device (24.0 GiB, ' <<<"$output"
	# Hopper's cuBLAS workspace is 32 MiB, others' 8 MiB and 128 KiB
	[ "$(dry_key peak_allocated)" -gt "$a100" ]
}

@test "dry run: a device too small gives the allocator's OOM, its retry and its maker, and exit 1" {
	dry --device 64MiB -- /usr/bin/python3 @STAGE@/cuda_model.py --steps 2
	[ "$status" -eq 1 ]
	grep -qE '^# OOM retry pid=[0-9]+ .* failed num_alloc_retries=1$' <<<"$output"
	grep -qE '^Fits       no: [1-9][0-9]* allocations failed for want of memory, after [1-9][0-9]* retries' <<<"$output"
	# the verdict before the OOM blocks, which the trace printed first
	fits=$(grep -n '^Fits ' <<<"$output" | cut -d: -f1)
	first_oom=$(grep -n '^# OOM pid=' <<<"$output" | head -1 | cut -d: -f1)
	[ "$fits" -lt "$first_oom" ]
	# the failing request and what made it: head's backward
	grep -qE '^# OOM pid=[0-9]+ tid=[0-9]+ dev=cuda:0 at [0-9.]+ s: c10:oom size=33554432 \(32.0 MiB\): the caching allocator gave up$' <<<"$output"
	grep -A1 ': c10:oom size=' <<<"$output" | grep -qx '#   module=head phase=backward node=AddmmBackward0'
	grep -qE '^OOMs       1 allocation failed for want of memory, the allocator retried 1 and gave up 1 time' <<<"$output"
	grep -q 'torch.OutOfMemoryError: CUDA out of memory.* GPU 0 has a total capacity of 64.00 MiB' <<<"$output"
}

@test "dry run: a job started by a shell is followed: the peaks are its own" {
	# issue 39: bash -c "python3 x.py; ..." forks python3; the dry run
	# ran the job on the stand-in, then said "no CUDA PyTorch program"
	dry -- /bin/bash -c "/usr/bin/python3 @STAGE@/cuda_model.py --steps 1; echo shell-done"
	[ "$status" -eq 0 ]
	grep -qx shell-done <<<"$output"
	grep -qE '^# follow pid=[0-9]+ comm=bash \(forked\)$' <<<"$output"
	read -r alloc res < <(sed -nE 's/^torch dev=cuda:0 .*allocated_peak=([0-9]+) reserved=[0-9]+ reserved_peak=([0-9]+) .*/\1 \2/p' <<<"$output")
	[ "$alloc" -gt 50000000 ]
	[ "$(dry_key peak_allocated)" = "$alloc" ]
	[ "$(dry_key peak_reserved)" = "$res" ]
	grep -q '^Fits       yes: ' <<<"$output"
}

@test "dry run: a command that fails or dies is no verdict: Fits unknown, exit 3" {
	# hostile round four and issue 34: a script that raised got "Fits yes"
	stage_dry
	printf '%s\n' 'import torch' 'x = torch.empty(1 << 20, device="cuda")' \
		'raise SystemExit("crash.py: a bug after the first allocation")' \
		>"$ROOT_CUDA$STAGE/crash.py"
	dry -- /usr/bin/python3 @STAGE@/crash.py
	[ "$status" -eq 3 ]
	grep -qx 'crash.py: a bug after the first allocation' <<<"$output"
	grep -qx 'Fits       unknown: the command failed (exit 1; its own output says why) before it ran out of memory or ended: the figures below are up to the failure' <<<"$output"
	! grep -q '^Fits       yes' <<<"$output"
	[ "$(dry_key peak_allocated)" = 4194304 ]
	printf '%s\n' 'import os, signal, torch' 'x = torch.empty(1 << 20, device="cuda")' \
		'os.kill(os.getpid(), signal.SIGSEGV)' >"$ROOT_CUDA$STAGE/crash.py"
	dry -- /usr/bin/python3 @STAGE@/crash.py
	[ "$status" -eq 3 ]
	grep -q '^Fits       unknown: the command failed (killed by SIGSEGV; ' <<<"$output"
}

@test "dry run: the host's reads of device values are counted and their lines named" {
	dry -- /usr/bin/python3 @STAGE@/dryrun_job.py --mask --steps 3
	[ "$status" -eq 0 ]
	mask=$(grep -n 'out = out\[out' "$ROOT/tests/fixtures/dryrun_job.py" | cut -d: -f1)
	item=$(grep -n 'loss.item()' "$ROOT/tests/fixtures/dryrun_job.py" | cut -d: -f1)
	grep -q "^Host reads 9 copies of device memory to the host: a dry run computes no value" <<<"$output"
	# the mask's count read in forward and in its backward, on the engine's thread
	grep -qE "^ +6 at main \\($STAGE/dryrun_job.py:$mask\\)\$" <<<"$output"
	grep -qE "^ +3 at main \\($STAGE/dryrun_job.py:$item\\)\$" <<<"$output"
	dry -- /usr/bin/python3 @STAGE@/cuda_model.py --steps 1
	grep -q '^Host reads none: no device memory was copied to the host$' <<<"$output"
}

@test "dry run: what it cannot serve is one line and exit 2" {
	dry --device X100 -- /usr/bin/python3 @STAGE@/dryrun_job.py
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: no device preset 'X100' (there are: H100-80GB, H100-PCIe, H200, A100-80GB, A100-40GB, L40S, L4, A10G, RTX4090, T4; or a size, e.g. 24GiB)" ]
	dry -- /bin/true
	[ "$status" -eq 2 ]
	grep -qx "memtrace-bpf: estimate --dry-run: /bin/true loaded no CUDA runtime: it is no CUDA PyTorch program (a CPU-only torch, or none)" <<<"$output"
	# Python's own error, not "no CUDA PyTorch program" (issue 34, item 6)
	dry -- /usr/bin/python3 @STAGE@/missing.py
	[ "$status" -eq 2 ]
	grep -q "can't open file '$STAGE/missing.py'" <<<"$output"
	grep -qx "memtrace-bpf: estimate --dry-run: /usr/bin/python3 $STAGE/missing.py failed (exit 2; its own output says why) before it allocated CUDA memory: nothing to estimate" <<<"$output"
	# Debian 12's own torch, 1.13, is a CPU build
	run "$ROOT/.output/static/memtrace-bpf" estimate --dry-run -- /usr/bin/python3 -c 'import torch; torch.ones(2)'
	[ "$status" -eq 2 ]
	grep -q "^memtrace-bpf: estimate --dry-run: /usr/bin/python3 -c import torch; torch.ones(2) loaded no CUDA runtime" <<<"$output"
	# another CUDA runtime found first, as a pip wheel's could be (a copy
	# of the stand-in's own, preloaded)
	cp "$ROOT/.output/standin/libcudart.so.12" "$ROOT_CUDA$STAGE/"
	dry -- /usr/bin/env LD_PRELOAD=@STAGE@/libcudart.so.12 /usr/bin/python3 @STAGE@/dryrun_job.py
	[ "$status" -eq 2 ]
	grep -q "^memtrace-bpf: estimate --dry-run: /usr/bin/env .* loaded the CUDA runtime $STAGE/libcudart.so.12, not the stand-in's libcudart.so.12" <<<"$output"
	dry --device-mem 1G -- /bin/true
	[ "$status" -eq 2 ]
	grep -q "^memtrace-bpf: estimate --dry-run runs PyTorch's own allocator" <<<"$output"
}

@test "dry run: a command that chroots into a root binding the dry run's folder at its own path loads the stand-in there" {
	# what scripts/gpu-check.sh does on the stand-in: the tool on the host,
	# the command in the CUDA root (cuda-standin.sh --lib-last: the root's
	# stand-ins after the dry run's folder), the folder under a bound TMPDIR
	tmp=$(mktemp -d /tmp/memtrace-e2e-bind.XXXXXX)
	cp "$ROOT/tests/fixtures/cuda_model.py" "$ROOT/tests/fixtures/mt_sync.py" "$tmp/"
	TMPDIR=$tmp run "$ROOT/.output/static/memtrace-bpf" estimate --dry-run --device 24GiB -- \
		"$ROOT/scripts/cuda-standin.sh" --lib-last --bind "$tmp" -- /usr/bin/python3 "$tmp/cuda_model.py" --steps 1
	echo "$output"
	left=$(find "$tmp" -name 'memtrace-dryrun.*')
	rm -rf "$tmp"
	# the mount point cuda-standin.sh made for it in the shared root is
	# removed by its watcher once the command ended (issue 34: dozens
	# stayed in the root's /tmp)
	for ((i = 0; i < 50; i++)); do
		[ -e "$ROOT_CUDA$tmp" ] || break
		sleep 0.1
	done
	[ ! -e "$ROOT_CUDA$tmp" ]
	[ "$status" -eq 0 ]
	[ -z "$left" ]
	grep -qE "^# attach pid=[0-9]+ lib=$ROOT_CUDA$tmp/memtrace-dryrun\.[A-Za-z0-9]+/libcudart\.so\.12 " <<<"$output"
	read -r alloc res < <(sed -nE 's/^torch dev=cuda:0 .*allocated_peak=([0-9]+) reserved=[0-9]+ reserved_peak=([0-9]+) .*/\1 \2/p' <<<"$output")
	[ "$(dry_key peak_allocated)" = "$alloc" ]
	[ "$(dry_key peak_reserved)" = "$res" ]
	grep -q ' device_mem=25769803776$' <<<"$output"
}

@test "dry run: convolutions, batch norm, LSTM/GRU and CTC go through the stand-in cuDNN, and the peaks are PyTorch's own" {
	# issue 34: every convolution died of CUDNN_STATUS_NOT_SUPPORTED
	dry -- /usr/bin/python3 @STAGE@/cudnn_job.py
	[ "$status" -eq 0 ]
	! grep -q CUDNN_STATUS <<<"$output"
	read -r alloc res < <(sed -nE 's/^torch allocated_peak=([0-9]+) reserved_peak=([0-9]+)$/\1 \2/p' <<<"$output")
	[ "$alloc" -gt 0 ]
	[ "$(dry_key peak_allocated)" = "$alloc" ]
	[ "$(dry_key peak_reserved)" = "$res" ]
	grep -q '^Fits       yes: ' <<<"$output"
	# what it assumed for cuDNN's workspaces, said once
	[ "$(grep -c '^# dry run: cuDNN workspaces modelled: convolution = .*; a GPU.s engine may ask for more or less$' <<<"$output")" -eq 1 ]
}
