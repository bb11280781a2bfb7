# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "wine-links" (vm/ntsync-vm wine --source S --links SUITE, issue 39): the five links of
# "is this Wine process using ntsync?" broken on purpose, one at a time, in one guest with
# our packages and two Wine installs of the same source: /opt/wine (the backend compiled in)
# and /opt/wine-stub (server/ and dlls/ntdll/ rebuilt against trixie's own <linux/ntsync.h>,
# which lacks NTSYNC_IOC_EVENT_READ: the stubs). In every case a Windows program
# (ntsync-winbench --hold) runs while `ntsync-info --pid PID` looks at it from outside, as
# root; the host judges the verdicts (vm/ntsync_vm/wine.py, LINK_CASES).
#
# In: $IN/wine/wine.tar (make install-lib's DESTDIR layout, /opt/wine), $IN/wine/stub.tar
# (the stub build's wineserver and ntdll.so, paths relative to the prefix),
# $IN/wine/tests/ntsync-winbench.exe, $IN/wine/debs/*.deb (Debian's bubblewrap).
# Out: $OUT/links/CASE.json, CASE.txt and CASE.rc (ntsync-info --pid's JSON, text and exit
# status), CASE.setup (what the case did), CASE-hold.log; check-wine-{real,stub}.{txt,rc}.
L=$OUT/links
mkdir -p "$L"
JOB_RC=0
if ! tar -xf "$IN/wine/wine.tar" -C /; then
	say "wine-links: unpacking the Wine build failed"
	JOB_RC=1
	return
fi
# The second install: the same files, the stub build's wineserver and ntdll.so over them.
mkdir -p /opt/wine-stub
cp -a /opt/wine/. /opt/wine-stub/
if ! tar -xf "$IN/wine/stub.tar" -C /opt/wine-stub; then
	say "wine-links: unpacking the stub build failed"
	JOB_RC=1
	return
fi
if ! dpkg -i "$IN"/wine/debs/*.deb >"$L/dpkg.log" 2>&1; then
	say "wine-links: dpkg -i bubblewrap failed: $(tail -n 3 "$L/dpkg.log")"
	JOB_RC=1
	return
fi
export WINEPREFIX=/var/tmp/wineprefix WINEDEBUG=-all HOME=/root WINEDLLOVERRIDES="mscoree,mshtml="
PROG=$IN/wine/tests/ntsync-winbench.exe
# The binary itself decides (link 2 on disk): exit 0 with the backend, 1 with the stubs.
for b in real:/opt/wine stub:/opt/wine-stub; do
	ntsync-info --check-wine "${b#*:}" >"$L/check-wine-${b%%:*}.txt" 2>&1
	echo $? >"$L/check-wine-${b%%:*}.rc"
	mark "info wine-links check-wine ${b%%:*}: exit $(cat "$L/check-wine-${b%%:*}.rc"): $(grep -a -m1 -i -E 'backend|stub' "$L/check-wine-${b%%:*}.txt")"
done

stop_wine() {	# every wineserver of the prefix (real or stub, in a sandbox or not) ended
	/opt/wine/bin/wineserver -k 2>/dev/null
	/opt/wine/bin/wineserver -w 2>/dev/null
	pkill -x wineserver 2>/dev/null
	for _ in $(seq 1 30); do pgrep -x wineserver >/dev/null || break; sleep 1; done
}

# hold CASE WRAP...: start ntsync-winbench --hold under WRAP (a Wine, maybe inside a
# sandbox), wait until it holds its objects; HELD is the Windows process's pid ("" if none).
HELD=
hold() {
	local cfg=$1 i
	shift
	"$@" "$PROG" --hold >"$L/$cfg-hold.log" 2>&1 &
	echo $! >"$L/$cfg.holder"
	for i in $(seq 1 300); do
		grep -q "holding" "$L/$cfg-hold.log" 2>/dev/null && break
		sleep 1
	done
	[ "$i" -lt 300 ] || say "wine-links ($cfg): ntsync-winbench --hold did not start in 300 s"
	# Wine names the process after the .exe (15 characters of it); else its command line
	HELD=$(pgrep -n -x ntsync-winbench || pgrep -n -f 'ntsync-winbench.exe --hold' || true)
}

# look CASE PID [USER]: ntsync-info --pid PID (JSON and text), as root or as USER
look() {
	local cfg=$1 pid=$2 user=${3:-} run=()
	[ -z "$user" ] || run=(runuser -u "$user" --)
	"${run[@]}" ntsync-info --pid "$pid" --json >"$L/$cfg.json" 2>"$L/$cfg.err"
	echo $? >"$L/$cfg.rc"
	"${run[@]}" ntsync-info --pid "$pid" >"$L/$cfg.txt" 2>&1
	mark "info wine-links $cfg: exit $(cat "$L/$cfg.rc"): $(grep -a -m1 -E '^(verdict|ntsync-info):' "$L/$cfg.txt")"
}

# release CASE WRAP...: end the --hold (through the same Wine and sandbox), then everything
release() {
	local cfg=$1
	shift
	timeout 120 "$@" "$PROG" --release >>"$L/$cfg-hold.log" 2>&1
	timeout 60 tail --pid="$(cat "$L/$cfg.holder")" -f /dev/null
	stop_wine
}

# case CASE "WHAT" WRAP...: one case with the module as it is now
run_case() {
	local cfg=$1 what=$2 pid
	shift 2
	say "== wine-links $cfg: $what"
	{
		echo "case: $what"
		echo "command: $*"
		echo "module: $(cat /sys/module/ntsync/initstate 2>/dev/null || echo not loaded); $(ls -l --time-style=full-iso /dev/ntsync 2>&1)"
	} >"$L/$cfg.setup"
	hold "$cfg" "$@"
	pid=$HELD
	{
		echo "pid: ${pid:-none found}"
		[ -z "$pid" ] || echo "ntdll: $(grep -m1 -o '/[^ ]*ntdll.so' "/proc/$pid/maps" 2>/dev/null); exe: $(readlink "/proc/$pid/exe")"
	} >>"$L/$cfg.setup"
	if [ -n "$pid" ]; then
		look "$cfg" "$pid"
		[ "$cfg" != whole ] || look user "$pid" nobody
	else
		echo 127 >"$L/$cfg.rc"
	fi
	release "$cfg" "$@"
}

say "== wine-links: a prefix (wineboot --init, real build)"
rm -rf "$WINEPREFIX"
timeout 1200 /opt/wine/bin/wine wineboot --init >"$L/wineboot.log" 2>&1
stop_wine

BW=(bwrap --bind / / --dev /dev --proc /proc)
run_case whole "all links whole: the real build, the driver loaded before wineserver started" \
	/opt/wine/bin/wine
run_case stub "link 2: the stub build (the same source, server/ and dlls/ntdll/ built without our header)" \
	env WINESERVER=/opt/wine-stub/bin/wineserver /opt/wine-stub/bin/wine
run_case proton-var "link 4: PROTON_NO_NTSYNC=1 in a Proton-like environment (STEAM_COMPAT_DATA_PATH set)" \
	env STEAM_COMPAT_DATA_PATH=/var/tmp/compat PROTON_NO_NTSYNC=1 /opt/wine/bin/wine
run_case bwrap-dev "link 5: inside bwrap --dev /dev (a private /dev without ntsync, as Flatpak and containers)" \
	"${BW[@]}" /opt/wine/bin/wine
run_case bwrap-bound "inside bwrap --dev /dev --dev-bind /dev/ntsync /dev/ntsync (the device bound in)" \
	"${BW[@]}" --dev-bind /dev/ntsync /dev/ntsync /opt/wine/bin/wine

say "== wine-links: modprobe -r ntsync"
if ! modprobe -r ntsync || [ -e /dev/ntsync ]; then
	say "wine-links: modprobe -r ntsync failed: $(cat /sys/module/ntsync/refcnt 2>/dev/null) users"
	JOB_RC=1
	return
fi
run_case unloaded "link 1: the module unloaded (modprobe -r ntsync) before wineserver started" \
	/opt/wine/bin/wine

say "== wine-links early-server: wineserver -p before modprobe ntsync, then the program"
/opt/wine/bin/wineserver -p
sleep 3
if ! load_driver "$DRIVER"; then
	say "wine-links: loading the driver again failed"
	JOB_RC=1
	return
fi
sleep 2
# run_case would not start a server: the one started above serves the program
run_case early-server "link 3: wineserver started (wineserver -p) before modprobe ntsync, the program after" \
	/opt/wine/bin/wine
