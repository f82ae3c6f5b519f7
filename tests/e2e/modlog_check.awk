#!/usr/bin/awk -f
# Check a --module-log file as a hook logger would have written it.
# Variables: root (the root module's name), modules (every module called
# in a step, space-separated, the root too), steps (how many whole steps);
# optional: outside (modules called outside the root, as a loss), noback
# (modules whose forward makes no autograd Node: no backward records).
# Exits 1 with a line per fault.
#
# Each step: records in the file's order nest properly (a module's pre
# comes while its parent's call is open, its post before its parent's),
# every module has its pre/post pairs (one of each a stage), steps count from 0 one after the other, the optimizer's
# pre_step/post_step end it, and the header names the units.

function fail(msg) {
	print FILENAME ":" FNR ": " msg
	bad = 1
}

# the module m is a child of: its longest prefix among the modules, or root
function parent(m,    p, i) {
	p = m
	while ((i = match(p, /\.[^.]*$/)) > 0) {
		p = substr(p, 1, i - 1)
		if (p in known)
			return p
	}
	return m == root || m in outside_set ? "" : root
}

function end_step(    m, s) {
	if (cur < 0)
		return
	for (s in depth)
		if (depth[s] > 0)
			fail("step " cur ": " s " still open at its end: " stack[s, depth[s]])
	for (m in known)
		for (s in want)
			if (count[m, s] != (m in noback_set && s ~ /backward/ ? 0 : 1))
				fail("step " cur ": " m " " s ": " count[m, s] + 0 " records")
	if (count["optimizer", "pre_step"] != 1 || count["optimizer", "post_step"] != 1)
		fail("step " cur ": no pre_step/post_step pair")
	delete count
	delete depth
	nsteps++
}

BEGIN {
	n = split(modules, v, " ")
	for (i = 1; i <= n; i++)
		known[v[i]] = 1
	n = split(outside, v, " ")
	for (i = 1; i <= n; i++)
		outside_set[v[i]] = known[v[i]] = 1
	n = split(noback, v, " ")
	for (i = 1; i <= n; i++)
		noback_set[v[i]] = 1
	split("pre_forward post_forward pre_backward post_backward", v, " ")
	for (i = 1; i <= 4; i++)
		want[v[i]] = 1
	cur = -1
}

FNR == 1 {
	if ($0 !~ /^# memtrace-bpf module log pid=[0-9]+: .*allocated_mib.* in MiB/)
		fail("no header naming the units: " $0)
	next
}

/^#/ { next }

{
	if ($0 !~ /^step=[0-9]+ module=[^ ]+ stage=[a-z_]+ allocated_mib=[0-9]+\.[0-9][0-9][0-9] reserved_mib=[0-9]+\.[0-9][0-9][0-9] max_allocated_mib=[0-9]+\.[0-9][0-9][0-9] max_reserved_mib=[0-9]+\.[0-9][0-9][0-9]( time=[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9])? parameters_mib=[0-9.]+ inputs_mib=[0-9.]+ activations_mib=[0-9.]+ gradients_mib=[0-9.]+ optimizer_state_mib=[0-9.]+ temporaries_mib=[0-9.]+ unknown_mib=[0-9.]+$/) {
		fail("not a record: " $0)
		next
	}
	# the kinds hold what allocated_mib counts, no more (a -p attach
	# does not see what was made before it): 8 roundings of 0.0005
	kinds = 0
	for (i = NF - 6; i <= NF; i++) {
		split($i, kv, "=")
		kinds += kv[2]
	}
	split($4, kv, "=")
	if (kinds > kv[2] + 0.004)
		fail("kinds add up past allocated_mib: " $0)
	step = substr($1, 6) + 0
	m = substr($2, 8)
	s = substr($3, 7)
	if (step != cur) {
		end_step()
		if (step != cur + 1)
			fail("step " step " after step " cur)
		cur = step
	}
	count[m, s]++
	if (m == "optimizer")
		next
	if (!(m in known)) {
		fail("module " m " was not called")
		next
	}
	split(s, w, "_")
	pass = w[2]
	d = depth[pass] + 0
	if (w[1] == "pre") {
		top = d ? stack[pass, d] : ""
		if (top != parent(m))
			fail(s " of " m " inside " (top == "" ? "nothing" : top) ", not its parent " parent(m))
		stack[pass, ++depth[pass]] = m
	} else if (!d || stack[pass, d] != m) {
		fail(s " of " m " while " (d ? stack[pass, d] : "nothing") " is open")
	} else {
		depth[pass]--
	}
}

END {
	end_step()
	if (nsteps != steps)
		fail(nsteps " whole steps, not " steps)
	exit bad
}
