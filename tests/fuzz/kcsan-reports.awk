# Sort the KCSAN reports of a console log (tests/fuzz/boot-fuzz --kernel kcsan):
# a report is in ntsync's code when the first frame of either racing access
# is in the module ([ntsync]); one whose accesses are both in the kernel but
# whose stacks pass through ntsync is the kernel's own, reached through it
# (e.g. hrtimer_wakeup / schedule_hrtimeout_range_clock under ntsync_schedule).
# Exit 1 when any report is in ntsync's code.
# strip the timestamp
{ line = $0; sub(/^\[ *[0-9.]+\] ?/, "", line) }
/BUG: KCSAN: / { inrep = 1; head = line; ours = 0; via = 0; first = 0; next }
inrep && line ~ /^(read|write)( \(marked\))?( \(reordered\))? to 0x.* by / { first = 1; next }
inrep && first && line ~ /^ +[^ ]/ { first = 0; if (line ~ /\[ntsync\]/) ours = 1 }
inrep && line ~ /\[ntsync\]/ { via = 1 }
inrep && line ~ /^=+$/ {
	inrep = 0; n++
	if (ours) { m++; print "ntsync: " head }
	else if (via) { v++; print "kernel's own, reached through ntsync: " head }
	else print "kernel's own: " head
}
END {
	printf "boot-fuzz: KCSAN reports: %d; in ntsync's code: %d; the kernel's own, reached through ntsync: %d\n", n, m, v > "/dev/stderr"
	exit m > 0
}
