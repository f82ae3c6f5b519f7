#!/usr/bin/env bash
# Run memtrace-bpf against a real CUDA PyTorch on a machine with a GPU and
# print a PASS, FAIL or SKIP line per check; docs/gpu-validation.md
# records what it saw.
#
#   scripts/gpu-check.sh [BINARY] [OUTDIR]
#
# BINARY defaults to the static build (make static); OUTDIR (default
# /tmp/mt-gpu-check) receives each scenario's trace, the model's figures
# and why a check failed (why.txt). PYTHON (default python3) is the
# command of a Python with a CUDA torch: words split at blanks, so that a
# dry run on the CUDA stand-in is PYTHON="scripts/cuda-standin.sh --bind
# $PWD --bind OUTDIR -- python3" (see docs/memtrace-bpf-estimate.md). Nothing is installed: the checks are those of
# tests/e2e/cuda.bats, from the same library (tests/e2e/cuda_checks.bash),
# on the same model (tests/fixtures/cuda_model.py), so that what the CUDA
# stand-in shows in `make test` is shown on the GPU too. One check is the
# GPU's own: `memtrace-bpf estimate --dry-run --device <this GPU's memory>`
# of the same model (the binary's stand-in, loaded through
# LD_LIBRARY_PATH ahead of the installed CUDA) against the model's
# figures on the GPU. DRYRUN_PYTHON (default PYTHON) is the Python the
# dry run runs; a PYTHON of scripts/cuda-standin.sh gets its --lib-last
# there, so that the dry run's stand-in comes before the root's, and the
# dry run's folder is made under OUTDIR (TMPDIR), which such a PYTHON
# binds. A run takes 2-3 minutes; each step waits at most 5 minutes.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MT=${1:-$ROOT/.output/static/memtrace-bpf}
OUTDIR=${2:-/tmp/mt-gpu-check}
read -ra PY <<<"${PYTHON:-python3}"
if [ -n "${DRYRUN_PYTHON:-}" ]; then
	read -ra DRY_PY <<<"$DRYRUN_PYTHON"
elif [[ ${PY[0]} == *cuda-standin.sh ]]; then
	DRY_PY=("${PY[0]}" --lib-last "${PY[@]:1}")
else
	DRY_PY=("${PY[@]}")
fi
MODEL_PY=$ROOT/tests/fixtures/cuda_model.py
# shellcheck source=../tests/e2e/cuda_checks.bash
. "$ROOT/tests/e2e/cuda_checks.bash"
mkdir -p "$OUTDIR"
: >"$OUTDIR/why.txt"
fails=0

# check WHAT CMD...: PASS when CMD succeeds; why it failed goes to why.txt
check() {
	local what=$1
	shift
	echo "== $what" >>"$OUTDIR/why.txt"
	if "$@" >>"$OUTDIR/why.txt" 2>&1; then
		echo "PASS $what"
	else
		echo "FAIL $what"
		fails=$((fails + 1))
	fi
}

# until_line FILE PATTERN PID: wait up to 300 s for a line of FILE
# matching PATTERN, while process PID lives
until_line() {
	local i
	for ((i = 0; i < 3000; i++)); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		if ! kill -0 "$3" 2>/dev/null; then
			grep -qE -- "$2" "$1" 2>/dev/null && return 0
			echo "gpu-check: process $3 ended before /$2/ in $1:" >&2
			tail -5 "$1" "${1%.*}.err" "${1%.*}.model.err" 2>/dev/null >&2
			return 1
		fi
		sleep 0.1
	done
	echo "gpu-check: timed out waiting for /$2/ in $1" >&2
	return 1
}

# stop PID...: end the processes left by a scenario that failed
stop() {
	kill "$@" 2>/dev/null
	wait "$@" 2>/dev/null
	return 1
}

# scenario NAME [MEMTRACE_ARG...] -- [MODEL_ARG...]: cuda_model.py held
# at its start and end, traced with -p from its READY to the moment it
# printed its figures, as cuda.bats does; sets TRACE, MODEL and PID. A
# MEMTRACE_ARG "record" makes the trace a record (OUTDIR/NAME.mtb).
scenario() {
	local name=$1 wl mt log size=-1 i
	local -a args=(--keys --top-live 100000)
	shift
	[ "$1" = record ] && args=(record -o "$OUTDIR/$name.mtb") && shift
	while [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	shift
	rm -f "$OUTDIR/$name.go" "$OUTDIR/$name.hold"
	MT_GO=$OUTDIR/$name.go MT_HOLD=$OUTDIR/$name.hold "${PY[@]}" "$MODEL_PY" "$@" \
		>"$OUTDIR/$name.model" 2>"$OUTDIR/$name.model.err" &
	wl=$!
	until_line "$OUTDIR/$name.model" '^READY ' "$wl" || stop "$wl" || return 1
	PID=$(awk '/^READY /{print $2; exit}' "$OUTDIR/$name.model")
	"$MT" "${args[@]}" -p "$PID" >"$OUTDIR/$name.trace" 2>"$OUTDIR/$name.err" &
	mt=$!
	log=$OUTDIR/$name.trace
	[ "${args[0]}" = record ] && log=$OUTDIR/$name.err
	until_line "$log" '^# python pid=' "$mt" || stop "$wl" "$mt" || return 1
	touch "$OUTDIR/$name.go"
	until_line "$OUTDIR/$name.model" '^weight head ' "$wl" || stop "$wl" "$mt" || return 1
	for ((i = 0; i < 100; i++)); do
		sleep 0.1
		[ "$(stat -c %s "$log")" = "$size" ] && break
		size=$(stat -c %s "$log")
	done
	kill -INT "$mt"
	wait "$mt"
	echo "$name: memtrace-bpf exit $?"
	touch "$OUTDIR/$name.hold"
	wait "$wl"
	TRACE=$OUTDIR/$name.trace
	MODEL=$OUTDIR/$name.model
}

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
uname -r
"${PY[@]}" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())'
ndev=$("${PY[@]}" -c 'import torch; print(torch.cuda.device_count())')
TLIB=$("${PY[@]}" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
echo "torch lib: $TLIB"
echo "== probe points in this build"
for f in "$TLIB"/libc10.so "$TLIB"/libc10_cuda.so; do
	echo "-- $f"
	nm -D --defined-only "$f" 2>/dev/null | grep -E 'reportMemoryUsageToProfiler|reportOutOfMemoryToProfiler|ProfiledCPUMemoryReporter3New|alloc_cpu' || true
	nm -D --undefined-only "$f" 2>/dev/null | grep -E 'cudaMalloc|cudaFree|report' || true
done

echo "== the caching allocator (-p on a training job)"
if scenario native -- --steps 3; then
	grep '^# attach' "$TRACE"
	check "c10 totals and peaks are memory_stats()'s" ck_c10 cuda:0
	check "c10 events, counts and bytes, are memory_stats()'s" ck_c10_bytes cuda:0
	check "live blocks are memory_snapshot()'s active blocks" ck_blocks cuda:0
	check "cudaMalloc segments are memory_snapshot()'s segments" ck_segments cuda:0
	check "fragmentation is reserved - allocated, per segment" ck_frag cuda:0
	check "backward on pt_autograd_0 by module, Adam in phase=optimizer" ck_backward
	check "no failed call, no lost event" ck_clean
else
	check "the native scenario ran" false
fi

echo "== nvidia-smi's figure, reconciled (--watch)"
# NVML's per-process figure at its highest, split into what the trace
# explains; the rest is the CUDA context and module images, whose size
# no check here knows: it is printed for docs/gpu-validation.md, in MiB
# and as a share of NVML's figure
if ! command -v nvidia-smi >/dev/null; then
	echo "SKIP nvidia-smi's figure (no nvidia-smi: not a GPU machine)"
elif scenario nvsmi --watch 0.5 -- --steps 3 --ctypes-malloc 16777216; then
	line=$(grep "^# nvidia_smi pid=$PID dev=cuda:0 " "$TRACE" || true)
	echo "${line:-no # nvidia_smi line}"
	check "nvidia-smi: a sample of this process on cuda:0" test -n "$line"
	if [ -n "$line" ]; then
		used=$(ck_field "$line" used)
		parts=$(($(ck_field "$line" reserved) + $(ck_field "$line" outside) + $(ck_field "$line" vmm) + $(ck_field "$line" unexplained)))
		check "nvidia-smi: reserved, outside, vmm and unexplained add up to NVML's figure" test "$parts" -eq "$used"
		check "nvidia-smi: the ctypes cudaMalloc is outside the allocator" test "$(ck_field "$line" extensions)" -ge 16777216
		echo "unexplained $(($(ck_field "$line" unexplained) >> 20)) MiB of $((used >> 20)) MiB ($(awk -v u="$(ck_field "$line" unexplained)" -v t="$used" 'BEGIN { printf "%.1f", 100 * u / t }') %): the context and module images"
	fi
else
	check "the nvidia-smi scenario ran" false
fi

echo "== an OOM"
if scenario oom -- --steps 1 --oom; then
	check "OOM block, size, line, retry; num_alloc_retries and num_ooms" ck_oom cuda:0 "$MODEL_PY"
	check "c10 totals and peaks after the OOM" ck_c10 cuda:0
else
	check "the OOM scenario ran" false
fi

echo "== expandable segments"
if PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True scenario vmm -- --steps 2; then
	check "expandable: c10 totals and peaks" ck_c10 cuda:0
	check "expandable: the driver's mappings are reserved" ck_vmm cuda:0
	check "expandable: live blocks" ck_blocks cuda:0
else
	check "the expandable scenario ran" false
fi

echo "== backend:cudaMallocAsync"
if PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync scenario async -- --steps 2; then
	check "cudaMallocAsync: live bytes are allocated and its peak" ck_async cuda:0
else
	check "the cudaMallocAsync scenario ran" false
fi

echo "== two devices"
if [ "$ndev" -lt 2 ]; then
	echo "SKIP two devices (one GPU)"
elif scenario two -- --steps 2 --devices 2; then
	check "cuda:0 c10 totals and peaks" ck_c10 cuda:0
	check "cuda:1 c10 totals and peaks" ck_c10 cuda:1
	check "both devices' live blocks" ck_blocks cuda:0 cuda:1
else
	check "the two-device scenario ran" false
fi

echo "== --export memviz against _record_memory_history"
if scenario memviz --export memviz -o "$OUTDIR/mt.pickle" -- --steps 2 \
	--history "$OUTDIR/torch.pickle"; then
	check "memviz: segments, blocks and history are torch's; _memory_viz renders both" \
		"${PY[@]}" "$ROOT/tests/fixtures/memviz_compare.py" "$OUTDIR/torch.pickle" "$OUTDIR/mt.pickle"
else
	check "the memviz scenario ran" false
fi

echo "== --module-log against in-process hooks"
if scenario modlog --module-log "$OUTDIR/mod.log" -- --steps 2 \
	--modlog "$OUTDIR/hooks.log"; then
	check "module log: forward, backward and optimizer records are the hooks'" ck_modlog "$OUTDIR/mod.log" "$OUTDIR/hooks.log"
else
	check "the module-log scenario ran" false
fi

echo "== estimate --check on a record"
if scenario est record -- --steps 2; then
	"$MT" estimate -i "$OUTDIR/est.mtb" --check >"$OUTDIR/est.out" 2>&1
	cat "$OUTDIR/est.out" | grep -E 'check|peak_allocated' | head -3
	n=$(($(ck_torch cuda:0 allocs) + $(ck_torch cuda:0 frees)))
	check "estimate --check: reserved equal at every event" \
		grep -q "^# estimate cuda:0 check: ok: the model's reserved equals the recorded reserved at all $n events\$" "$OUTDIR/est.out"
	check "estimate: peaks are torch's" \
		grep -q "^# estimate cuda:0 peak_allocated=$(ck_torch cuda:0 allocated_peak) peak_reserved=$(ck_torch cuda:0 reserved_peak) " "$OUTDIR/est.out"
else
	check "the record scenario ran" false
fi

echo "== estimate --dry-run against this GPU"
# the same model untraced on the GPU, then under a dry run on a stand-in
# of this GPU's memory: PyTorch's allocator decides both, so the peaks
# differ only where the GPU's libraries ask other sizes than the
# stand-in's (cuBLAS/cuBLASLt workspaces, cuDNN, kernels' choices) or the
# device is not the stand-in's kind (a size takes an H100's compute
# capability 9.0 and 132 multiprocessors)
"${PY[@]}" -c 'import torch; p = torch.cuda.get_device_properties(0); print("gpu", p.name.replace(" ", "_"), "cc", f"{p.major}.{p.minor}", "sms", p.multi_processor_count, "total", p.total_memory)' >"$OUTDIR/dry-gpu.props" 2>&1
cat "$OUTDIR/dry-gpu.props"
total=$(awk '$1 == "gpu" { print $NF }' "$OUTDIR/dry-gpu.props")
"${PY[@]}" "$MODEL_PY" --steps 3 >"$OUTDIR/dry-gpu.model" 2>"$OUTDIR/dry-gpu.model.err"
gpu_rc=$?
TMPDIR=$OUTDIR "$MT" estimate --dry-run --device "${total:-0}" -- "${DRY_PY[@]}" "$MODEL_PY" --steps 3 \
	>"$OUTDIR/dry.out" 2>"$OUTDIR/dry.err"
dry_rc=$?
grep -E '^(memtrace-bpf estimate --dry-run: |# dryrun |memtrace-bpf: )' "$OUTDIR/dry.out" "$OUTDIR/dry.err" | cut -d: -f2-
MODEL=$OUTDIR/dry-gpu.model
g_a=$(ck_torch cuda:0 allocated_peak)
g_r=$(ck_torch cuda:0 reserved_peak)
dry=$(grep '^# dryrun pid=[0-9]* dev=cuda:0 ' "$OUTDIR/dry.out")
d_a=$(ck_field "$dry" peak_allocated)
d_r=$(ck_field "$dry" peak_reserved)
MODEL=$OUTDIR/dry.out
t_a=$(ck_torch cuda:0 allocated_peak)
t_r=$(ck_torch cuda:0 reserved_peak)
# pct A B: (A - B) / B in %
pct() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f %%", b ? (a - b) * 100 / b : 0 }'
}
if [ -z "$total" ] || [ "$gpu_rc" -ne 0 ] || [ -z "$g_a" ]; then
	check "dry run: the model ran on the GPU (exit $gpu_rc; $OUTDIR/dry-gpu.model.err)" false
elif [ "$dry_rc" -ne 0 ] || [ -z "$d_a" ]; then
	check "dry run: memtrace-bpf estimate --dry-run --device $total ran (exit $dry_rc; $OUTDIR/dry.err)" false
else
	check "dry run: its peaks are PyTorch's own in the dry run ($d_a, $d_r)" \
		test "$d_a $d_r" = "$t_a $t_r"
	if [ "$d_a $d_r" = "$g_a $g_r" ]; then
		check "dry run: its peaks are the GPU's max_memory_allocated/reserved ($g_a, $g_r)" true
	else
		check "dry run: its peaks are the GPU's max_memory_allocated/reserved: dry run $d_a, $d_r; GPU $g_a, $g_r; difference $(pct "$d_a" "$g_a") allocated, $(pct "$d_r" "$g_r") reserved" false
	fi
fi

echo "== a torchvision ResNet-18 step (cuDNN) against its dry run"
# tests/conformance/sweep.py's resnet18 (2x3x64x64, forward, backward, an
# SGD step) on the GPU, then under a dry run of this GPU's memory: the
# difference is mostly cuDNN's workspaces, which the stand-in models
# (user/dryrun/cudnn_model.h) where the GPU's engines choose their own;
# it is printed for docs/gpu-validation.md, and only the dry run's
# agreement with PyTorch's own figures in the same process is a check
SWEEP_PY=$ROOT/tests/conformance/sweep.py
# rn_field FILE KEY: KEY of the sweep's "ok resnet18" line in FILE
rn_field() {
	ck_field "$(grep '^ok   resnet18 ' "$1")" "$2"
}
if ! "${PY[@]}" -c 'import torchvision' >/dev/null 2>&1; then
	echo "SKIP resnet18: no torchvision in ${PY[*]}"
else
	"${PY[@]}" "$SWEEP_PY" resnet18 >"$OUTDIR/rn-gpu.out" 2>"$OUTDIR/rn-gpu.err"
	rn_gpu_rc=$?
	TMPDIR=$OUTDIR "$MT" estimate --dry-run --device "${total:-0}" -- "${DRY_PY[@]}" "$SWEEP_PY" resnet18 \
		>"$OUTDIR/rn-dry.out" 2>"$OUTDIR/rn-dry.err"
	rn_dry_rc=$?
	rg_a=$(rn_field "$OUTDIR/rn-gpu.out" max_allocated)
	rg_r=$(rn_field "$OUTDIR/rn-gpu.out" max_reserved)
	rt_a=$(rn_field "$OUTDIR/rn-dry.out" max_allocated)
	rt_r=$(rn_field "$OUTDIR/rn-dry.out" max_reserved)
	rn_dry=$(grep '^# dryrun pid=[0-9]* dev=cuda:0 ' "$OUTDIR/rn-dry.out")
	rd_a=$(ck_field "$rn_dry" peak_allocated)
	rd_r=$(ck_field "$rn_dry" peak_reserved)
	grep -h '^# dry run: cuDNN' "$OUTDIR/rn-dry.out"
	if [ "$rn_gpu_rc" -ne 0 ] || [ -z "$rg_a" ]; then
		check "resnet18: the step ran on the GPU (exit $rn_gpu_rc; $OUTDIR/rn-gpu.err)" false
	elif [ "$rn_dry_rc" -ne 0 ] || [ -z "$rd_a" ]; then
		check "resnet18: its dry run ran (exit $rn_dry_rc; $OUTDIR/rn-dry.err)" false
	else
		check "resnet18: the dry run's peaks are PyTorch's own in the dry run ($rd_a, $rd_r)" \
			test "$rd_a $rd_r" = "$rt_a $rt_r"
		check "resnet18: the dry run said what cuDNN workspaces it modelled" \
			grep -q '^# dry run: cuDNN workspaces modelled: ' "$OUTDIR/rn-dry.out"
		echo "resnet18 max_memory_allocated: GPU $rg_a, dry run $rd_a, difference $(pct "$rd_a" "$rg_a") ($((rd_a - rg_a)) bytes)"
		echo "resnet18 max_memory_reserved: GPU $rg_r, dry run $rd_r, difference $(pct "$rd_r" "$rg_r") ($((rd_r - rg_r)) bytes)"
	fi
fi

echo "== a CUDA graph capture"
if scenario graph -- --steps 1 --graph; then
	check "graph: c10 totals and peaks" ck_c10 cuda:0
	check "graph: no failed call, no lost event" ck_clean
else
	check "the graph scenario ran" false
fi

echo "== --watch with NVML"
if scenario watch --watch 0.2 -- --steps 6; then
	check "watch: the device's size from NVML" grep -qE "^# watch .* cuda:0 used=[0-9.]+ [KMGT]?i?B of [0-9.]+ [KMGT]iB " "$TRACE"
else
	check "the watch scenario ran" false
fi

echo "== $fails failed (why: $OUTDIR/why.txt)"
[ "$fails" -eq 0 ]
