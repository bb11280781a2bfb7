#!/bin/sh
# Every exported function has a section-3 page that meson installs; every
# page renders with groff without a warning (.so links resolved, tables
# through tbl); full pages have NAME, SYNOPSIS, DESCRIPTION, RETURN VALUE and
# SEE ALSO, and name only pages that exist.
# Usage: check-man.sh VERSION-SCRIPT MANDIR PAGE... (normally run by meson)
set -eu

if [ $# -lt 3 ]; then
	echo "usage: $0 VERSION-SCRIPT MANDIR PAGE... (normally run by meson test)" >&2
	exit 2
fi
map=$1
mandir=$2
shift 2
if ! command -v groff >/dev/null 2>&1; then
	echo "SKIP: groff not found (apt-get install groff)"
	exit 77
fi

# shellcheck source=tests/tap.sh
. "$(dirname "$0")/../../tests/tap.sh"

# The installed pages, in a man3/ tree so that ".so man3/x.3" resolves.
mkdir "$tmp/man3"
for p in "$@"; do
	cp "$p" "$tmp/man3/"
done
installed=$(cd "$tmp/man3" && ls)

# shellcheck disable=SC2013 # one name per line, no spaces
for fn in $(sed -n 's/^[[:space:]]*\(ntsync_[a-z_]*\);.*/\1/p' "$map"); do
	if [ -f "$tmp/man3/$fn.3" ]; then
		ok "$fn has an installed page"
	else
		bad "$fn has no page in the installed list (add $fn.3 to man/meson.build)"
	fi
done

for f in "$mandir"/*.3; do
	b=$(basename "$f")
	if ! echo "$installed" | grep -qx "$b"; then
		bad "$b is in $mandir but not installed (add it to man/meson.build)"
	fi
done

cd "$tmp"
for page in man3/*.3; do
	if ! groff -t -man -ww -z "$page" >"$tmp/warn" 2>&1 || [ -s "$tmp/warn" ]; then
		bad "$page renders with warnings"
		sed 's/^/# /' "$tmp/warn"
		continue
	fi
	ok "$page renders without warnings"
	if head -1 "$page" | grep -q '^\.so '; then
		continue
	fi
	secs='NAME SYNOPSIS DESCRIPTION RETURN_VALUE SEE_ALSO'
	# the overview page explains; it returns nothing
	[ "$page" = man3/libntsync.3 ] && secs='NAME SYNOPSIS DESCRIPTION SEE_ALSO'
	for sec in $secs; do
		sec=$(echo "$sec" | tr _ ' ')
		if ! grep -q "^\.SH $sec\$" "$page"; then
			bad "$page lacks the section $sec"
		fi
	done
	# .BR name (3) references must name installed pages
	# shellcheck disable=SC2013
	for ref in $(sed -n 's/^\.BR \([a-z_]*\) (3).*/\1/p' "$page"); do
		if [ ! -f "man3/$ref.3" ]; then
			bad "$page refers to $ref(3), which has no page"
		fi
	done
	# every -Exxx in RETURN VALUE is a known errno name
	# shellcheck disable=SC2013
	for e in $(sed -n '/^\.SH RETURN VALUE/,/^\.SH /s/^\.B \\-\(E[A-Z]*\)$/\1/p' "$page"); do
		if ! grep -qw "$e" /usr/include/asm-generic/errno*.h 2>/dev/null; then
			bad "$page lists unknown error $e"
		fi
	done
done

done_tap
