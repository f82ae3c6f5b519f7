# memtrace-bpf: build, test, lint, demo, bench.
# The pipeline follows libbpf-bootstrap: bpf/X.bpf.c -> .output/X.bpf.o ->
# bpftool gen skeleton -> .output/X.skel.h -> user space.

OUTPUT := .output
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
CUDA_HOME ?= /usr/local/cuda
ARCH := x86

CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wno-unused-parameter
USER_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -I$(OUTPUT) -Ibpf -Iuser
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf \
	      -Wall -Werror

# user/ is one folder a subsystem, listed bottom to top: a folder may use
# only the folders before it (scripts/check-layers.sh checks the includes,
# and the link order of one archive a folder checks the calls). Only trace/
# sees libbpf and the skeleton, so the unit tests link the archives below
# trace/ and cli/ and need neither clang nor bpftool.
LAYERS := lib event proc analysis python export record estimate dryrun trace cli
CORE_LAYERS := $(filter-out trace cli,$(LAYERS))
layer_objs = $(patsubst user/%.c,$(2)/%.o,$(wildcard user/$(1)/*.c)) \
	$(patsubst user/%.S,$(2)/%.o,$(wildcard user/$(1)/*.S))
layer_lib = $(2)/libmt-$(1).a
# archives in link order: the highest layer first
link_libs = $(foreach l,$(shell echo $(1) | tr ' ' '\n' | tac),$(call layer_lib,$(l),$(2)))

MAIN_LIBS := $(call link_libs,$(LAYERS),$(OUTPUT))
CORE_LIBS := $(call link_libs,$(CORE_LAYERS),$(OUTPUT))
ASAN_LIBS := $(call link_libs,$(CORE_LAYERS),$(OUTPUT)/asan)
SKEL_USERS := $(call layer_objs,trace,$(OUTPUT))
LIBS := -lbpf -lelf -lz -lyajl -lm
STATIC_LIBS := -l:libbpf.a -l:libelf.a -l:libz.a -l:libzstd.a -l:libyajl_s.a -lm
# each object also depends on the headers it includes (-MMD: .d files)
DEPFLAGS = -MMD -MP
UNIT_TESTS := $(patsubst tests/unit/%.c,%,$(wildcard tests/unit/test_*.c))
ASAN := -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all

# make with no goal builds the tool: without this the first target of
# the makefiles included below (the fixtures) would be the default
.DEFAULT_GOAL := all

FIXDIR := $(OUTPUT)/fixtures
include tests/fixtures/fixtures.mk
STANDIN_DIR := $(OUTPUT)/standin
include user/standin/standin.mk

.PHONY: all static test unit unit-asan e2e fuzz fuzz-short lint demo bench setup roots clean fmt npm-tools conformance man install
.DELETE_ON_ERROR:
.SECONDARY:

all: memtrace-bpf

$(OUTPUT):
	mkdir -p $@

$(OUTPUT)/memtrace.tmp.bpf.o: bpf/memtrace.bpf.c bpf/memtrace.h vmlinux/vmlinux.h | $(OUTPUT)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/memtrace.bpf.o: $(OUTPUT)/memtrace.tmp.bpf.o
	$(BPFTOOL) gen object $@ $<

$(OUTPUT)/memtrace.skel.h: $(OUTPUT)/memtrace.bpf.o
	$(BPFTOOL) gen skeleton $< name memtrace_bpf > $@

$(OUTPUT)/%.o: user/%.c | $(OUTPUT)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(USER_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(SKEL_USERS): $(OUTPUT)/memtrace.skel.h

# data only: the stand-in's libraries, which the dry run carries
$(OUTPUT)/%.o: user/%.S $(STANDIN_LIBS) | $(OUTPUT)
	@mkdir -p $(@D)
	$(CC) -I$(STANDIN_DIR) $(DEPFLAGS) -c $< -o $@

define layer_rule
$(call layer_lib,$(1),$(2)): $(call layer_objs,$(1),$(2))
	@rm -f $$@
	$(AR) rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rule,$(l),$(OUTPUT))))
$(foreach l,$(CORE_LAYERS),$(eval $(call layer_rule,$(l),$(OUTPUT)/asan)))

memtrace-bpf: $(MAIN_LIBS)
	$(CC) $(CFLAGS) $(MAIN_LIBS) $(LIBS) -o $@

# One file to copy onto a production host: libbpf, libelf, zlib and zstd in.
static: $(OUTPUT)/static/memtrace-bpf
$(OUTPUT)/static/memtrace-bpf: $(MAIN_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -static $(MAIN_LIBS) $(STATIC_LIBS) -o $@
	@echo "static binary: $@"

# Unit tests, plain and under ASan/UBSan.
$(OUTPUT)/test_%: tests/unit/test_%.c $(CORE_LIBS)
	$(CC) $(CFLAGS) $(USER_CFLAGS) $(DEPFLAGS) -I$(CUDA_HOME)/include $< $(CORE_LIBS) $(LIBS) -lcmocka -o $@

$(OUTPUT)/asan/%.o: user/%.c | $(OUTPUT)
	@mkdir -p $(@D)
	$(CC) -O1 -g $(ASAN) $(USER_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/asan/%.o: user/%.S $(STANDIN_LIBS) | $(OUTPUT)
	@mkdir -p $(@D)
	$(CC) -I$(STANDIN_DIR) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/asan/test_%: tests/unit/test_%.c $(ASAN_LIBS)
	$(CC) -O1 -g $(ASAN) $(USER_CFLAGS) $(DEPFLAGS) -I$(CUDA_HOME)/include $< $(ASAN_LIBS) $(LIBS) -lcmocka -o $@

# libtorch_cpu's shapes in a small library, for the finder's test (and a
# fuzz seed), on a machine without Debian's roots
NODETLS_SEED := $(OUTPUT)/nodetls_seed.so
$(NODETLS_SEED): tests/fuzz/nodetls_seed.S | $(OUTPUT)
	$(CC) -shared -nostdlib -fPIC $< -o $@

unit: $(addprefix $(OUTPUT)/,$(UNIT_TESTS)) $(NODETLS_SEED)
	@set -e; for t in $(filter %/test_%,$^); do echo "== $$t"; $$t; done

unit-asan: $(addprefix $(OUTPUT)/asan/,$(UNIT_TESTS)) $(NODETLS_SEED)
	@set -e; for t in $(filter %/test_%,$^); do echo "== $$t (asan/ubsan)"; \
		ASAN_OPTIONS=detect_leaks=1 $$t; done

# the viewers' own checkers the export tests run (npm, into .output/npm)
npm-tools:
	scripts/npm-tools.sh $(OUTPUT)/npm

# two lanes side by side (scripts/e2e-lanes.sh says which file goes where)
e2e: memtrace-bpf $(OUTPUT)/static/memtrace-bpf fixtures npm-tools \
     $(OUTPUT)/fuzz/seeds
	scripts/e2e-lanes.sh

# Every reader of outside input under libFuzzer, ASan and UBSan (clang
# throughout), one target a reader: the record reader (record), ELF symbol
# tables (elf), /proc text (proc) and the target's CPython objects read
# through a stand-in for process_vm_readv (python). `make fuzz` splits
# FUZZ_SECS between them, `make fuzz-short` gives them 40 s in all;
# FUZZ_TARGETS=elf runs one. Seeds are made at build time (records the
# writer makes, small ELF files of this system, this system's /proc text);
# the corpora and any crash (FUZZ_DIR/<target>-crash-...) stay in FUZZ_DIR.
FUZZ_DIR := $(OUTPUT)/fuzz
FUZZ_SECS ?= 300
FUZZ_ALL := record elf proc python
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_LIB := user/record/coder.c user/record/reader.c user/record/writer.c \
	user/analysis/sites.c user/lib/strpool.c user/lib/outfile.c user/lib/err.c \
	user/lib/escape.c
FUZZ_LIB_record := $(FUZZ_LIB)
FUZZ_LDLIBS_record := -lz
FUZZ_LIB_elf := user/proc/elfsym.c user/proc/mapfile.c user/proc/probepoint.c \
	user/python/nodetls.c
FUZZ_LDLIBS_elf := -lelf
FUZZ_LIB_proc := user/proc/maps.c user/proc/procinfo.c user/proc/rank.c
FUZZ_LIB_python := user/python/objects.c user/python/line.c \
	user/python/dbgoff.c user/python/layout.c
# the target's memory is the fuzz input: the one syscall that reads it is
# replaced at link time (tests/fuzz/fuzz_python.c), the readers unchanged
FUZZ_LDLIBS_python := -Wl,--wrap=process_vm_readv
FUZZ_DEPS := $(wildcard user/*/*.h) bpf/memtrace.h
FUZZ_CFLAGS := -O1 -g -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all $(USER_CFLAGS)
# system ELF files small enough to mutate well, those this system has
FUZZ_ELF_SEEDS := $(wildcard /usr/lib/x86_64-linux-gnu/libdl.so.2 \
	/usr/lib/x86_64-linux-gnu/librt.so.1 /usr/bin/true)

define fuzz_rule
$(FUZZ_DIR)/fuzz_$(1): tests/fuzz/fuzz_$(1).c $(FUZZ_LIB_$(1)) $(FUZZ_DEPS)
	@mkdir -p $$(@D)
	$(CLANG) $(FUZZ_CFLAGS) $$< $(FUZZ_LIB_$(1)) $(FUZZ_LDLIBS_$(1)) -o $$@
endef
$(foreach t,$(FUZZ_ALL),$(eval $(call fuzz_rule,$(t))))

$(FUZZ_DIR)/seeds: tests/fuzz/seeds.c $(FUZZ_LIB) $(FUZZ_DEPS)
	@mkdir -p $(@D)
	$(CLANG) -O1 -g $(USER_CFLAGS) $< $(FUZZ_LIB) -lz -o $@

$(FUZZ_DIR)/seeds-record.stamp: $(FUZZ_DIR)/seeds
	rm -rf $(FUZZ_DIR)/seeds-record
	mkdir -p $(FUZZ_DIR)/seeds-record
	$< $(FUZZ_DIR)/seeds-record
	touch $@

# besides the system's files, a wrapper that jumps to the function it
# wraps, as mt_elf_tail_target_fd follows, and libtorch_cpu's shapes
$(FUZZ_DIR)/seeds-elf.stamp: tests/fuzz/elf_seed.c $(NODETLS_SEED) $(FUZZ_ELF_SEEDS)
	rm -rf $(FUZZ_DIR)/seeds-elf
	mkdir -p $(FUZZ_DIR)/seeds-elf
	$(CC) -O2 -fPIC -shared -fcf-protection=full $< \
		-o $(FUZZ_DIR)/seeds-elf/wrapper.so
	cp $(NODETLS_SEED) $(FUZZ_DIR)/seeds-elf/
	$(if $(FUZZ_ELF_SEEDS),cp $(FUZZ_ELF_SEEDS) $(FUZZ_DIR)/seeds-elf/)
	touch $@

# this system's own maps, command line and a launcher's environment
$(FUZZ_DIR)/seeds-proc.stamp:
	rm -rf $(FUZZ_DIR)/seeds-proc
	mkdir -p $(FUZZ_DIR)/seeds-proc
	cat /proc/self/maps > $(FUZZ_DIR)/seeds-proc/maps
	cat /proc/self/cmdline > $(FUZZ_DIR)/seeds-proc/cmdline
	printf 'PATH=/bin\0RANK=3\0LOCAL_RANK=1\0WORLD_SIZE=8\0' \
		> $(FUZZ_DIR)/seeds-proc/environ
	printf "__version__ = '2.5.1+cu124'\n" > $(FUZZ_DIR)/seeds-proc/version
	touch $@

$(FUZZ_DIR)/seeds-python.stamp: $(FUZZ_DIR)/fuzz_python
	rm -rf $(FUZZ_DIR)/seeds-python
	mkdir -p $(FUZZ_DIR)/seeds-python
	MT_FUZZ_SEEDS=$(FUZZ_DIR)/seeds-python $< -runs=0 >/dev/null 2>&1
	touch $@

# the whole conformance corpus (tests/e2e/corpus.bats; make test runs its
# short set); its table from the run: scripts/corpus-table.sh
conformance: memtrace-bpf $(OUTPUT)/static/memtrace-bpf fixtures npm-tools
	rm -f $(OUTPUT)/corpus-results; \
	MT_CORPUS=all MT_CORPUS_RESULTS=$(OUTPUT)/corpus-results \
		bats --print-output-on-failure tests/e2e/corpus.bats; \
	st=$$?; scripts/corpus-table.sh $(OUTPUT)/corpus-results; exit $$st

fuzz: $(foreach t,$(FUZZ_TARGETS),$(FUZZ_DIR)/fuzz_$(t) \
	$(FUZZ_DIR)/seeds-$(t).stamp)
	@set -e; secs=$$(( $(FUZZ_SECS) / $(words $(FUZZ_TARGETS)) )); \
	for t in $(FUZZ_TARGETS); do \
		echo "== fuzz_$$t ($$secs s)"; \
		mkdir -p $(FUZZ_DIR)/corpus-$$t; \
		$(FUZZ_DIR)/fuzz_$$t -max_total_time=$$secs -timeout=10 \
			-rss_limit_mb=2048 -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_DIR)/$$t- \
			$(FUZZ_DIR)/corpus-$$t $(FUZZ_DIR)/seeds-$$t; \
	done

fuzz-short:
	$(MAKE) fuzz FUZZ_SECS=40

C_SOURCES := $(wildcard user/*/*.c user/*/*.h bpf/*.c bpf/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.c tests/fixtures/*.c tests/fixtures/*.cpp)

lint:
	scripts/check-layers.sh $(LAYERS)
	scripts/check-calls.py $(LAYERS)
	clang-format --dry-run -Werror $(C_SOURCES)
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
		--inline-suppr --std=c11 -D__x86_64__ -Ibpf -Iuser \
		user tests/unit tests/fuzz tests/fixtures/*.c

fmt:
	clang-format -i $(C_SOURCES)

setup:
	scripts/setup.sh

# the Debian roots the container tests run in, built once per machine
# (cached under MT_ROOTS) before BATS starts, outside its descriptors
# The pages of docs/ as man pages (section 8: the tool needs root). The
# title line go-md2man makes of "# NAME(8)" is put in man's own form.
PREFIX ?= /usr/local
MAN_PAGES := $(patsubst docs/%.md,$(OUTPUT)/man/man8/%.8,$(wildcard docs/memtrace-bpf*.md))

$(OUTPUT)/man/man8/%.8: docs/%.md
	@mkdir -p $(@D)
	go-md2man -in $< -out $@.tmp
	sed -i -E '1,3s/^\.TH ([a-z-]+)\(8\)$$/.TH "\1" "8" "" "memtrace-bpf" "memtrace-bpf"/' $@.tmp
	mv $@.tmp $@

man: $(MAN_PAGES)

install: memtrace-bpf man
	install -D -m 0755 memtrace-bpf $(DESTDIR)$(PREFIX)/sbin/memtrace-bpf
	install -d $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0644 $(MAN_PAGES) $(DESTDIR)$(PREFIX)/share/man/man8/

roots:
	scripts/debian-root.sh trixie >/dev/null
	scripts/debian-root.sh sid >/dev/null
	scripts/debian-root.sh cuda >/dev/null

# Builds two at a time (CI has 2 cores): the tests themselves run one
# after another within each step
test: setup
	$(MAKE) lint
	$(MAKE) -j2 unit
	$(MAKE) -j2 unit-asan
	$(MAKE) -j2 fuzz-short
	$(MAKE) roots
	$(MAKE) -j2 memtrace-bpf $(OUTPUT)/static/memtrace-bpf fixtures
	$(MAKE) e2e

demo: setup
	$(MAKE) memtrace-bpf
	./memtrace-bpf -- /usr/bin/python3 scripts/demo_train.py --steps 5

bench: setup
	$(MAKE) memtrace-bpf static fixtures
	bench/run.sh
	bench/multi.sh
	bench/exports.sh
	bench/estimate.sh
	bench/estimate_cuda.sh
	bench/dryrun.sh
	bench/cost.sh
	bench/cuda_cost.sh
	bench/sample_error.sh
	bench/floor.sh
	bench/flight.sh
	bench/flight_rss.sh
	bench/flight_dump.sh
	bench/flight_leaks.sh

-include $(shell find $(OUTPUT) -name '*.d' 2>/dev/null)

clean:
	rm -rf $(OUTPUT) memtrace-bpf
