#!/usr/bin/env bash
# Run memtrace-bpf against a real CUDA PyTorch on a machine with a GPU and
# print PASS/FAIL per check; docs/gpu-validation.md records what it saw.
#
#   scripts/gpu-check.sh [BINARY] [OUTDIR]
#
# BINARY defaults to the static build (make static); OUTDIR receives each
# scenario's trace excerpt.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MT=${1:-$ROOT/.output/static/memtrace-bpf}
OUTDIR=${2:-/tmp/mt-gpu-check}
PY=${PYTHON:-python3}
WL=$ROOT/scripts/gpu_workload.py
mkdir -p "$OUTDIR"
fails=0

check() {
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then
		echo "PASS $what"
	else
		echo "FAIL $what"
		fails=$((fails + 1))
	fi
}

# keep the tool's own lines and the first event lines of a trace
excerpt() {
	{ grep '^#' "$1"; grep -v '^#' "$1" | head -${2:-60}; } >"$OUTDIR/$3"
}

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
uname -r
$PY -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
TLIB=$($PY -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
echo "torch lib: $TLIB"
echo "== probe points in this build"
for f in "$TLIB"/libc10.so "$TLIB"/libc10_cuda.so; do
	echo "-- $f"
	nm -D --defined-only "$f" 2>/dev/null | grep -E 'reportMemoryUsageToProfiler|reportOutOfMemoryToProfiler|ProfiledCPUMemoryReporter3New|alloc_cpu' || true
	nm -D --undefined-only "$f" 2>/dev/null | grep -E 'cudaMalloc|cudaFree|report' || true
	readelf -n "$f" 2>/dev/null | grep -A2 stapsdt | grep -E 'Name|Provider' | head -6 || true
done

echo "== A: -p on a running CUDA training job (native caching allocator)"
rm -f "$OUTDIR/go"
MT_GO=$OUTDIR/go $PY "$WL" --steps 5 >"$OUTDIR/a.wl" 2>&1 &
wl=$!
for _ in $(seq 600); do grep -q '^READY' "$OUTDIR/a.wl" && break; sleep 0.1; done
"$MT" --keys -p "$wl" >"$OUTDIR/a.full" 2>"$OUTDIR/a.err" &
mt=$!
for _ in $(seq 200); do grep -q '^# attach .*libc10' "$OUTDIR/a.full" && break; sleep 0.05; done
touch "$OUTDIR/go"
wait "$wl"
wait "$mt"
echo "exit $?"
cat "$OUTDIR/a.wl" "$OUTDIR/a.err"
excerpt "$OUTDIR/a.full" 80 a.trace
# the process frees some tensors at exit, after its own print: compare
# the peaks, and the reserved total, which nothing gives back at exit
want_p=$(sed -nE 's/^torch .* max_allocated=([0-9]+).*/\1/p' "$OUTDIR/a.wl")
want_r=$(sed -nE 's/^torch .* reserved=([0-9]+) .*/\1/p' "$OUTDIR/a.wl")
dev=$(grep '^# device pid=[0-9]* dev=cuda:0 source=c10 ' "$OUTDIR/a.full")
got_p=$(sed -nE 's/.* allocated_peak=([0-9]+) .*/\1/p' <<<"$dev")
got_r=$(sed -nE 's/.* reserved=([0-9]+) .*/\1/p' <<<"$dev")
echo "torch: max_allocated=$want_p reserved=$want_r; memtrace-bpf: allocated_peak=$got_p reserved=$got_r"
check "A: c10:alloc events on cuda:0" grep -q ': c10:alloc: ptr=0x[0-9a-f]* size=[0-9]* dev=cuda:0 allocated=' "$OUTDIR/a.full"
check "A: backward's allocations on the autograd thread are seen" test "$(grep ': c10:alloc: ' "$OUTDIR/a.full" | awk '{print $2}' | sort -u | wc -l)" -ge 2
check "A: c10 allocated peak equals torch.cuda.max_memory_allocated()" test "$want_p" = "$got_p"
check "A: c10 reserved equals torch.cuda.memory_reserved()" test "$want_r" = "$got_r"
check "A: cudaMalloc segments succeed (ret=0) with pointers" grep -q ': cudart:cudaMalloc: ptr=0x[0-9a-f]* size=[0-9]* dev=cuda:[0-9?] ret=0 ' "$OUTDIR/a.full"
check "A: no lost events" grep -q '^# lost events=0$' "$OUTDIR/a.full"
check "A: CPython found" grep -q '^# python pid=[0-9]* version=3\.' "$OUTDIR/a.full"
check "A: forward blocks named by module (Sequential child 0)" grep -q ': c10:alloc: .* dev=cuda:0 .* phase=forward module=0$' "$OUTDIR/a.full"
check "A: forward blocks carry a Python stack" sh -c "grep -A1 ': c10:alloc: .* phase=forward ' '$OUTDIR/a.full' | grep -q '^	Linear.forward (torch/nn/modules/linear.py:[0-9]*)$'"
check "A: backward on pt_autograd_0 with its module and autograd node" grep -q '^pt_autograd_0 [0-9/]* .*: c10:alloc: .* phase=backward module=[0-9] node=[A-Za-z]*Backward0$' "$OUTDIR/a.full"
check "A: Adam's state in phase=optimizer" grep -q ': c10:alloc: .* dev=cuda:0 .* phase=optimizer module=-$' "$OUTDIR/a.full"

echo "== B: -- mode from the first allocation, with an OOM"
"$MT" --keys -- $PY "$WL" --steps 3 --oom >"$OUTDIR/b.full" 2>"$OUTDIR/b.err"
echo "exit $?"
cat "$OUTDIR/b.err" | head -20
excerpt "$OUTDIR/b.full" 40 b.trace
grep -E ': (cudart:cudaMalloc|c10:oom): .*(err=|oom)' "$OUTDIR/b.full" | head -5 >>"$OUTDIR/b.trace"
check "B: libcudart attached as it was loaded" grep -q '^# attach pid=[0-9]* lib=.*libcudart' "$OUTDIR/b.full"
check "B: first c10:alloc seen" grep -q ': c10:alloc: ' "$OUTDIR/b.full"
check "B: failing cudaMalloc with cudaErrorMemoryAllocation" grep -q ': cudart:cudaMalloc: size=17592186044416 dev=cuda:0 ret=2 err=cudaErrorMemoryAllocation' "$OUTDIR/b.full"
check "B: c10:oom reported" grep -q ': c10:oom: size=17592186044416 dev=cuda:0 ' "$OUTDIR/b.full"
check "B: the workload caught the OOM" grep -q '^oom caught' "$OUTDIR/b.full"

echo "== C: expandable segments (driver virtual memory calls)"
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$MT" --keys -- $PY "$WL" --steps 3 >"$OUTDIR/c.full" 2>"$OUTDIR/c.err"
echo "exit $?"
excerpt "$OUTDIR/c.full" 20 c.trace
grep -E ': cuda:cuMem' "$OUTDIR/c.full" | head -10 >>"$OUTDIR/c.trace"
check "C: libcuda attached" grep -q '^# attach pid=[0-9]* lib=.*libcuda\.so' "$OUTDIR/c.full"
check "C: cuMemCreate with handle and device" grep -q ': cuda:cuMemCreate: handle=0x[0-9a-f]* size=[0-9]* dev=cuda:0 ret=0 ' "$OUTDIR/c.full"
check "C: cuMemMap of that memory" grep -q ': cuda:cuMemMap: ptr=0x[0-9a-f]* size=[0-9]* ret=0 ' "$OUTDIR/c.full"

echo "== D: the cudaMallocAsync backend"
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "$MT" --keys -- $PY "$WL" --steps 3 >"$OUTDIR/d.full" 2>"$OUTDIR/d.err"
echo "exit $?"
excerpt "$OUTDIR/d.full" 20 d.trace
grep -E ': cudart:cudaMallocAsync' "$OUTDIR/d.full" | head -5 >>"$OUTDIR/d.trace"
check "D: cudaMallocAsync with pointer and stream" grep -q ': cudart:cudaMallocAsync: ptr=0x[0-9a-f]* size=[0-9]* dev=cuda:0 ret=0 stream=0x' "$OUTDIR/d.full"
check "D: cudaFreeAsync carries the size" grep -q ': cudart:cudaFreeAsync: ptr=0x[0-9a-f]* size=[0-9]* dev=cuda:0 ret=0' "$OUTDIR/d.full"

echo "== $fails failed"
[ "$fails" -eq 0 ]
