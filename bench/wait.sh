# Sourced by bench/run.sh and bench/cost.sh.
# wait_for FILE REGEX SECONDS [PID]: until a line of FILE matches REGEX;
# gives up early when PID (the process that should write it) is gone, and
# then prints what FILE holds, its messages prefixed with the script's name.
wait_for() {
	local file=$1 re=$2 secs=$3 pid=${4:-} i
	for ((i = 0; i < secs * 20; i++)); do
		if [ -f "$file" ] && grep -Eq -- "$re" "$file"; then
			return 0
		fi
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.05
	done
	echo "$WAIT_NAME: no /$re/ in $file after ${secs}s; it holds:" >&2
	cat "$file" >&2 2>/dev/null || true
	return 1
}
