#!/usr/bin/env bash
# What `memtrace-bpf estimate --dry-run` costs and what it gives (issue 30,
# item 4): a training step of bench/cuda_step.py, in the CUDA PyTorch root
# (scripts/cuda-standin.sh --root: Debian's python3-torch-cuda 2.6), timed
# inside the process three ways, in one interleaved run:
#   cpu    cuda_step.py --device cpu: the same model, optimizer and batches
#          computed on the CPU (what one runs without a GPU; the root's
#          torch loads libcudart at import, so this runs through
#          scripts/cuda-standin.sh too, torch.cuda untouched)
#   dry    cuda_step.py on "cuda" under `memtrace-bpf estimate --dry-run
#          --`: the static binary copied into the root and run there in a
#          privileged container, as tests/e2e/dryrun.bats does (the
#          stand-in that the binary carries, traced from the start)
#   bare   cuda_step.py on "cuda" on the stand-in, untraced
#          (scripts/cuda-standin.sh -- python3): the dry run less its
#          tracing
# Modes rotated by one place each repetition. The python runs on the last
# CPU (taskset, inside the root), the dry run's tracer on the others.
# Then the peaks: tests/fixtures/cuda_model.py --steps STEPS_MODEL under
# the dry run (its '# dryrun' line against PyTorch's own max_memory_
# allocated/reserved, which the model prints in the same run: they must be
# equal) and untraced on the stand-in, beside the CPU-trace estimate's
# error that bench/estimate_cuda.sh wrote in OUT (quoted from its section).
#
# Replaces the section "## Dry run against the CPU step and the CPU-trace
# estimate" of bench/RESULTS.md (OUT); make bench runs it after
# bench/estimate_cuda.sh. Run as root after `make static` (the CUDA root is
# built on first use, minutes). About 2 minutes with the defaults; exits 1
# after writing the section when the dry run's peaks are not PyTorch's.
# Knobs: REPS (3), STEPS (timed steps on "cuda", 400), CPU_STEPS (timed
# steps on the CPU, 40: a CPU step is some 50 times longer), STEPS_MODEL
# (3), OUT, MT (another static memtrace-bpf), KEEP=1 keeps the work
# directory.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=dryrun
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
MT=${MT:-$ROOT/.output/static/memtrace-bpf}
REPS=${REPS:-3}
STEPS=${STEPS:-400}
CPU_STEPS=${CPU_STEPS:-40}
STEPS_MODEL=${STEPS_MODEL:-3}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
STANDIN=$ROOT/scripts/cuda-standin.sh
MODES=(cpu dry bare)
TITLE="Dry run against the CPU step and the CPU-trace estimate"
EST_TITLE="Estimate from a CPU trace against PyTorch on CUDA (stand-in)"

need_root "uprobes and the container need it"
whole_numbers REPS STEPS CPU_STEPS STEPS_MODEL
[ -x "$MT" ] || die "$MT missing: make static"
file -L "$MT" 2>/dev/null | grep -q 'statically linked' ||
	die "$MT is not statically linked: the dry run runs inside the root (make static)"
CROOT=$("$STANDIN" --root) || die "no CUDA PyTorch root (scripts/cuda-standin.sh --root)"
"$STANDIN" --lib >/dev/null || die "the stand-ins did not build (make standin)"
# the privileged container of the e2e tests (tests/e2e/helpers.bash
# CONTAINER_SH): a mount namespace, the root bound onto itself, /proc and
# the host's /sys, pivot_root
CONTAINER_SH=$(BATS_TEST_DIRNAME=$ROOT/tests/e2e bash -c '. "$1"; printf %s "$CONTAINER_SH"' sh "$ROOT/tests/e2e/helpers.bash")
[ -n "$CONTAINER_SH" ] || die "no CONTAINER_SH in tests/e2e/helpers.bash"
TORCH_VER=$(dpkg-query --admindir="$CROOT/var/lib/dpkg" -W -f '${Version}' python3-torch-cuda 2>/dev/null || echo '?')
PY_VER=$(chroot "$CROOT" /usr/bin/python3 -c 'import platform; print(platform.python_version())' 2>/dev/null || echo '?')
BLAS=$(chroot "$CROOT" readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo '?')
BLAS_PKG=$(chroot "$CROOT" dpkg -S "$BLAS" 2>/dev/null | cut -d: -f1 | head -1 || true)

PIN_ROOT=$CROOT pin_cpus
PINNING="none"
if [ ${#PIN_WL[@]} -gt 0 ]; then
	PINNING="python on CPU $((NCPU - 1)), the dry run's tracer on CPU 0$([ "$NCPU" -eq 2 ] || echo "-$((NCPU - 2))")"
fi

T_START=$(date +%s)
make_work dryrun || die "cannot make a work directory"
take_binary || die "cannot copy $MT"
# the scripts and the binary lie in the root's /tmp (STAGE, its path there)
SDIR=$(mktemp -d "$CROOT/tmp/memtrace-dryrun-bench.XXXXXX") || die "cannot stage in $CROOT/tmp"
STAGE=${SDIR#"$CROOT"}
on_exit() {
	[ "${KEEP:-0}" = 1 ] || rm -rf "$SDIR"
}
cp "$MT" "$ROOT/bench/cuda_step.py" "$ROOT/tests/fixtures/cuda_model.py" \
	"$ROOT/tests/fixtures/mt_sync.py" "$SDIR/"
RUNS=$WORK/runs.tsv
printf 'mode\trep\tloop_s\tsteps\tcpu_s\twall_s\tevents\tlost\n' >"$RUNS"

# field LINE KEY: the value of KEY= in LINE
field() {
	sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"
}

# dry ARG...: memtrace-bpf estimate --dry-run ARG... in the root, in a
# privileged container, the tracer pinned
dry() {
	"${PIN_TOOL[@]}" env MT_PRIVILEGED=1 unshare --mount --propagation private -- \
		/bin/sh -c "$CONTAINER_SH" sh "$CROOT" "$STAGE/memtrace-bpf" estimate --dry-run "$@"
}

# run_one MODE REP: one run of the step script; a line of $RUNS
run_one() {
	local m=$1 r=$2 o=$WORK/$1-$2 t0 t1 res events=NA lost=NA rep
	t0=$(date +%s.%N)
	case $m in
	cpu)
		"$STANDIN" -- "${PIN_WL[@]}" /usr/bin/python3 "$STAGE/cuda_step.py" \
			--device cpu --steps "$CPU_STEPS" >"$o.out" 2>"$o.err" ||
			die "cpu rep $r: the step script failed: $(tail -5 "$o.err")"
		;;
	dry)
		dry -- "${PIN_WL[@]}" /usr/bin/python3 "$STAGE/cuda_step.py" \
			--steps "$STEPS" >"$o.out" 2>"$o.err" ||
			die "dry rep $r: the dry run exited with $?: $(tail -5 "$o.err"; tail -5 "$o.out")"
		rep=$(grep -E '^memtrace-bpf report: .* traced, [0-9]+ events, [0-9]+ lost' "$o.out") ||
			die "dry rep $r: no report line"
		events=$(sed -E 's/.* traced, ([0-9]+) events, ([0-9]+) lost.*/\1/' <<<"$rep")
		lost=$(sed -E 's/.* traced, ([0-9]+) events, ([0-9]+) lost.*/\2/' <<<"$rep")
		;;
	bare)
		"$STANDIN" -- "${PIN_WL[@]}" /usr/bin/python3 "$STAGE/cuda_step.py" \
			--steps "$STEPS" >"$o.out" 2>"$o.err" ||
			die "bare rep $r: the step script failed: $(tail -5 "$o.err")"
		;;
	esac
	t1=$(date +%s.%N)
	res=$(grep '^RESULT ' "$o.out") || die "$m rep $r: no RESULT line in $o.out"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$r" "$(field "$res" loop_s)" \
		"$(field "$res" steps)" "$(field "$res" cpu_s)" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" \
		"$events" "$lost" >>"$RUNS"
	printf 'dryrun: %-4s rep %s  %s ms/step  (%ds)\n' "$m" "$r" \
		"$(field "$res" ms_per_step)" $(($(date +%s) - T_START)) >&2
}

echo "dryrun: work directory $WORK; $REPS repetitions x ${#MODES[@]} modes" >&2
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
# a first run, unmeasured: the page cache, and a check that the root runs
"$STANDIN" -- /usr/bin/python3 "$STAGE/cuda_step.py" --steps 2 \
	>"$WORK/warm.out" 2>&1 || die "warm-up run failed: $(tail -5 "$WORK/warm.out")"
for ((r = 1; r <= REPS; r++)); do
	for ((j = 0; j < ${#MODES[@]}; j++)); do
		run_one "${MODES[$(((j + r - 1) % ${#MODES[@]}))]}" "$r"
	done
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# the peaks: cuda_model.py under the dry run, and untraced on the stand-in
t0=$(date +%s.%N)
if dry -- /usr/bin/python3 "$STAGE/cuda_model.py" --steps "$STEPS_MODEL" \
	>"$WORK/model-dry.out" 2>"$WORK/model-dry.err"; then
	MODEL_RC=0
else
	MODEL_RC=$?
fi
MODEL_WALL=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ "$MODEL_RC" = 0 ] || die "the dry run of cuda_model.py exited with $MODEL_RC: $(tail -5 "$WORK/model-dry.err")"
DRY_LINE=$(grep '^# dryrun pid=[0-9]* dev=cuda:0 ' "$WORK/model-dry.out") ||
	die "no '# dryrun ... dev=cuda:0' line in the dry run of cuda_model.py"
TORCH_DRY=$(grep '^torch dev=cuda:0 ' "$WORK/model-dry.out") ||
	die "cuda_model.py printed no figures in the dry run"
"$STANDIN" -- /usr/bin/python3 "$STAGE/cuda_model.py" --steps "$STEPS_MODEL" \
	>"$WORK/model-bare.out" 2>"$WORK/model-bare.err" ||
	die "cuda_model.py failed on the stand-in: $(tail -5 "$WORK/model-bare.err")"
TORCH_BARE=$(grep '^torch dev=cuda:0 ' "$WORK/model-bare.out") ||
	die "cuda_model.py printed no figures on the stand-in"

# the CPU-trace estimate's figures, from bench/estimate_cuda.sh's section
est_row() {
	awk -v t="## $EST_TITLE" -v k="$1" '$0 == t { s = 1; next } /^## / { s = 0 }
		s && index($0, k) == 1 { print; exit }' "$OUT" 2>/dev/null
}
EST_WHEN=$(awk -v t="## $EST_TITLE" '$0 == t { s = 1; next } /^## / { s = 0 }
	s && /^Measured / { sub(/^Measured /, ""); sub(/ by .*/, ""); print; exit }' "$OUT" 2>/dev/null || true)
T_END=$(date +%s)

{
	echo "title=$TITLE"
	echo "date=$(date -u)"
	echo "cores=$NCPU"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "kernel=$(uname -r)"
	echo "pinning=$PINNING"
	echo "load=$LOAD0 at the start, $LOAD1 at the end of the timed runs"
	echo "tool=$TOOL_DESC"
	echo "torch=python3-torch-cuda $TORCH_VER, Python $PY_VER"
	echo "blas=$BLAS${BLAS_PKG:+ ($BLAS_PKG)}"
	echo "reps=$REPS"
	echo "steps=$STEPS"
	echo "cpu_steps=$CPU_STEPS"
	echo "steps_model=$STEPS_MODEL"
	echo "secs=$((T_END - T_START))"
	echo "model_wall=$MODEL_WALL"
	echo "dry_line=$DRY_LINE"
	echo "dry_head=$(grep -m1 '^memtrace-bpf estimate --dry-run: ' "$WORK/model-dry.out" || true)"
	echo "torch_dry=$TORCH_DRY"
	echo "torch_bare=$TORCH_BARE"
	echo "est_when=$EST_WHEN"
	echo "est_torch=$(est_row '| PyTorch on the stand-in')"
	# shellcheck disable=SC2016 # the backquotes are the row's Markdown
	echo "est_cpu=$(est_row '| `estimate` of the CPU trace')"
	echo "est_err=$(est_row "| **error of the CPU trace's estimate**")"
} >"$WORK/meta.txt"
$PY "$ROOT/bench/dryrun_report.py" "$WORK/meta.txt" "$RUNS" >"$WORK/section.md"
put_section "$OUT" "$TITLE" "$WORK/section.md"
cat "$WORK/section.md"
echo "dryrun: wrote its section of $OUT in $((T_END - T_START)) s" >&2
# the dry run's peaks must be PyTorch's own in the same run
[ "$(field "$DRY_LINE" peak_allocated) $(field "$DRY_LINE" peak_reserved)" = \
	"$(field "$TORCH_DRY" allocated_peak) $(field "$TORCH_DRY" reserved_peak)" ] ||
	die "the dry run's peaks are not PyTorch's: $DRY_LINE; $TORCH_DRY"
