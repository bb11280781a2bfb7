# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "test": the installed cmocka conformance suite (package ntsync-tests), then, when the
# host sent it ($COMPAT/ of job.env, from meson/build-static: i386 on amd64), the same suite
# built as static programs of the architecture's compat ABI, which goes through the driver's
# compat ioctl path.  The last line of job.log
# adds both up: "N passed, N failed, N skipped".
summary_of() {
	grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$1" | tail -n1
}

c=${COMPAT:-}

if ! command -v ntsync-run-tests >/dev/null; then
	say "ntsync-run-tests is not installed (package ntsync-tests missing from the debs?)"
	JOB_RC=3
else
	n=$(find /usr/libexec/ntsync/tests -maxdepth 1 -type f -perm -u+x 2>/dev/null | wc -l)
	mark "info running $n test programs against $LOADED_BY"
	shown "$OUT/job-64.log" ntsync-run-tests --tap "$OUT/results.tap" --junit "$OUT/results.xml"
	JOB_RC=$?
	cat "$OUT/job-64.log" >>"$OUT/job.log"
	if [ -n "$c" ] && [ -x "$IN/$c/ntsync-run-tests" ]; then
		n=$(find "$IN/$c" -maxdepth 1 -type f -name 'test-*' | wc -l)
		mark "info running the $c build ($n static 32-bit programs, compat ioctls) against $LOADED_BY"
		shown "$OUT/job-$c.log" "$IN/$c/ntsync-run-tests" --dir "$IN/$c" \
			--tap "$OUT/results-$c.tap" --junit "$OUT/results-$c.xml"
		rc=$?
		[ "$JOB_RC" -ne 0 ] || JOB_RC=$rc
		a=$(summary_of "$OUT/job-64.log")
		b=$(summary_of "$OUT/job-$c.log")
		if [ -z "$a" ] || [ -z "$b" ]; then
			say "a test runner printed no summary line (64-bit: '${a}', $c: '${b}')"
			JOB_RC=1
		else
			# "P passed, F failed, S skipped" twice -> the sums
			read -r p1 f1 s1 < <(echo "$a" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/')
			read -r p2 f2 s2 < <(echo "$b" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/')
			{
				sed "s/^/$c /" "$OUT/job-$c.log" | grep -Ev "^$c [0-9]+ passed, "
				echo "suite, 64-bit: $a"
				echo "suite, $c:   $b"
				echo "$((p1 + p2)) passed, $((f1 + f2)) failed, $((${s1:-0} + ${s2:-0})) skipped"
			} >>"$OUT/job.log"
			say "suite, 64-bit: $a; $c: $b"
		fi
	fi
fi

# ---------------------------------------------------------------------------------------------
# The differential test against mainline's driver in this same boot (issue 26; the engine is
# tests/differential/): where the kernel has the in-tree driver and the suite ran on ours, the
# error matrix and $SEEDS walks run on the in-tree driver, then on ours, and the two outputs
# are compared line by line.  Two more results, "diff: matrix" and "diff: walks", are added to
# the summary.  A walk that differs is shrunk (delta debugging over its calls, both drivers
# reloaded for every round) to the shortest sequence that still differs, printed with both
# traces.  diff-intree.txt, in the results, is the reference that tests/test-diff.c uses on
# kernels without the in-tree driver (tests/differential/record-reference records it).
DIFF=/usr/libexec/ntsync/ntsync-diff

diff_shrink() {	# seed: the shortest run of its calls whose outputs still differ
	local seed=$1 dir=$OUT/shrink-$1 round=0 pick
	mkdir -p "$dir"
	"$DIFF" ops "$seed" >"$dir/walk.ops"
	cp "$dir/walk.ops" "$dir/shrunk.ops"
	while [ $round -lt 60 ]; do
		round=$((round + 1))
		rm -rf "$dir/cand"
		"$DIFF" candidates "$dir/shrunk.ops" "$dir/cand" >/dev/null || return 1
		compgen -G "$dir/cand/*.ops" >/dev/null || break
		load_driver in-tree >/dev/null || return 1
		"$DIFF" replay --digest "$dir"/cand/*.ops >"$dir/intree.digests" || return 1
		load_driver ours >/dev/null || return 1
		"$DIFF" replay --digest "$dir"/cand/*.ops >"$dir/ours.digests" || return 1
		# "FILE ops=N digest=D" side by side; candidates come shortest first
		pick=$(paste -d' ' "$dir/intree.digests" "$dir/ours.digests" | awk '$3 != $6 { print $1; exit }')
		[ -n "$pick" ] || break
		cp "$pick" "$dir/shrunk.ops"
	done
	load_driver in-tree >/dev/null || return 1
	"$DIFF" replay "$dir/shrunk.ops" >"$dir/trace-intree.txt"
	load_driver ours >/dev/null || return 1
	"$DIFF" replay "$dir/shrunk.ops" >"$dir/trace-ours.txt"
	{
		echo "walk $seed, $(wc -l <"$dir/walk.ops") calls, shrunk in $round rounds to $(wc -l <"$dir/shrunk.ops"):"
		sed 's/^/    /' "$dir/shrunk.ops"
		echo "  the two drivers' lines (- in-tree, + ours):"
		diff -u "$dir/trace-intree.txt" "$dir/trace-ours.txt" | tail -n +3 | sed 's/^/    /'
	} | tee -a "$OUT/diff.log"
}

diff_result() {	# name status message: one result line, counted in the summary
	local tag=PASS
	[ "$2" = pass ] || tag=FAIL
	echo "$tag diff: $1" | tee -a "$OUT/diff.log"
	[ -z "$3" ] || echo "$3" | sed 's/^/    /' | tee -a "$OUT/diff.log"
	if [ "$2" = pass ]; then DIFF_PASSED=$((DIFF_PASSED + 1)); else DIFF_FAILED=$((DIFF_FAILED + 1)); fi
}

DIFF_PASSED=0
DIFF_FAILED=0
if [ "$DRIVER" = ours ] && kernel_has_in_tree; then
	seeds=${SEEDS:-1000}
	mark "info differential test: the error matrix and $seeds walks on the in-tree driver, then on ours, in this boot"
	t0=$SECONDS
	if [ ! -x "$DIFF" ]; then
		diff_result "matrix, in-tree vs ours" fail "$DIFF is not installed (package ntsync-tests too old?)"
		diff_result "walks, in-tree vs ours" fail "$DIFF is not installed"
	elif ! load_driver in-tree || ! "$DIFF" all --seeds "$seeds" >"$OUT/diff-intree.txt"; then
		diff_result "matrix, in-tree vs ours" fail "the run on the in-tree driver failed"
		diff_result "walks, in-tree vs ours" fail "the run on the in-tree driver failed"
		load_driver ours || fail "loading our driver again failed"
	else
		t1=$SECONDS
		load_driver ours || fail "loading our driver again failed"
		"$DIFF" all --seeds "$seeds" >"$OUT/diff-ours.txt"
		t2=$SECONDS
		grep -v '^walk ' "$OUT/diff-intree.txt" >"$OUT/diff-intree.matrix"
		grep -v '^walk ' "$OUT/diff-ours.txt" >"$OUT/diff-ours.matrix"
		grep -E '^(#|walk )' "$OUT/diff-intree.txt" >"$OUT/diff-intree.walks"
		grep -E '^(#|walk )' "$OUT/diff-ours.txt" >"$OUT/diff-ours.walks"
		if msg=$("$DIFF" compare --max 40 "$OUT/diff-intree.matrix" "$OUT/diff-ours.matrix"); then
			diff_result "matrix, in-tree vs ours" pass "$(tail -n1 <<<"$msg")"
		else
			diff_result "matrix, in-tree vs ours" fail "$msg"
		fi
		if msg=$("$DIFF" compare --max 10 "$OUT/diff-intree.walks" "$OUT/diff-ours.walks"); then
			diff_result "walks, in-tree vs ours" pass "$(tail -n1 <<<"$msg")"
		else
			diff_result "walks, in-tree vs ours" fail "$msg"
			# the first three seeds that differ, shrunk
			paste -d' ' <(grep '^walk ' "$OUT/diff-intree.walks") <(grep '^walk ' "$OUT/diff-ours.walks") |
				awk '$4 != $8 { print $2 }' | head -n 3 >"$OUT/diff-seeds"
			while read -r s; do
				diff_shrink "$s" || say "shrinking walk $s failed"
			done <"$OUT/diff-seeds"
			load_driver ours || fail "loading our driver again failed"
		fi
		say "differential test: in-tree $((t1 - t0)) s, ours $((t2 - t1)) s, all $((SECONDS - t0)) s; $(grep -c . "$OUT/diff-intree.matrix") matrix lines, $seeds walks"
	fi
	[ "$DIFF_FAILED" -eq 0 ] || JOB_RC=1
	# the suite's summary (job.log's last), with the two results added
	p=0 f=0 s=0
	summary=$(summary_of "$OUT/job.log")
	if [ -n "$summary" ]; then
		read -r p f s < <(echo "$summary" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/')
	fi
	{
		cat "$OUT/diff.log"
		echo "$((p + DIFF_PASSED)) passed, $((f + DIFF_FAILED)) failed, ${s:-0} skipped"
	} >>"$OUT/job.log"
fi

# ---------------------------------------------------------------------------------------------
# Issue 29 side by side: test-memcg (an unprivileged user in a small memory cgroup, creating
# objects and blocked waiters until stopped) ran on ours in the suite above; where the kernel
# has the in-tree driver, run it on that one too, in this boot, and put both drivers' figures
# next to each other in job.log.  Only figures: the in-tree run's verdicts are not counted.
MEMCG=/usr/libexec/ntsync/tests/test-memcg
if [ "$DRIVER" = ours ] && kernel_has_in_tree && [ -x "$MEMCG" ]; then
	mark "info memcg: the same test on the in-tree driver, for the figures"
	if load_driver in-tree >/dev/null; then
		"$MEMCG" >"$OUT/memcg-intree.log" 2>&1
		load_driver ours >/dev/null || fail "loading our driver again failed"
		{
			echo "memory cgroup figures, $(uname -r), ours then in-tree (tests/test-memcg.c):"
			grep -h "# memcg " "$OUT/results.tap" "$OUT/memcg-intree.log" | sed 's/^ *# /    /'
		} | tee -a "$OUT/memcg.txt"
	else
		say "loading the in-tree driver for the memcg figures failed"
		load_driver ours || fail "loading our driver again failed"
	fi
fi
