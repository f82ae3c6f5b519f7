#!/usr/bin/env bats
# The conformance corpus: torchvision's and torchaudio's own models
# (tests/conformance/corpus.py: built with weights=None, small inputs, two
# training steps, autocast bf16 on vit, torch.utils.checkpoint on
# resnet18), trained on Debian's CUDA PyTorch over the CUDA stand-in
# (user/standin: the runtime, driver, cuBLAS, NVML and cuDNN; the caching
# allocator is PyTorch's), every mode of memtrace-bpf against PyTorch's
# own figures in the same process: estimate --dry-run; -p from the
# model's READY with --module-log; -q -p attached after the first step;
# record -> report -i and every --export; a record --flight dump.
#
# The short set (CORPUS_SHORT in corpus.bash) by default; MT_CORPUS=all
# (make conformance) the whole list, or MT_CORPUS="name ..." those. Every
# model and mode is checked even after a failure; each check's line goes
# to $MT_CORPUS_RESULTS (default: the file's temporary folder), from
# which scripts/corpus-table.sh writes docs/TESTS.md's table.

load helpers
load cuda_checks
load corpus

setup_file() {
	echo "# the CUDA runtime here is a stand-in (user/standin); the allocator is PyTorch's" >&3
	echo "# corpus: $(corpus_models | xargs)" >&3
	need_roots cuda
	"$STANDIN" --lib >/dev/null
}

setup() {
	RESULTS=${MT_CORPUS_RESULTS:-$BATS_FILE_TMPDIR/results}
	touch "$RESULTS"
	START=$(wc -l <"$RESULTS")
}

teardown() {
	root_unstage
}

@test "corpus: estimate --dry-run: each model's peaks are PyTorch's max_memory_allocated/reserved" {
	local m fail=0
	for m in $(corpus_models); do
		corpus_dry "$m" || fail=1
	done
	# (a negated command does not fail a BATS test: a test of its output)
	[ -z "$(tail -n +$((START + 1)) "$RESULTS" | grep '|DIFFERENT$')" ]
	[ "$fail" -eq 0 ]
}

@test "corpus: each model traced four ways at once: c10 totals, backward, phases, --module-log, record, exports, flight dump" {
	local m fail=0 dump
	for m in $(corpus_models); do
		if ! corpus_trace "$m"; then
			res "$m" "traced run" "failed" "ends" 1 || fail=1
			continue
		fi
		corpus_c10 "$m" || fail=1
		corpus_backward "$m" || fail=1
		corpus_mid "$m" || fail=1
		corpus_modlog "$m" || fail=1
		corpus_record "$m" "$D/t.mtb" record || fail=1
		dump=$(ls "$D"/flight/flight-*-asked.mtb)
		corpus_record "$m" "$dump" "flight dump" || fail=1
	done
	# (a negated command does not fail a BATS test: a test of its output)
	[ -z "$(tail -n +$((START + 1)) "$RESULTS" | grep '|DIFFERENT$')" ]
	[ "$fail" -eq 0 ]
}
