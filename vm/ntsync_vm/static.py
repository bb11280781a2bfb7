"""The guest programs as static binaries (meson/build-static: meson cross builds), flat per
architecture: OUT/ARCH/ for an architecture of the table (arches.py) and for its compat ABI,
with every test-*, ntsync-run-tests, kernel-log-gates, ntsync-smoke, ntsync-bench, ntsync-fuzz,
ntsync-abuse and ntsync-linearize. Cached by the hash of the sources that go into them."""

import shutil
import subprocess
import time

from . import arches
from .util import REPO, Failure, cache, ensure_host_tools, say, source_files, tail_text, tree_hash

PROGRAMS = ("ntsync-run-tests", "kernel-log-gates", "ntsync-smoke", "ntsync-bench", "ntsync-fuzz",
            "ntsync-abuse", "ntsync-linearize", "ntsync-diff", "differential-7.3.txt")
SOURCES = ("tests/", "tools/", "include/", "libntsync/", "meson", "subprojects/", "VERSION")


def _complete(d):
    missing = [p for p in PROGRAMS if not (d / p).exists()]
    if not list(d.glob("test-*")):
        missing.append("test-*")
    return missing


def build(names=None):
    """OUT with OUT/NAME/ for each of NAMES (default: the default architecture and its compat
    ABI), built by meson/build-static when not cached."""
    names = names or arches.static_names(arches.get())
    script = REPO / "meson/build-static"
    if not script.exists():
        raise Failure("meson/build-static is missing; it builds the guest programs")
    key = tree_hash(source_files(SOURCES))
    out = cache() / "static" / key
    todo = [a for a in names if not (out / a / ".ok").exists()]
    if not todo:
        return out
    ensure_host_tools(["meson", "ninja"])
    out.mkdir(parents=True, exist_ok=True)
    for arch in todo:
        logf = out / f"build-{arch}.log"
        t = time.monotonic()
        say(f"static {arch} programs: meson/build-static --arch {arch} (log {logf})")
        with open(logf, "w") as lf:
            try:
                r = subprocess.run(["bash", str(script), "--arch", arch, str(out)], stdout=lf,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=1800)
            except subprocess.TimeoutExpired:
                raise Failure(f"meson/build-static --arch {arch} timed out after 30 min; see {logf}")
        missing = _complete(out / arch) if r.returncode == 0 else []
        if r.returncode or missing:
            why = f"exit {r.returncode}" if r.returncode else f"no {', '.join(missing)} in {out / arch}"
            raise Failure(f"meson/build-static --arch {arch} failed ({why}); last lines of {logf}:\n"
                          f"{tail_text(logf, 15)}")
        (out / arch / ".ok").write_text("")
        say(f"static {arch} programs: built in {time.monotonic() - t:.0f} s")
    builds = sorted((q for q in out.parent.iterdir() if q.is_dir()), key=lambda q: q.stat().st_mtime)
    for old in builds[:-3]:
        shutil.rmtree(old, ignore_errors=True)
    return out
