# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "bench": ntsync-bench for the in-tree driver and ours in the same boot, then the ratios.
# BENCH_ARGS (job.env): more options for ntsync-bench (bench --cpus N: the contention rows).
JOB_RC=0
read -r -a bench_args <<<"${BENCH_ARGS:-}"
[ -z "${BENCH_ARGS:-}" ] || say "ntsync-bench ${BENCH_ARGS} on $(nproc) vCPUs"
if ! command -v ntsync-bench >/dev/null; then
	say "ntsync-bench is not installed (package ntsync-tools without the benchmark?)"
	JOB_RC=3
else
	if kernel_has_in_tree; then
		mark "info bench: in-tree driver"
		load_driver in-tree || fail "loading the in-tree driver failed"
		shown "$OUT/bench-intree.log" ntsync-bench "${bench_args[@]}" --json="$OUT/intree.json" || JOB_RC=1
		mark "info bench: our driver"
		load_driver ours || fail "loading our driver failed"
		shown "$OUT/bench-ours.log" ntsync-bench "${bench_args[@]}" --json="$OUT/ours.json" || JOB_RC=1
		say "== ntsync-bench --compare intree.json ours.json (kernel $(uname -r))"
		shown "$OUT/job.log" ntsync-bench --compare "$OUT/intree.json" "$OUT/ours.json" || JOB_RC=1
	else
		say "kernel $(uname -r) has no in-tree ntsync: our driver only"
		shown "$OUT/bench-ours.log" ntsync-bench "${bench_args[@]}" --json="$OUT/ours.json" || JOB_RC=1
		shown "$OUT/job.log" ntsync-bench --quick || JOB_RC=1
	fi
fi
