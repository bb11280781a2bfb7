#!/bin/sh
# The public header compiles on its own as strict C99, as C++, and together
# with the kernel ABI header.  Usage: check-header.sh SRCROOT CC [CC-ARGS...]
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 SRCROOT CC [CC-ARGS...] (normally run by meson test)" >&2
	exit 2
fi
src=$1
shift

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

strict="-Wall -Wextra -Werror -Wundef -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wredundant-decls"

cat >"$tmp/alone.c" <<'EOT'
#include <ntsync.h>
#if !LIBNTSYNC_CHECK_VERSION(1, 1) || LIBNTSYNC_CHECK_VERSION(1, 99)
#error "LIBNTSYNC_CHECK_VERSION is wrong"
#endif
int main(void)
{
	struct ntsync_timeout t = { 0, NTSYNC_TIMEOUT_INFINITE, 0 };
	struct ntsync_device *dev = 0;
	int (*wait)(struct ntsync_device *, const int *, uint32_t, uint32_t,
		    int, struct ntsync_timeout, uint32_t *) = ntsync_wait_any;
	bool prev = false;

	(void)dev;
	(void)wait;
	(void)prev;
	return (int)t.kind + NTSYNC_WAIT_MAX - 64 + NTSYNC_NO_ALERT + 1;
}
EOT
printf '#include <ntsync.h>\n#include <linux/ntsync.h>\nint main(void) { return NTSYNC_WAIT_MAX != NTSYNC_MAX_WAIT_COUNT; }\n' >"$tmp/both1.c"
printf '#include <linux/ntsync.h>\n#include <ntsync.h>\nint main(void) { return NTSYNC_WAIT_MAX != NTSYNC_MAX_WAIT_COUNT; }\n' >"$tmp/both2.c"
cp "$tmp/alone.c" "$tmp/alone.cc"

fail=0
run() {
	echo "+ $*"
	if ! "$@"; then
		fail=1
	fi
}

for std in c99 c11 gnu99; do
	# shellcheck disable=SC2086 # $strict is a list of flags
	run "$@" -std=$std -pedantic $strict -I"$src/include" -fsyntax-only "$tmp/alone.c"
done
for f in both1 both2; do
	# shellcheck disable=SC2086
	run "$@" -std=c99 -pedantic $strict -I"$src/include" -I"$src/include/uapi" -fsyntax-only "$tmp/$f.c"
done

cxx=
for c in c++ g++ clang++; do
	if command -v "$c" >/dev/null 2>&1; then
		cxx=$c
		break
	fi
done
if [ -n "$cxx" ]; then
	for std in c++98 c++11 c++17; do
		run "$cxx" -std=$std -pedantic -Wall -Wextra -Werror -I"$src/include" -fsyntax-only "$tmp/alone.cc"
	done
else
	echo "no C++ compiler found: C++ check not run"
fi

exit $fail
