# Shared by the BATS end-to-end tests: start a fixture held at its first
# call, attach memtrace-bpf, release the fixture, collect both outputs.

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
MT=$ROOT/memtrace-bpf
FIX=$ROOT/.output/fixtures
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
CUDART=$CUDA_HOME/lib64/libcudart.so.13
TORCH_PY=/usr/bin/python3
NPM=$ROOT/.output/npm/node_modules
AJV=$NPM/.bin/ajv
SCHEMA=$NPM/speedscope/dist/release/file-format-schema.json
FLAMEGRAPH=$(command -v flamegraph.pl ||
	echo /usr/share/perl5/Devel/NYTProf/flamegraph.pl)

# wait_for FILE PATTERN [SECS]: until a line of FILE matches PATTERN
wait_for() {
	local file=$1 pat=$2 secs=${3:-60} i
	for ((i = 0; i < secs * 20; i++)); do
		grep -qE -- "$pat" "$file" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "timed out waiting for /$pat/ in $file:" >&2
	cat "$file" >&2
	return 1
}

# fixture NAME CMD...: start CMD held before its first call (MT_GO);
# sets NAME_PID and writes its stdout to $BATS_TEST_TMPDIR/NAME.out.
# With HELD=1 it is also held before it exits, until `unhold NAME`: the
# names of a Python stack are read from the living process.
fixture() {
	local name=$1
	local -a env=(MT_GO="$BATS_TEST_TMPDIR/$name.go")
	shift
	rm -f "$BATS_TEST_TMPDIR/$name.go" "$BATS_TEST_TMPDIR/$name.hold"
	# emptied here, not by the redirection below: that one runs in the
	# background, and a READY left by an earlier fixture of this name
	# must not be read meanwhile
	: >"$BATS_TEST_TMPDIR/$name.out"
	[ -n "${HELD:-}" ] && env+=(MT_HOLD="$BATS_TEST_TMPDIR/$name.hold")
	env "${env[@]}" "$@" >"$BATS_TEST_TMPDIR/$name.out" \
		2>"$BATS_TEST_TMPDIR/$name.err" &
	wait_for "$BATS_TEST_TMPDIR/$name.out" '^READY ' 120
	printf -v "${name}_PID" '%s' "$(awk '/^READY /{print $2; exit}' "$BATS_TEST_TMPDIR/$name.out")"
}

release() {
	touch "$BATS_TEST_TMPDIR/$1.go"
}

# unhold NAME N PATTERN: once N lines of the trace match PATTERN, let the
# held fixture NAME exit
unhold() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[ "$(grep -cE -- "$3" "$BATS_TEST_TMPDIR/trace.out")" -ge "$2" ] && break
		sleep 0.05
	done
	touch "$BATS_TEST_TMPDIR/$1.hold"
}

# trace NATTACH ARGS...: start memtrace-bpf ARGS in the background and wait
# until NATTACH of its libraries are attached (0: just started), as told in
# $MT_LOG (default: its stdout); a library counts by its file's name, not
# by the folders above it
trace() {
	local n=$1 log=${MT_LOG:-$BATS_TEST_TMPDIR/trace.out}
	shift
	# emptied here, not by the redirections below: those run in the
	# background, and an earlier trace's '# attach' lines, read before
	# them, would release the fixture before this one attached
	: >"$BATS_TEST_TMPDIR/trace.out"
	: >"$BATS_TEST_TMPDIR/trace.err"
	: >"$log"
	"$MT" "$@" >"$BATS_TEST_TMPDIR/trace.out" 2>"$BATS_TEST_TMPDIR/trace.err" &
	MT_PID=$!
	if [ "$n" -gt 0 ]; then
		local i
		for ((i = 0; i < 600; i++)); do
			[ "$(grep -c '^# attach .*lib=.*/[^/]*\(cudart\|cuda\|c10\)[^/]* ' "$log")" -ge "$n" ] && return 0
			kill -0 "$MT_PID" 2>/dev/null || break
			sleep 0.05
		done
		echo "memtrace-bpf did not attach:" >&2
		cat "$BATS_TEST_TMPDIR/trace.out" "$BATS_TEST_TMPDIR/trace.err" >&2
		return 1
	fi
}

# settle NAME PATTERN [stop]: once the held fixture NAME printed PATTERN
# (its last line) and the trace stopped growing, let it exit; with "stop",
# first stop the trace (as Ctrl-C does) and wait for its end (finish), so
# that the trace ends at that moment, before the frees of the exit
settle() {
	local i size=-1
	wait_for "$BATS_TEST_TMPDIR/$1.out" "$2" 120
	for ((i = 0; i < 200; i++)); do
		sleep 0.1
		[ "$(stat -c %s "$BATS_TEST_TMPDIR/trace.out")" = "$size" ] && break
		size=$(stat -c %s "$BATS_TEST_TMPDIR/trace.out")
	done
	if [ "${3:-}" = stop ]; then
		kill -INT "$MT_PID"
		finish
	fi
	touch "$BATS_TEST_TMPDIR/$1.hold"
}

# finish: wait for memtrace-bpf to end by itself; sets MT_STATUS
finish() {
	local i
	for ((i = 0; i < 1200; i++)); do
		kill -0 "$MT_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$MT_PID" 2>/dev/null; then
		echo "memtrace-bpf did not stop" >&2
		kill -INT "$MT_PID"
	fi
	MT_STATUS=0
	wait "$MT_PID" || MT_STATUS=$?
	TRACE=$BATS_TEST_TMPDIR/trace.out
}

# events EVENT: the event lines of one kind
events() {
	grep -E "^[^#].*: $1: " "$TRACE" || true
}

# field LINE KEY: the value of key=value in an event line
field() {
	sed -nE "s/.* $2=([^ ]+).*/\1/p" <<<"$1"
}

# the stack lines under the first cudaMalloc event of size $1, as
# "function file:line" (the qualname's last part, so that 3.10's co_name
# compares)
stack_of() {
	awk -v size="$1" '
		!found && /^[^#\t].*: cudart:cudaMalloc: / && index($0, " size=" size " ") { found = 1; next }
		found && /^\t/ { sub(/^\t/, ""); print; next }
		found { exit }' "$TRACE" |
		sed -E 's/^([^ ]*\.)?([^. ]+) \((.*):([0-9]+)\)$/\2 \3:\4/'
}

# debian_root SUITE: the directory of the Debian SUITE root (trixie, sid)
# that scripts/debian-root.sh builds once per machine and caches; fails
# with its reason when it cannot be had (no root, no network)
debian_root() {
	"$ROOT/scripts/debian-root.sh" "$1"
}

# need_roots SUITE...: for setup_file, export ROOT_<SUITE> (ROOT_TRIXIE,
# ROOT_SID) for each root, building what this machine lacks; fails, with
# the script's reason, when one cannot be had: a test that skips would pass
# on CI without running
need_roots() {
	local suite dir err=$BATS_FILE_TMPDIR/debian-root.err
	for suite in "$@"; do
		if ! dir=$(debian_root "$suite" 2>"$err"); then
			echo "no Debian $suite root (scripts/debian-root.sh $suite):" >&2
			tail -5 "$err" >&2
			return 1
		fi
		export "ROOT_${suite^^}=$dir"
	done
}

# The container way into a root, as runtimes do it: a mount namespace of
# its own, the root bound onto itself, /proc mounted, pivot_root into it
# and the old root detached (with the root's own python, as the root has
# no umount), then the command. Arguments: ROOTDIR CMD...
CONTAINER_SH='r=$1; shift
mount --bind "$r" "$r" && mount -t proc proc "$r/proc" &&
	{ [ -z "${MT_PRIVILEGED:-}" ] || mount --rbind /sys "$r/sys"; } &&
	cd "$r" && pivot_root . mnt || exit 97
exec /usr/bin/python3 -c "import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).umount2(b\"/mnt\", 2):
    sys.exit(\"umount /mnt: \" + os.strerror(ctypes.get_errno()))
os.chdir(\"/\")
os.execv(sys.argv[1], sys.argv[1:])" "$@"'

# in_root ROOTDIR WAY: set IN_ROOT, the command words that run what follows
# them inside ROOTDIR, WAY being "container" (above), "privileged" (a
# container with the host's /sys, as docker --privileged gives one: what
# memtrace-bpf needs to run inside) or "chroot" (a plain chroot: no mount
# namespace, the target's paths in maps are ours)
in_root() {
	case $2 in
	container) IN_ROOT=(unshare --mount --propagation private -- /bin/sh -c "$CONTAINER_SH" sh "$1") ;;
	privileged) IN_ROOT=(env MT_PRIVILEGED=1 unshare --mount --propagation private -- /bin/sh -c "$CONTAINER_SH" sh "$1") ;;
	chroot) IN_ROOT=(chroot "$1") ;;
	*) echo "in_root: unknown way '$2'" >&2; return 1 ;;
	esac
}

# root_stage ROOTDIR FILE...: copy FILEs (with mt_sync.py) into a new
# directory under ROOTDIR/tmp; sets STAGE to it as seen inside the root.
# The root is a shared cache: root_unstage removes it.
root_stage() {
	local root=$1 dir
	shift
	dir=$(mktemp -d "$root/tmp/memtrace-e2e.XXXXXX")
	cp "$ROOT/tests/fixtures/mt_sync.py" "$@" "$dir/"
	STAGE=${dir#"$root"}
	STAGE_ROOT=$root
}

root_unstage() {
	[ -n "${STAGE:-}" ] && rm -rf "${STAGE_ROOT:?}$STAGE"
	STAGE=
}

# fixture_in_root NAME CMD...: fixture NAME for a CMD that runs inside the
# staged root (root_stage): its handshake files lie in the stage, and the
# usual $BATS_TEST_TMPDIR/NAME.go and .hold are links to them, so that
# release, settle and unhold work unchanged
fixture_in_root() {
	local name=$1 dir=$STAGE_ROOT$STAGE
	local -a env=(MT_GO="$STAGE/$name.go")
	shift
	rm -f "$dir/$name.go" "$dir/$name.hold"
	ln -sfn "$dir/$name.go" "$BATS_TEST_TMPDIR/$name.go"
	ln -sfn "$dir/$name.hold" "$BATS_TEST_TMPDIR/$name.hold"
	: >"$BATS_TEST_TMPDIR/$name.out"
	[ -n "${HELD:-}" ] && env+=(MT_HOLD="$STAGE/$name.hold")
	env "${env[@]}" "$@" >"$BATS_TEST_TMPDIR/$name.out" \
		2>"$BATS_TEST_TMPDIR/$name.err" &
	wait_for "$BATS_TEST_TMPDIR/$name.out" '^READY ' 120
	printf -v "${name}_PID" '%s' "$(awk '/^READY /{print $2; exit}' "$BATS_TEST_TMPDIR/$name.out")"
}

# modlog_check LOG STEPS: a --module-log of attrib_model.py nests and pairs
# its records as a hook logger's would, over STEPS whole steps (its
# ModuleList "encoder" is iterated, never called: it has no records)
modlog_check() {
	awk -v root=Net -v steps="$2" -v modules="Net encoder.0 encoder.0.proj
		encoder.0.act encoder.1 encoder.1.proj encoder.1.act encoder.2
		encoder.2.proj encoder.2.act mid mid.proj mid.act head" \
		-f "$ROOT/tests/e2e/modlog_check.awk" "$1"
}

# export_of REC KIND [ARGS...]: REC exported as KIND (report ARGS) into
# $BATS_TEST_TMPDIR/<REC's name><ARGS as a word>-KIND.<its extension>
# (ajv reads a file by its extension); prints that path
export_of() {
	local rec=$1 kind=$2 out ext=json
	shift 2
	case $kind in
	memviz) ext=pickle ;;
	folded | svg) ext=$kind ;;
	esac
	out=$(basename "$rec" .mtb)$(printf '%s' "$@" | tr -c 'a-z0-9' _)
	out=$BATS_TEST_TMPDIR/$out-$kind.$ext
	"$MT" report -q -i "$rec" --export "$kind" -o "$out" "$@" >/dev/null
	echo "$out"
}

# dry_key KEY: the dry run's figure KEY of cuda:0, from the '# dryrun'
# line of run's output
dry_key() {
	sed -nE "s/^# dryrun pid=[0-9]+ dev=cuda:0 .*\\b$1=([0-9]+).*/\\1/p" <<<"$output"
}

# thread_grads TRACE FIXTURE_OUT [UNNAMED [MIN]]: forward_threads.py's
# weight gradients (AddmmBackward0 of a size only that weight has), at
# least MIN (default 1) of each, are named after their own model's layer;
# UNNAMED (default 0) of each may have no module (a Node made before an
# attach)
thread_grads() {
	local lines name bytes
	while read -r _ name bytes; do
		lines=$(grep -E "^[^#	].* size=$bytes " "$1" | grep ' phase=backward ' | grep ' node=AddmmBackward0$' || true)
		echo "$name ($bytes B): $(grep -c . <<<"$lines") weight gradients, named: $(sed 's/.* module=//' <<<"$lines" | sort | uniq -c | tr '\n' ' ')"
		[ "$(grep -c . <<<"$lines")" -ge "${4:-1}" ]
		if grep -v -e " module=$name node=" -e " module=- node=" <<<"$lines"; then return 1; fi
		[ "$(grep -c " module=- node=" <<<"$lines")" -le "${3:-0}" ]
	done < <(grep '^weight ' "$2")
}

# replicas_p CMD...: CMD (forward_threads.py, as the target sees it) runs
# replicas on new threads each step, traced with -p for 2 s once it
# started; its lines in $BATS_TEST_TMPDIR/fx.out, the trace in trace.out.
# CMD must exec the python it starts (as chroot does): the target is the
# child of timeout, which bounds a failed test.
replicas_p() {
	local d=$BATS_TEST_TMPDIR pid
	timeout 120 "$@" replicas 100000 >"$d/fx.out" 2>"$d/fx.err" &
	wait_for "$d/fx.out" '^weight right_out ' 120
	pid=$(pgrep -P $!)
	sleep 0.5
	"$MT" --keys -p "$pid" -d 2s -o "$d/trace.out" 2>"$d/trace.err" || { cat "$d/trace.err"; kill "$pid"; return 1; }
	kill "$pid"
	grep -q "^# autograd pid=$pid mode=tls\$" "$d/trace.out"
	# the step the attach split may have made its Node before; more
	# steps than the 16 forward threads kept (two a step)
	thread_grads "$d/trace.out" "$d/fx.out" 1 17
}

# two_threads ROOTDIR DEVICE CMD...: forward_threads.py two 3 DEVICE in
# ROOTDIR, entered by CMD (chroot ROOTDIR, cuda-standin.sh --), started by
# memtrace-bpf -- and held at its exit (its names are read from the
# living process): every weight gradient named after its own thread's
# layer. Sets TRACE.
two_threads() {
	local root=$1 dev=$2 d=$BATS_TEST_TMPDIR
	shift 2
	root_stage "$root" "$ROOT/tests/fixtures/forward_threads.py"
	ln -sfn "$root$STAGE/fx.hold" "$d/fx.hold"
	: >"$d/trace.out"
	MT_HOLD="$STAGE/fx.hold" "$MT" --keys -o "$d/trace.out" -- \
		"$@" /usr/bin/python3 "$STAGE/forward_threads.py" two 3 "$dev" \
		>"$d/fx.out" 2>"$d/trace.err" &
	MT_PID=$!
	settle fx '^done'
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q '^# autograd pid=[0-9]* mode=tls$' "$TRACE"
	thread_grads "$TRACE" "$d/fx.out" 0 3
}
