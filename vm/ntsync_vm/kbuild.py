"""`ntsync-vm kbuild [--sparse] [--arch A]... [SUITE...]`: module/ built with W=1 against the
headers of every Debian kernel ntsync supports, on every architecture each suite has (suite
table, suites.py), one table (kernel, architecture, suite, result, warnings); `./check`
counts the rows ending ' ok +0'. The host's own architecture builds in the suite's kernel
root (roots.kroot: the kernel and headers installed); every other one is cross-built, as a
porter would, in the suite's cross root (roots.xroot: the cross compiler of the gcc that
built the kernel) against Debian's own header packages extracted into it
(roots.CrossHeaders). `kroot SUITE` prints a kernel root's path, `in-root SUITE -- CMD` runs
a command in it."""

import argparse
import re
from pathlib import Path

from . import arches, roots, suites
from .util import Failure, Usage, cache, require_root

# The build is silent (-s): everything the compiler, sparse or modpost says counts as a
# warning, except the BTF notice for header trees that lack vmlinux.
NOT_WARNINGS = re.compile(r"^Skipping BTF generation")


def row(krel, arch, name, result, warnings):
    return f"{krel:<30} {arch:<9} {name:<17} {result:<8} {warnings}"


def compiler_problem(root, kdir, suite):
    """Why the headers' kernel was not built with the suite row's gcc (CONFIG_CC_VERSION_TEXT
    of their .config), or None: the row's gcc is the one the W=1 build must use."""
    try:
        text = Path(str(root) + kdir, ".config").read_text(errors="replace")
    except OSError as e:
        return f"{kdir}/.config: {e}"
    m = re.search(r'^CONFIG_CC_VERSION_TEXT="(.*)"$', text, re.M)
    if not m:
        return f"{kdir}/.config has no CONFIG_CC_VERSION_TEXT"
    v = re.search(r"\) (\d+)\.\d+", m.group(1))
    if not v or int(v.group(1)) != suite.gcc:
        return f"the kernel was built by {m.group(1)}; the suite table says gcc-{suite.gcc}"
    return None


def build_one(name, sparse=False, arch=None, cross=None):
    """(kernel release, ok, warnings, log path, note) of the W=1 build against suite NAME's
    headers for ARCH (default: the host's): natively in its kernel root, or (CROSS, the
    suite's CrossHeaders) cross-built in its cross root."""
    s = suites.get(name, quiet=True)
    arch = arch or roots.native_arch()
    flags = ["W=1"] + (["C=2"] if sparse else [])
    note = ""
    if cross is None:
        root = roots.kroot(name)
        kdir = roots.headers_dir(root)
        logf = cache() / "kroots" / "logs" / f"{name}-build.log"
        dest = "/tmp/ntsync-kbuild"
    else:
        root = cross.root
        kdir, note = cross.get(arch)
        logf = cache() / "kroots" / "logs" / f"{name}-{arch.name}-build.log"
        dest = f"/tmp/ntsync-kbuild-{arch.name}"
        flags += arch.cross_make_flags()
    krel = kdir.rsplit("linux-headers-", 1)[1]
    ok, _ = roots.build_module(root, kdir, logf, dest=dest, flags=flags)
    lines = [line for line in logf.read_text(errors="replace").splitlines()
             if line.strip() and not NOT_WARNINGS.match(line)]
    wrong_gcc = compiler_problem(root, kdir, s)
    if wrong_gcc:
        lines.append(wrong_gcc)
    return krel, ok, lines, logf, note


def plan(names, only_arches):
    """(suite, architecture row) of every build, in suite-table then architecture-table order."""
    out = []
    for name in names:
        s = suites.SUITES[name]
        for a in arches.ARCHES:
            if a in s.architectures and (not only_arches or a in only_arches):
                out.append((name, arches.get(a)))
    return out


def main(argv):
    ap = argparse.ArgumentParser(prog="ntsync-vm kbuild",
                                 description="build module/ with W=1 against every supported Debian kernel's "
                                 "headers, on every architecture of each suite (the host's natively, the others "
                                 "cross-built against Debian's header packages; roots cached in "
                                 "$NTSYNC_CACHE/kroots); exit 0 when every build is clean")
    ap.add_argument("--sparse", action="store_true", help="also run sparse (make C=2)")
    ap.add_argument("--arch", action="append", default=[], choices=list(arches.ARCHES),
                    help="only this architecture (repeatable; default every architecture of each suite)")
    ap.add_argument("--native-only", action="store_true",
                    help="only the host's architecture (no cross root is built)")
    ap.add_argument("--cached-cross", action="store_true",
                    help="cross-build only for the suites whose cross root is cached and fresh; each build "
                    "left out is a line '    skipped: ARCH SUITE ...' (./check: a cold cross root costs minutes)")
    ap.add_argument("suite", nargs="*", help=f"suites (default all): {suites.describe()}")
    o = ap.parse_args(argv)
    names = [suites.resolve(s) for s in o.suite] or suites.names()
    native = roots.native_arch()
    only = set(o.arch) | ({native.name} if o.native_only else set())
    builds = plan(names, only)
    if not builds:
        raise Usage(f"no suite of {', '.join(names)} has {', '.join(sorted(only))}")
    require_root("kbuild")
    print(row("kernel", "arch", "target", "result", "warnings"), flush=True)
    rc, crosses, skipped = 0, {}, []
    for name, arch in builds:
        cross = None
        if arch.name != native.name:
            if name not in crosses:
                if o.cached_cross and roots.stale(roots.xroot_dir(name) / ".complete"):
                    crosses[name] = None
                else:
                    try:
                        crosses[name] = roots.CrossHeaders(name, roots.xroot(name))
                    except Failure as e:
                        crosses[name] = e
            cross = crosses[name]
            if cross is None:
                skipped.append((name, arch))
                continue
        krel = f"{suites.SUITES[name].series}-?-{arch.headers_flavour}"
        try:
            if isinstance(cross, Failure):
                raise cross
            krel, ok, warnings, logf, note = build_one(name, o.sparse, arch, cross)
        except Failure as e:
            rc = 1
            print(row(krel, arch.name, name, "FAILED", "-"), flush=True)
            for line in str(e).splitlines()[:20]:
                print("    " + line, flush=True)
            continue
        if not ok or warnings:
            rc = 1
        print(row(krel, arch.name, name, "ok" if ok else "FAILED", len(warnings)), flush=True)
        if note:
            print(f"    note: {note}", flush=True)
        for line in warnings[:20]:
            print("    " + line, flush=True)
    # --cached-cross: the builds left out, one line each (./check counts them as skipped)
    for name, arch in skipped:
        print(f"    skipped: {arch.name} {name} (no fresh cross root; `vm/ntsync-vm kbuild {name}` builds it)",
              flush=True)
    return rc


def kroot_main(argv):
    ap = argparse.ArgumentParser(prog="ntsync-vm kroot",
                                 description="print the path of SUITE's kernel root, building it when missing")
    ap.add_argument("--cross", action="store_true",
                    help="the suite's cross root instead (kbuild's other architectures)")
    ap.add_argument("suite", help=suites.describe())
    o = ap.parse_args(argv)
    name = suites.resolve(o.suite)
    print(roots.xroot(name) if o.cross else roots.kroot(name))
    return 0


def in_root_main(argv):
    if "--" not in argv:
        raise Usage("usage: ntsync-vm in-root SUITE -- CMD [ARGS...]")
    i = argv.index("--")
    if i != 1 or not argv[i + 1:]:
        raise Usage("usage: ntsync-vm in-root SUITE -- CMD [ARGS...]")
    root = roots.kroot(suites.resolve(argv[0]))
    return roots.in_root(root, argv[i + 1:]).returncode
