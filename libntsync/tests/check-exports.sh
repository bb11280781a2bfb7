#!/bin/sh
# libntsync.so exports exactly the ntsync_* names of its version script, all
# in a LIBNTSYNC_* version node, and has the SONAME libntsync.so.1.
# Usage: check-exports.sh LIBRARY.so VERSION-SCRIPT
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 LIBRARY.so VERSION-SCRIPT (normally run by meson test)" >&2
	exit 2
fi
lib=$1
map=$2
for tool in nm readelf; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$tool not found: install binutils" >&2
		exit 1
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# Dynamic symbols defined by the library, without the version nodes
# themselves (absolute symbols named after the node).
nm -D --defined-only --with-symbol-versions "$lib" |
	awk '$2 != "A" { print $3 }' | sort >"$tmp/exported"
sed 's/@.*//' "$tmp/exported" | sort >"$tmp/names"
sed -n 's/^[[:space:]]*\(ntsync_[a-z_]*\);.*/\1/p' "$map" | sort >"$tmp/expected"

echo "exported:"
sed 's/^/  /' "$tmp/exported"

if grep -v '^ntsync_' "$tmp/names"; then
	echo "FAIL: the names above are exported but lack the ntsync_ prefix" >&2
	fail=1
fi
if ! diff -u "$tmp/expected" "$tmp/names"; then
	echo "FAIL: exported names differ from $map (- missing, + extra)" >&2
	fail=1
fi
if grep -v '@@LIBNTSYNC_[0-9.]*$' "$tmp/exported"; then
	echo "FAIL: the symbols above carry no LIBNTSYNC_* version" >&2
	fail=1
fi

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "SONAME: $soname"
if [ "$soname" != "libntsync.so.1" ]; then
	echo "FAIL: SONAME is '$soname', expected libntsync.so.1" >&2
	fail=1
fi
exit $fail
