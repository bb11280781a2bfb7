# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "wine" (vm/ntsync-vm wine --source S --run SUITE): Wine's own conformance tests of
# synchronization, first with the driver this guest loaded (ours, or the kernel's own), then
# with the driver unloaded, where Wine falls back to wineserver round trips.
#
# In: $IN/wine/wine.tar (make install-lib's DESTDIR layout, /opt/wine) and
# $IN/wine/tests/*_test.exe, $IN/wine/tests.list (the tests to run). Out: $OUT/wine/CONFIG-EXE-TEST.log (the test program's output),
# CONFIG-ntsync-info.txt and .json (ntsync-info as root while ntsync-winbench --hold runs),
# CONFIG-fds.txt (what wineserver held then), CONFIG-wineboot.log, CONFIG-winbench.txt
# (ntsync-winbench's rows). The host judges them.
#
# $IN/wine/mode "bench" (vm/ntsync-vm wine --bench SUITE, a 1-vCPU guest counting
# instructions): ntsync-winbench only, with the in-tree driver and ours where the kernel has
# both, then without a driver.
W=$OUT/wine
mkdir -p "$W"
if ! tar -xf "$IN/wine/wine.tar" -C /; then
	say "wine: unpacking the Wine build failed"
	JOB_RC=1
	return
fi
export WINEPREFIX=/var/tmp/wineprefix WINEDEBUG=-all HOME=/root WINEDLLOVERRIDES="mscoree,mshtml="
WINE=/opt/wine/bin/wine
SERVER=/opt/wine/bin/wineserver
# EXE:TEST, one a line (vm/ntsync_vm/wine.py's TESTS)
TESTS=$(cat "$IN/wine/tests.list")
WINE_MODE=$(cat "$IN/wine/mode" 2>/dev/null || echo tests)

# snapshot CONFIG: who holds the device and its objects, seen from outside Wine (root), while
# a Windows process surely runs: ntsync-winbench --hold keeps a semaphore, a mutex and two
# events open until --release.
snapshot() {
	local cfg=$1 pid holder i
	"$WINE" "$IN/wine/tests/ntsync-winbench.exe" --hold >"$W/$cfg-hold.log" 2>&1 &
	holder=$!
	for i in $(seq 1 300); do
		grep -q "holding" "$W/$cfg-hold.log" 2>/dev/null && break
		sleep 1
	done
	[ "$i" -lt 300 ] || say "wine ($cfg): ntsync-winbench --hold did not start in 300 s"
	ntsync-info >"$W/$cfg-ntsync-info.txt" 2>&1
	ntsync-info --json >"$W/$cfg-ntsync-info.json" 2>/dev/null
	pid=$(pidof wineserver | cut -d' ' -f1)
	if [ -n "$pid" ]; then
		echo "wineserver pid $pid: $(find "/proc/$pid/fd" -lname '/dev/ntsync' 2>/dev/null | wc -l) descriptors of /dev/ntsync, $(find "/proc/$pid/fd" -lname 'anon_inode:ntsync' 2>/dev/null | wc -l) of ntsync objects, $(find "/proc/$pid/fd" | wc -l) in all" >"$W/$cfg-fds.txt"
	else
		echo "no wineserver running" >"$W/$cfg-fds.txt"
	fi
	"$WINE" "$IN/wine/tests/ntsync-winbench.exe" --release >>"$W/$cfg-hold.log" 2>&1
	wait "$holder"
	mark "info wine $cfg: ntsync-info while ntsync-winbench --hold ran: $(grep -a -E '^users:' "$W/$cfg-ntsync-info.txt")"
}

# winbench CONFIG [PROCESSES]: ntsync-winbench's rows (each run 5 times) from PROCESSES
# processes one after the other (default 1), into CONFIG-winbench.txt, CONFIG-winbench.2.txt...:
# a row that differs between processes, not between runs, shows so
winbench() {
	local i f
	[ -f "$IN/wine/tests/ntsync-winbench.exe" ] || return 0
	for i in $(seq 1 "${2:-1}"); do
		f=$W/$1-winbench.txt
		[ "$i" = 1 ] || f=$W/$1-winbench.$i.txt
		timeout 1800 "$WINE" "$IN/wine/tests/ntsync-winbench.exe" >"$f" 2>&1
		mark "info wine $1: ntsync-winbench process $i: exit $?"
	done
}

# run_config CONFIG: a fresh prefix and every test program, one after the other
run_config() {
	local cfg=$1 t exe name rc logf
	rm -rf "$WINEPREFIX"
	say "== wine ($cfg): wineboot --init"
	timeout 1200 "$WINE" wineboot --init >"$W/$cfg-wineboot.log" 2>&1
	"$SERVER" -w
	if [ "$WINE_MODE" = bench ]; then
		winbench "$cfg" 2
	else
		snapshot "$cfg"
		for t in $TESTS; do
			exe=${t%%:*} name=${t#*:}
			logf=$W/$cfg-${exe%_test.exe}-$name.log
			timeout 2400 "$WINE" "$IN/wine/tests/$exe" "$name" >"$logf" 2>&1
			rc=$?
			echo "exit $rc" >>"$logf"
			mark "info wine $cfg: ${exe%_test.exe} $name: exit $rc; $(grep -a -E "^[0-9a-f]+:$name:[0-9.]* [0-9]+ tests executed" "$logf" | tail -n 1 | cut -d: -f3-)"
		done
		winbench "$cfg"
	fi
	"$SERVER" -k 2>/dev/null
	"$SERVER" -w
}

run_config "$DRIVER"
if [ "$WINE_MODE" = bench ] && [ "$DRIVER" = in-tree ]; then
	say "== wine: our driver in place of the in-tree one"
	if ! load_driver ours; then
		say "wine: loading our driver failed"
		JOB_RC=1
		return
	fi
	run_config ours
fi
say "== wine: unloading the driver (modprobe -r ntsync); Wine then runs without /dev/ntsync"
if [ -e /sys/module/ntsync ] && ! modprobe -r ntsync; then
	say "wine: modprobe -r ntsync failed: $(cat /sys/module/ntsync/refcnt 2>/dev/null) users"
	JOB_RC=1
	return
fi
if [ -e /dev/ntsync ]; then
	say "wine: /dev/ntsync is still there after modprobe -r"
	JOB_RC=1
	return
fi
run_config none
JOB_RC=0
