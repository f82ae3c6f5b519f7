#!/usr/bin/env bats
# PyTorch's real CUDA caching allocator, checked against PyTorch's own
# figures. The CUDA runtime, driver, cuBLAS, NVML and cuDNN are stand-ins
# (user/standin: "device memory" is host memory and no kernel runs, there
# being no GPU here); everything above them is Debian's CUDA build of
# PyTorch 2.6 (python3-torch-cuda, in the root scripts/debian-root.sh cuda
# builds once per machine). tests/fixtures/cuda_model.py trains a small
# transformer on "cuda" and prints, at its end, PyTorch's own account:
# memory_stats(), memory_snapshot()'s segments and active blocks. Each
# test traces it with -p from its READY, before its first CUDA allocation,
# and compares what the tool says with that account, to the byte.

load helpers
load cuda_checks

STANDIN=$ROOT/scripts/cuda-standin.sh

setup_file() {
	echo "# the CUDA runtime here is a stand-in (user/standin); the allocator is PyTorch's" >&3
	need_roots cuda
	# the stand-ins, built and put in the root once for the file
	"$STANDIN" --lib >/dev/null
}

teardown() {
	root_unstage
	[ -n "${MT_PID:-}" ] && kill "$MT_PID" 2>/dev/null || true
}

# model [STANDIN_OPTION...] -- [MODEL_ARG...]: cuda_model.py on the
# stand-in, traced with -p from its READY to its end by memtrace-bpf
# $MTCMD (default: the summary with every live group) and $MTARGS; sets
# MODEL (its output: PyTorch's figures) and TRACE. @STAGE@ in a MODEL_ARG
# is the stage's path in the root.
model() {
	local -a opts=() cmd=(--keys --top-live 100000)
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	[ -n "${MTCMD:-}" ] && read -ra cmd <<<"$MTCMD"
	root_stage "$ROOT_CUDA" "$ROOT/tests/fixtures/cuda_model.py" \
		"$ROOT/tests/fixtures/memviz_compare.py"
	HELD=1 fixture_in_root fx "$STANDIN" "${opts[@]}" -- /usr/bin/python3 \
		"$STAGE/cuda_model.py" "${@//@STAGE@/$STAGE}"
	trace 0 "${cmd[@]}" -p "$fx_PID" ${MTARGS:-}
	# every library is attached when the process's Python is found
	wait_for "${MT_LOG:-$BATS_TEST_TMPDIR/trace.out}" '^# python pid=' 60
	release fx
	# the trace ends when the model printed its figures
	settle fx '^weight head ' stop
	cat "$BATS_TEST_TMPDIR/trace.err" "$BATS_TEST_TMPDIR/fx.err" >&2
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
	PID=$fx_PID
}

@test "cuda: the caching allocator's totals, peaks, live blocks and segments are PyTorch's own" {
	model -- --steps 3
	cat "$MODEL"
	grep -E '^# (device|event|frag)' "$TRACE"
	# Debian's CUDA build of libc10, over the stand-in runtime and driver
	grep -q "^# attach pid=$PID lib=$ROOT_CUDA/usr/lib/x86_64-linux-gnu/libc10\.so\.2\.6\.0 " "$TRACE"
	grep -q "^# attach pid=$PID lib=$ROOT_CUDA/opt/memtrace-standin/lib/libcudart\.so\.12 " "$TRACE"
	grep -q "^# attach pid=$PID lib=$ROOT_CUDA/opt/memtrace-standin/lib/libcuda\.so\.1 " "$TRACE"
	ck_c10 cuda:0
	ck_c10_bytes cuda:0
	[ "$(ck_torch cuda:0 active_blocks)" -gt 10 ]
	ck_blocks cuda:0
	ck_segments cuda:0
	ck_frag cuda:0
	# cuBLAS's own memory (user/standin/cublas.c: a handle a thread, the
	# main one's and the autograd engine's), from the driver: not in the
	# segments, said apart
	grep -q "^# frag other_library pid=$PID dev=cuda:0 caller=libcublas\.so\.12 ranges=6 bytes=$((2 * (1024 + 131072 + 2097152)))\$" "$TRACE"
	# the threads set their device before the attach: each one's learned
	# from the allocator's first block on it, its first segment included
	! grep -n 'cuda:?' "$TRACE"
	# kinds at the peak: attached before the allocator held anything, so
	# what came before the first phase is the model's; Adam keeps two
	# moments a parameter (its step counts live on the CPU)
	local kinds sum=0 k
	kinds=$(grep "^# kinds pid=$PID dev=cuda:0 space=c10 " "$TRACE")
	for k in parameters inputs activations gradients optimizer_state temporaries unknown; do
		sum=$((sum + $(ck_field "$kinds" $k)))
	done
	[ "$sum" -eq "$(ck_torch cuda:0 allocated_peak)" ]
	[ "$(ck_field "$kinds" unknown)" -eq 0 ]
	[ "$(ck_field "$kinds" optimizer_state)" -eq $((2 * $(ck_field "$kinds" parameters))) ]
	[ "$(ck_field "$kinds" activations)" -gt 0 ]
	ck_clean
}

@test "cuda: an OOM: the block names the size and the line, retries and OOMs are PyTorch's" {
	model --device-mem 1GiB -- --steps 1 --oom
	cat "$MODEL"
	ck_oom cuda:0 "$STAGE/cuda_model.py"
	grep -q '^# event c10:oom count=1 ' "$TRACE"
	ck_c10 cuda:0
}

@test "cuda: expandable_segments:True: the driver's mappings are the reserved memory" {
	PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True model -- --steps 2
	grep -E '^# (device|event)' "$TRACE"
	ck_c10 cuda:0
	ck_vmm cuda:0
	ck_blocks cuda:0
}

@test "cuda: backend:cudaMallocAsync: every tensor a cudaMallocAsync, the live bytes PyTorch's allocated" {
	PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync model -- --steps 2
	grep -E '^# (device|event)' "$TRACE"
	ck_async cuda:0
}

@test "cuda: two devices: each device's figures are PyTorch's for it" {
	model --devices 2 -- --steps 2 --devices 2
	grep '^torch ' "$MODEL"
	ck_c10 cuda:0
	ck_c10 cuda:1
	[ "$(ck_torch cuda:0 allocated_peak)" -ne "$(ck_torch cuda:1 allocated_peak)" ]
	ck_blocks cuda:0 cuda:1
}

@test "cuda: backward on PyTorch's CUDA autograd thread is its forward's module, Adam's state the optimizer's" {
	model -- --steps 2
	ck_backward
	# read from the autograd thread's own TLS: no probe at any Node
	grep -q "^# autograd pid=$PID mode=tls\$" "$TRACE"
}

@test "cuda: two threads training at once: backward on the autograd thread named after each Node's own forward thread" {
	# the CUDA engine runs every Node on its device thread: the Node's
	# thread id, not the allocating thread, says whose forward made it
	two_threads "$ROOT_CUDA" cuda "$STANDIN" --
	# both models' weight gradients made on one thread, the engine's
	[ "$(grep -E '^[^#	].* size=(32768|18432) .* node=AddmmBackward0$' "$TRACE" | awk '{ print $2 }' | sort -u | wc -l)" -eq 1 ]
}

@test "cuda: --export memviz against PyTorch's _record_memory_history: same segments, blocks and history; _memory_viz renders both" {
	MTARGS="--export memviz -o $BATS_TEST_TMPDIR/mt.pickle" model -- --steps 2 \
		--history @STAGE@/torch.pickle
	cp "$BATS_TEST_TMPDIR/mt.pickle" "$ROOT_CUDA$STAGE/mt.pickle"
	run "$STANDIN" -- /usr/bin/python3 "$STAGE/memviz_compare.py" \
		"$STAGE/torch.pickle" "$STAGE/mt.pickle"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE '^cuda:0 active blocks: torch ([1-9][0-9]+), ours \1$' <<<"$output"
	grep -q '^ours cuda:0 trace_plot ' <<<"$output"
}

@test "cuda: --module-log: forward, backward and optimizer records are those hooks write inside the process" {
	MTARGS="--module-log $BATS_TEST_TMPDIR/mod.log" model -- --steps 2 \
		--modlog @STAGE@/hooks.log
	ck_modlog "$BATS_TEST_TMPDIR/mod.log" "$ROOT_CUDA$STAGE/hooks.log"
}

@test "cuda: estimate --check: the replay reserves what PyTorch's allocator reserved, at every event" {
	MT_LOG=$BATS_TEST_TMPDIR/trace.err MTCMD="record -o $BATS_TEST_TMPDIR/t.mtb" \
		model -- --steps 2
	run "$MT" estimate -i "$BATS_TEST_TMPDIR/t.mtb" --check
	echo "$output"
	[ "$status" -eq 0 ]
	n=$(($(ck_torch cuda:0 allocs) + $(ck_torch cuda:0 frees)))
	grep -q "^# estimate cuda:0 check: ok: the model's reserved equals the recorded reserved at all $n events\$" <<<"$output"
	grep -q "^# estimate cuda:0 peak_allocated=$(ck_torch cuda:0 allocated_peak) peak_reserved=$(ck_torch cuda:0 reserved_peak) " <<<"$output"
}

@test "cuda: a CUDA graph's capture, with its private pool, is traced without error" {
	model -- --steps 1 --graph
	grep -q '^graph out=' "$MODEL"
	ck_c10 cuda:0
	ck_clean
}

@test "cuda: --watch takes the device's size from NVML" {
	LD_LIBRARY_PATH=$ROOT/.output/standin MT_STANDIN_DEVICE_MEM=3GiB \
		MTARGS="--watch 0.2" model --device-mem 3GiB -- --steps 6
	grep '^# watch' "$TRACE"
	grep -qE "^# watch [0-9.]+s at=[0-9.]+ pid=$fx_PID cuda:0 used=[0-9.]+ [KMG]?i?B of 3\.00 GiB " "$TRACE"
}

@test "cuda: --watch reconciles NVML's figure: reserved, cuBLAS's workspaces, a ctypes cudaMalloc, and the context unexplained" {
	# issue 37, item 3: the stand-in's NVML lists the traced process (its
	# registry, read from the tracer's helper) with what it handed out and
	# a context of MT_STANDIN_CONTEXT_MEM
	local ctx=$((300 << 20)) ext=$((16 << 20)) cublas=$((2 * (1024 + 131072 + 2097152)))
	MT_STANDIN_CONTEXT_MEM=$ctx LD_LIBRARY_PATH=$ROOT/.output/standin \
		MTARGS="--watch 0.2" model -- --steps 2 --ctypes-malloc $ext
	grep -E '^# (nvidia_smi|frag other_library)' "$TRACE"
	grep -q "^ctypes ptr=0x[0-9a-f]* size=$ext\$" "$MODEL"
	line=$(grep "^# nvidia_smi pid=$PID dev=cuda:0 " "$TRACE")
	[ "$(ck_field "$line" reserved)" -eq "$(ck_torch cuda:0 reserved)" ]
	[ "$(ck_field "$line" cublas)" -eq "$cublas" ]
	[ "$(ck_field "$line" extensions)" -eq "$ext" ]
	[ "$(ck_field "$line" outside)" -eq $((cublas + ext)) ]
	[ "$(ck_field "$line" unexplained)" -eq "$ctx" ]
	[ "$(ck_field "$line" used)" -eq $(($(ck_torch cuda:0 reserved) + cublas + ext + ctx)) ]
	[ "$(ck_field "$line" settled)" -eq 1 ]
	[ "$(ck_field "$line" foreign)" -eq 0 ]
	# the same extension's range, by its caller: ctypes calls through libffi
	grep -qE "^# frag other_library pid=$PID dev=cuda:0 caller=libffi\.so[.0-9]* ranges=1 bytes=$ext\$" "$TRACE"
}

# ranks MODEL_ARG... -- MT_OPTION...: two gloo ranks of cuda_model.py
# --rank MODEL_ARG... on two stand-in devices (contexts of ${ctx:-0}
# bytes), launched by a shell as torchrun would, held at READY, traced
# whole by memtrace-bpf --keys --children LAUNCHER MT_OPTION... from then
# to their end; each rank's output in $DIR/rankR.out, the tracer's in
# $BATS_TEST_TMPDIR/trace.out (the tool's own lines, or in its -o)
ranks() {
	local -a margs=()
	local i
	while [ "$1" != -- ]; do
		margs+=("$1")
		shift
	done
	shift
	[ -n "${STAGE:-}" ] || root_stage "$ROOT_CUDA" "$ROOT/tests/fixtures/cuda_model.py"
	DIR=$ROOT_CUDA$STAGE
	rm -f "$DIR"/go "$DIR"/hold "$DIR"/rank?.out "$BATS_TEST_TMPDIR"/trace.*
	# each rank says READY in its own file and waits for go; held at its
	# end, for names
	MT_STANDIN_CONTEXT_MEM=${ctx:-0} MT_GO=$STAGE/go MT_HOLD=$STAGE/hold \
		USE_LIBUV=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
		MASTER_PORT=$((20000 + RANDOM % 20000)) \
		"$STANDIN" --devices 2 -- /bin/sh -c 'd=$0; for r in 0 1; do
			RANK=$r LOCAL_RANK=$r /usr/bin/python3 "$d/cuda_model.py" \
				--rank "$@" >"$d/rank$r.out" &
		done; wait' "$STAGE" "${margs[@]}" 2>"$BATS_TEST_TMPDIR/run.err" &
	launcher=$!
	wait_for "$DIR/rank0.out" '^READY ' 120
	wait_for "$DIR/rank1.out" '^READY ' 120
	# the tracer's NVML is the stand-in's, of the same two devices
	LD_LIBRARY_PATH=$ROOT/.output/standin MT_STANDIN_DEVICES=2 \
		"$MT" --keys --children "$launcher" "$@" \
		>"$BATS_TEST_TMPDIR/trace.out" 2>"$BATS_TEST_TMPDIR/trace.err" &
	MT_PID=$!
	# the ranks share the libraries' probes: one attach line, a python
	# line each (in the -o file when there is one for all)
	for ((i = 0; i < 1200; i++)); do
		[ "$(cat "$BATS_TEST_TMPDIR"/trace.* 2>/dev/null | grep -c '^# python pid=')" -ge 2 ] && break
		sleep 0.1
	done
	touch "$DIR/go"
	wait_for "$DIR/rank0.out" '^weight head ' 120
	wait_for "$DIR/rank1.out" '^weight head ' 120
	# held at their end: the last state, a few of --watch's samples of it
	sleep 2
	kill -INT "$MT_PID"
	finish
	touch "$DIR/hold"
	wait "$launcher"
	cat "$BATS_TEST_TMPDIR/trace.err" "$BATS_TEST_TMPDIR/run.err"
	[ "$MT_STATUS" -eq 0 ]
}

# Debian's torchrun 2.6 cannot start: its rendezvous asks TCPStore for
# libuv, which Debian's build lacks ("use_libuv was requested but PyTorch
# was build without libuv support"), and USE_LIBUV=0 reaches only the
# workers' env:// rendezvous. So a shell launches the ranks as torchrun
# would (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and is the
# launcher --children follows.
@test "cuda: two gloo ranks under a launcher, a stand-in device a rank: a file a rank, each with its rank's figures" {
	ranks --steps 2 -- -o "$BATS_TEST_TMPDIR/rank{rank}.log"
	for r in 0 1; do
		log=$BATS_TEST_TMPDIR/rank$r.log
		grep -E '^# (device|rank) ' "$log"
		t=$(grep "^torch dev=cuda:$r " "$DIR/rank$r.out")
		echo "$t"
		grep -q "^# rank rank=$r " "$log"
		grep -qE "^# device pid=[0-9]+ dev=cuda:$r source=c10 allocated=$(ck_field "$t" allocated) allocated_peak=$(ck_field "$t" allocated_peak) reserved=$(ck_field "$t" reserved) reserved_peak=$(ck_field "$t" reserved_peak)\$" "$log"
		# the other rank's device is not in this rank's file
		! grep -q "^# device .* dev=cuda:$((1 - r)) source=c10 " "$log"
	done
}

# rank_smi RANK DEV: rank RANK's nvidia_smi line of cuda:DEV in $LOG
rank_smi() {
	local p
	p=$(sed -nE "s/^# rank rank=$1 pid=([0-9]+) .*/\\1/p" "$LOG")
	grep "^# nvidia_smi pid=$p dev=cuda:$2 " "$LOG" || true
}

@test "cuda: a rank that never calls set_device is named holding a context on cuda:0; with it, none" {
	# issue 37, item 4: as CUDA 12, the stand-in makes a context at
	# cudaSetDevice; a rank whose current device stays cuda:0 has one
	# there, which NVML lists and no allocation explains
	local ctx=$((300 << 20)) line r
	LOG=$BATS_TEST_TMPDIR/trace.log
	ranks --steps 1 -- --watch 0.2 -o "$LOG"
	grep -E '^# (rank|nvidia_smi) ' "$LOG"
	for r in 0 1; do
		# on its own device: its reserved, and its context unexplained
		line=$(rank_smi $r $r)
		[ "$(ck_field "$line" foreign)" -eq 0 ]
		[ "$(ck_field "$line" unexplained)" -eq "$ctx" ]
	done
	line=$(rank_smi 1 0)
	[ "$(ck_field "$line" foreign)" -eq 1 ]
	[ "$(ck_field "$line" used)" -eq "$ctx" ]
	[ "$(ck_field "$line" reserved)" -eq 0 ]
	[ -z "$(rank_smi 0 1)" ]
	# with torch.cuda.set_device(LOCAL_RANK) first: each on its own only
	ranks --steps 1 --set-device -- --watch 0.2 -o "$LOG"
	grep -E '^# (rank|nvidia_smi) ' "$LOG"
	[ "$(ck_field "$(rank_smi 1 1)" unexplained)" -eq "$ctx" ]
	[ -z "$(rank_smi 1 0)" ]
	[ -z "$(rank_smi 0 1)" ]
	! grep -q '^# nvidia_smi .* foreign=1' "$LOG"
}

@test "cuda: an attach to a job already holding device memory says what the allocator held before it, apart from the peak" {
	root_stage "$ROOT_CUDA" "$ROOT/tests/fixtures/mt_sync.py"
	cat >"$ROOT_CUDA$STAGE/late.py" <<-'EOF'
		import torch, mt_sync
		early = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
		mt_sync.start()
		late = torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
		print(f"torch allocated={torch.cuda.memory_allocated()}", flush=True)
		mt_sync.finish()
	EOF
	HELD=1 fixture_in_root fx "$STANDIN" -- /usr/bin/python3 "$STAGE/late.py"
	trace 0 -q -p "$fx_PID"
	wait_for "$BATS_TEST_TMPDIR/trace.err" '^# python pid=' 60
	release fx
	settle fx '^torch allocated=' stop
	cat "$BATS_TEST_TMPDIR/trace.err" >&2
	cat "$TRACE"
	grep -qE '^           cuda:0 c10: 8\.00 MiB at ' "$TRACE" || grep -qE '^Peak       cuda:0 c10: 8\.00 MiB at ' "$TRACE"
	# PyTorch's 64 MiB block in a 64 MiB segment, before; the late 8 MiB
	# block's new 20 MiB segment is the trace's
	grep -q '^             before the attach: 64.0 MiB allocated, 64.0 MiB reserved$' "$TRACE"
}

@test "cuda: torchvision and torchaudio models with convolutions, batch norm and RNNs train on the stand-in cuDNN" {
	# issue 34: every convolution died of CUDNN_STATUS_NOT_SUPPORTED. A
	# short subset of tests/conformance/sweep.py (the whole sweep is not
	# part of make test): 2D and 3D convolutions, grouped and depthwise,
	# batch norm, attention, a GRU-based optical flow and an RNN
	root_stage "$ROOT_CUDA" "$ROOT/tests/conformance/sweep.py"
	run "$STANDIN" -- /usr/bin/python3 "$STAGE/sweep.py" resnet18 \
		mobilenet_v3_small r3d_18 raft_small vit_b_32 audio/deepspeech \
		audio/wav2letter
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^ok ' <<<"$output")" -eq 7 ]
	grep -qE '^sweep: 7 ok, 0 known, 0 failed ' <<<"$output"
	! grep -q CUDNN_STATUS <<<"$output"
}
