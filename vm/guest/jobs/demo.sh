# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "demo": show that the packages installed with apt give a working /dev/ntsync.
JOB_RC=0
say ""
say "== $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"'), kernel $(uname -r)"
say "== installed: $(dpkg-query -W -f '${Package} ${Version}, ' 'ntsync-*' 'libntsync*' 2>/dev/null | sed 's/, $//')"
say "== ls -l /dev/ntsync"
shown "$OUT/job.log" ls -l /dev/ntsync || JOB_RC=1
say "== modinfo ntsync (loaded: $LOADED_BY)"
shown "$OUT/job.log" sh -c 'modinfo ntsync | grep -E "^(filename|version|description|license|vermagic):"'
say "== ntsync-info"
shown "$OUT/job.log" ntsync-info || JOB_RC=1
if command -v ntsync-bench >/dev/null; then
	say "== ntsync-bench --quick"
	shown "$OUT/job.log" ntsync-bench --quick || JOB_RC=1
else
	say "== ntsync-bench is not installed yet (ntsync-tools without the benchmark)"
fi
