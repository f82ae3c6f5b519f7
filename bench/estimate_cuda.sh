#!/usr/bin/env bash
# The error of `memtrace-bpf estimate` from a CPU trace (issue 25): one
# model, tests/fixtures/cuda_model.py (a small transformer, STEPS steps of
# Adam), run three ways:
#   cpu    on the CPU in the Debian trixie root (CPU torch 2.6), recorded:
#          memtrace-bpf record -o cpu.mtb -- chroot ROOT python3
#          cuda_model.py --device cpu, then `estimate -i cpu.mtb`
#   cuda   on the CUDA stand-in (scripts/cuda-standin.sh: Debian's CUDA
#          PyTorch 2.6, its real caching allocator), untraced: PyTorch's
#          own max_memory_allocated()/max_memory_reserved(), the figures
#          the estimate is held to
#   cuda, recorded, and `estimate -i` of that record (which should give
#          PyTorch's figures exactly)
# and, to find where the CPU trace's error lies, the untraced stand-in run
# again with cuBLASLt's workspace off (CUBLASLT_WORKSPACE_SIZE=0), then
# with cuBLAS's too (CUBLAS_WORKSPACE_CONFIG=:0:0): PyTorch's environment
# variables, which leave the model's other allocations as they are (586
# allocations become 560: 24 per-call cuBLASLt workspaces, 2 cuBLAS
# ones); the CUDA record's largest
# c10:alloc blocks with their thread, phase, module and Python line; and
# the blocks live at the CUDA record's peak and not at the CPU record's,
# and the reverse (bench/peak_diff.py).
#
# Replaces the section "## Estimate from a CPU trace against PyTorch on
# CUDA (stand-in)" of bench/RESULTS.md (OUT); make bench runs it after
# bench/estimate.sh. Run as root after `make memtrace-bpf` (it builds the
# two Debian roots on first use, minutes). About 30 s.
# Knobs: STEPS (3), OUT, MT (another memtrace-bpf), KEEP=1 keeps the work
# directory.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=estimate_cuda
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
MT=${MT:-$ROOT/memtrace-bpf}
STEPS=${STEPS:-3}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
STANDIN=$ROOT/scripts/cuda-standin.sh
TITLE="Estimate from a CPU trace against PyTorch on CUDA (stand-in)"
LT_OFF="CUBLASLT_WORKSPACE_SIZE=0"
WS_OFF="CUBLASLT_WORKSPACE_SIZE=0 CUBLAS_WORKSPACE_CONFIG=:0:0"

need_root "uprobes and chroot need it"
whole_numbers STEPS
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"
TROOT=$("$ROOT/scripts/debian-root.sh" trixie) ||
	die "no Debian trixie root (scripts/debian-root.sh trixie)"
CROOT=$("$STANDIN" --root) ||
	die "no CUDA PyTorch root (scripts/cuda-standin.sh --root)"
"$STANDIN" --lib >/dev/null || die "the stand-ins did not build"

T_START=$(date +%s)
make_work estimate-cuda
take_binary
# the model's files, staged in each root's /tmp (paths below are the
# roots' own)
TSTAGE=$(mktemp -d "$TROOT/tmp/memtrace-estcuda.XXXXXX")
CSTAGE=$(mktemp -d "$CROOT/tmp/memtrace-estcuda.XXXXXX")
on_exit() {
	rm -rf "$TSTAGE" "$CSTAGE"
}
for d in "$TSTAGE" "$CSTAGE"; do
	cp "$ROOT/tests/fixtures/cuda_model.py" "$ROOT/tests/fixtures/mt_sync.py" "$d/"
done
TMODEL=${TSTAGE#"$TROOT"}/cuda_model.py
CMODEL=${CSTAGE#"$CROOT"}/cuda_model.py

# torch_figs OUT: "allocated_peak reserved_peak" of cuda:0 as the model
# printed them (memory_stats())
torch_figs() {
	local line
	line=$(grep '^torch dev=cuda:0 ' "$1") || {
		cat "$1" "${1%.out}.err" >&2
		die "no figures of PyTorch in $1"
	}
	sed -E 's/.* allocated_peak=([0-9]+) .* reserved_peak=([0-9]+) .*/\1 \2/' <<<"$line"
}

# est_figs FILE DEV: "peak_allocated peak_reserved" of estimate's output
est_figs() {
	local line
	line=$(grep "^# estimate $2 peak_allocated=" "$1") || {
		cat "$1" >&2
		die "no '# estimate $2 peak_allocated=' in $1"
	}
	sed -E 's/.* peak_allocated=([0-9]+) peak_reserved=([0-9]+) .*/\1 \2/' <<<"$line"
}

# record NAME COMMAND...: memtrace-bpf record -o WORK/NAME.mtb of COMMAND;
# its events in EVENTS; dies on lost events
record() {
	local name=$1 err=$WORK/$1.err lost
	shift
	"$MT" record -o "$WORK/$name.mtb" -- "$@" >"$WORK/$name.out" 2>"$err" ||
		{ cat "$err" >&2; die "$name: record failed"; }
	lost=$(sed -nE 's/^memtrace-bpf: recorded [0-9]+ events .* lost ([0-9]+)$/\1/p' "$err")
	[ "$lost" = 0 ] || { cat "$err" >&2; die "$name: lost events ($lost)"; }
	EVENTS=$(sed -nE 's/^memtrace-bpf: recorded ([0-9]+) events .*/\1/p' "$err")
}

# standin NAME [VAR=VALUE...]: the model on the stand-in, untraced
standin() {
	local name=$1
	shift
	env "$@" "$STANDIN" -- python3 "$CMODEL" --steps "$STEPS" \
		>"$WORK/$name.out" 2>"$WORK/$name.err" ||
		{ cat "$WORK/$name.err" >&2; die "$name: the model failed on the stand-in"; }
}

# 1. the CPU run, recorded, and its estimate
record cpu chroot "$TROOT" python3 "$TMODEL" --device cpu --steps "$STEPS"
CPU_EVENTS=$EVENTS
grep -q '^weight head ' "$WORK/cpu.out" || { cat "$WORK/cpu.err" >&2; die "the CPU run did not finish"; }
"$MT" estimate -i "$WORK/cpu.mtb" >"$WORK/cpu.est"
read -r E_CPU_A E_CPU_R < <(est_figs "$WORK/cpu.est" cpu)
CPU_SRC=$(sed -nE 's/^# estimate cpu source=(.*)/\1/p' "$WORK/cpu.est")

# 2. the stand-in run, untraced: PyTorch's figures
standin cuda
read -r T_A T_R < <(torch_figs "$WORK/cuda.out")

# 3. the stand-in run, recorded, and its estimate
record cudarec "$STANDIN" -- python3 "$CMODEL" --steps "$STEPS"
CUDA_EVENTS=$EVENTS
read -r TR_A TR_R < <(torch_figs "$WORK/cudarec.out")
"$MT" estimate -i "$WORK/cudarec.mtb" >"$WORK/cuda.est"
read -r E_CUDA_A E_CUDA_R < <(est_figs "$WORK/cuda.est" cuda:0)
CUDA_SRC=$(sed -nE 's/^# estimate cuda:0 source=(.*)/\1/p' "$WORK/cuda.est")

# 4. the stand-in run without cuBLASLt's, then without any cuBLAS workspace
# shellcheck disable=SC2086 # the VAR=VALUE words
standin lt_off $LT_OFF
read -r L_A L_R < <(torch_figs "$WORK/lt_off.out")
# shellcheck disable=SC2086
standin ws_off $WS_OFF
read -r W_A W_R < <(torch_figs "$WORK/ws_off.out")

# 5. the CUDA record's largest blocks (8 MiB and up): size, thread,
# phase, module and autograd node, the innermost Python frame, and
# whether the record has their free
"$MT" script -i "$WORK/cudarec.mtb" --event c10:alloc --min-size 8M >"$WORK/big.txt"
big_rows() {
	awk '
	/^[^\t]/ { cur = "" }
	/ c10:alloc: / {
		comm = $1; size = ptr = phase = module = node = ""
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "size") size = kv[2]
			else if (kv[1] == "ptr") ptr = kv[2]
			else if (kv[1] == "phase") phase = kv[2]
			else if (kv[1] == "module") module = kv[2]
			else if (kv[1] == "node") node = kv[2]
		}
		n++; cur = n; sz[n] = size; p[n] = ptr
		desc[n] = comm " | " phase " | " module (node != "" ? " (" node ")" : "")
		next
	}
	/ c10:free: / {
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "ptr")
				for (j = 1; j <= n; j++) if (p[j] == kv[2]) freed[j] = 1
		}
		next
	}
	/^\t/ && cur != "" && !(cur in frame) { sub(/^\t/, ""); frame[cur] = $0 }
	END {
		for (j = 1; j <= n; j++)
			printf "| %d | %s | %s | %s |\n", sz[j], desc[j],
				(j in frame ? "`" frame[j] "`" : "(none: the autograd engine'"'"'s thread)"),
				(j in freed ? "yes" : "no, held to the end")
	}' "$WORK/big.txt"
}
BIG=$(big_rows)
[ -n "$BIG" ] || BIG="| (none) | | | | | |"

# 6. what is live at one record's peak and not at the other's
"$MT" script -i "$WORK/cudarec.mtb" --no-stack >"$WORK/cuda.script"
"$MT" script -i "$WORK/cpu.mtb" --no-stack >"$WORK/cpu.script"
python3 "$ROOT/bench/peak_diff.py" CUDA "$WORK/cuda.script" c10:alloc \
	CPU "$WORK/cpu.script" c10:cpu_alloc >"$WORK/peakdiff.txt"
read -r P_CUDA P_CPU < <(sed -nE 's/^peak CUDA=([0-9]+) CPU=([0-9]+)$/\1 \2/p' "$WORK/peakdiff.txt")
if [ "$P_CUDA" != "$E_CUDA_A" ] || [ "$P_CPU" != "$E_CPU_A" ]; then
	die "peak_diff.py's peaks ($P_CUDA, $P_CPU) are not estimate's ($E_CUDA_A, $E_CPU_A)"
fi
DIFF=$(grep '^| ' "$WORK/peakdiff.txt" || true)
[ -n "$DIFF" ] || DIFF="| (none) | | | | | |"

# "DIFF (PCT %)" of ESTIMATE against TRUTH
err() {
	awk -v e="$1" -v t="$2" 'BEGIN { printf "%+d (%+.1f %%)", e - t, (t ? (e - t) * 100 / t : 0) }'
}
mib() {
	awk -v b="$1" 'BEGIN { printf "%d (%.1f MiB)", b, b / 1048576 }'
}
T_END=$(date +%s)

section=$WORK/section.md
{
	echo "## $TITLE"
	echo
	echo "Measured $(date -u) by \`bench/estimate_cuda.sh\` ($((T_END - T_START)) s) on $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores, kernel $(uname -r); $TOOL_DESC."
	echo "The model: \`tests/fixtures/cuda_model.py --steps $STEPS\` (a transformer of 2 blocks, d_model 256, batch 8 x 32 tokens, $STEPS steps of Adam), traced from its start:"
	echo
	echo "- CPU trace ($CPU_EVENTS events): \`memtrace-bpf record -o cpu.mtb -- chroot \$(scripts/debian-root.sh trixie) python3 STAGE/cuda_model.py --device cpu --steps $STEPS\` (CPU torch 2.6), then \`memtrace-bpf estimate -i cpu.mtb\` (no options: the default allocator settings; no \`--device-mem\`, nothing comes near the stand-in's 16 GiB); it replays $CPU_SRC."
	echo "- PyTorch: \`scripts/cuda-standin.sh -- python3 STAGE/cuda_model.py --steps $STEPS\` (Debian's CUDA PyTorch 2.6 on the CUDA stand-in, its real caching allocator), untraced; its line \`torch dev=cuda:0 ... allocated_peak= ... reserved_peak=\` (\`memory_stats()\`, i.e. \`max_memory_allocated()\`, \`max_memory_reserved()\`)."
	echo "- CUDA trace ($CUDA_EVENTS events): the same run under \`memtrace-bpf record -o cuda.mtb --\`, then \`estimate -i cuda.mtb\` ($CUDA_SRC); PyTorch's figures in that run: $TR_A, $TR_R."
	echo
	echo "| | peak allocated, bytes | peak reserved, bytes |"
	echo "|---|---|---|"
	echo "| PyTorch on the stand-in (\`max_memory_allocated()\`, \`max_memory_reserved()\`) | $(mib "$T_A") | $(mib "$T_R") |"
	echo "| \`estimate\` of the CUDA trace | $(mib "$E_CUDA_A") | $(mib "$E_CUDA_R") |"
	echo "| \`estimate\` of the CPU trace | $(mib "$E_CPU_A") | $(mib "$E_CPU_R") |"
	echo "| error of the CUDA trace's estimate | $(err "$E_CUDA_A" "$T_A") | $(err "$E_CUDA_R" "$T_R") |"
	echo "| **error of the CPU trace's estimate** | **$(err "$E_CPU_A" "$T_A")** | **$(err "$E_CPU_R" "$T_R")** |"
	echo
	echo "Where the CPU trace's error lies: PyTorch's own figures on the stand-in with its"
	echo "cuBLAS workspaces turned off by its environment variables, and the CPU"
	echo "trace's estimate against each:"
	echo
	echo "| PyTorch on the stand-in | peak allocated | peak reserved | CPU trace's error, allocated | reserved |"
	echo "|---|---|---|---|---|"
	echo "| as above | $T_A | $T_R | $(err "$E_CPU_A" "$T_A") | $(err "$E_CPU_R" "$T_R") |"
	echo "| \`$LT_OFF\` (no cuBLASLt workspace) | $L_A | $L_R | $(err "$E_CPU_A" "$L_A") | $(err "$E_CPU_R" "$L_R") |"
	echo "| \`$WS_OFF\` (no cuBLAS workspace either) | $W_A | $W_R | $(err "$E_CPU_A" "$W_A") | $(err "$E_CPU_R" "$W_R") |"
	echo
	echo "So the cuBLASLt workspace is $((T_A - L_A)) bytes of the peak allocated, cuBLAS's"
	echo "workspaces $((L_A - W_A)) bytes of it and $((L_R - W_R)) of the peak reserved; the rest"
	echo "of the CPU trace's error is $((E_CPU_A - W_A)) bytes allocated and $((E_CPU_R - W_R)) reserved."
	echo
	echo "The CUDA record's blocks of 8 MiB and more (\`memtrace-bpf script -i cuda.mtb --event c10:alloc --min-size 8M\`):"
	echo
	echo "| bytes | thread | phase | module (autograd node) | innermost Python frame | freed in the record |"
	echo "|---|---|---|---|---|---|"
	echo "$BIG"
	echo
	echo "Blocks (rounded to 512 B) live at the CUDA record's peak allocated and not at"
	echo "the CPU record's, and the reverse (\`bench/peak_diff.py\`; the peaks are"
	echo "estimate's, $P_CUDA and $P_CPU):"
	echo
	echo "| | blocks | bytes each | phase | module | bytes |"
	echo "|---|---|---|---|---|---|"
	echo "$DIFF"
	echo
	echo "What they are (PyTorch 2.6, this model): ATen keeps one cuBLAS workspace"
	echo "per cuBLAS handle and stream, allocated through the caching allocator at"
	echo "the handle's first use and cached to the end: the forward's first matmul"
	echo "(the main thread) and the backward's (the autograd thread \`pt_autograd_0\`,"
	echo "a handle of its own) take one each, sized by \`CUBLAS_WORKSPACE_CONFIG\` or"
	echo "PyTorch's default for the device (the stand-in says compute capability"
	echo "9.0). A Linear's forward on CUDA (\`addmm\` through cuBLASLt) takes a"
	echo "cuBLASLt workspace (\`CUBLASLT_WORKSPACE_SIZE\`) for the call. A CPU run"
	echo "calls neither, its trace has none of this memory, and \`estimate\` adds"
	echo "nothing for it: the figures above are the product's, with no allowance."
	echo "The rest is two kernels' choices: CUDA's memory-efficient attention returns"
	echo "its output in a layout that MultiheadAttention's \`.contiguous()\` copies (a"
	echo "256 KiB block a layer, kept for \`out_proj\`'s backward), the CPU's flash"
	echo "attention needs no copy; and Adam keeps each parameter's \`step\` on the CPU"
	echo "(not capturable), which the CPU trace counts (28 blocks of 512 B) and a"
	echo "GPU does not. The reserved rest is one more 2 MiB segment of the small pool"
	echo "(every block here is 1 MiB or less) on CUDA. The two peaks come a few"
	echo "blocks apart in the last Block's forward (on CUDA, during \`stack.1.down\`'s"
	echo "call, whose 1 MiB block is its cuBLASLt workspace), hence a block of"
	echo "\`stack.1\` at the CPU's peak only."
} >"$section"
cat "$section"
put_section "$OUT" "$TITLE" "$section"
echo "estimate_cuda: wrote its section of $OUT in $((T_END - T_START)) s" >&2
