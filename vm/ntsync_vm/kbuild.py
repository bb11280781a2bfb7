"""`ntsync-vm kbuild [--sparse] [SUITE...]`: module/ built with W=1 against the headers of
every Debian kernel ntsync supports, one table (kernel, suite, result, warnings); `./check`
counts the rows ending ' ok +0'. `kroot SUITE` prints a kernel root's path, `in-root SUITE --
CMD` runs a command in it."""

import argparse

from . import roots, suites
from .util import Usage, cache, require_root


def row(krel, name, result, warnings):
    return f"{krel:<18} {name:<12} {result:<8} {warnings}"


def build_one(name, sparse=False):
    """(kernel release, ok, warnings, log path) of the W=1 build against suite NAME's headers."""
    root = roots.kroot(name)
    kdir = roots.headers_dir(root)
    krel = kdir.rsplit("linux-headers-", 1)[1]
    logf = cache() / "kroots" / "logs" / f"{name}-build.log"
    ok, _ = roots.build_module(root, kdir, logf, dest="/tmp/ntsync-kbuild", flags=["W=1"] + (["C=2"] if sparse else []))
    # The build is silent (-s): everything the compiler, sparse or modpost says counts as a
    # warning, except the BTF notice for header trees that lack vmlinux.
    lines = [line for line in logf.read_text(errors="replace").splitlines()
             if line.strip() and not line.startswith("Skipping BTF generation")]
    return krel, ok, lines, logf


def main(argv):
    ap = argparse.ArgumentParser(prog="ntsync-vm kbuild",
                                 description="build module/ with W=1 against every supported Debian kernel's "
                                 "headers (roots cached in $NTSYNC_CACHE/kroots); exit 0 when every build is clean")
    ap.add_argument("--sparse", action="store_true", help="also run sparse (make C=2)")
    ap.add_argument("suite", nargs="*", help=f"suites (default all): {suites.describe()}")
    o = ap.parse_args(argv)
    names = [suites.resolve(s) for s in o.suite] or suites.names()
    require_root("kbuild")
    print(row("kernel", "target", "result", "warnings"), flush=True)
    rc = 0
    for name in names:
        krel, ok, warnings, logf = build_one(name, o.sparse)
        if not ok or warnings:
            rc = 1
        print(row(krel, name, "ok" if ok else "FAILED", len(warnings)), flush=True)
        for line in warnings[:20]:
            print("    " + line, flush=True)
    return rc


def kroot_main(argv):
    ap = argparse.ArgumentParser(prog="ntsync-vm kroot",
                                 description="print the path of SUITE's kernel root, building it when missing")
    ap.add_argument("suite", help=suites.describe())
    o = ap.parse_args(argv)
    print(roots.kroot(suites.resolve(o.suite)))
    return 0


def in_root_main(argv):
    if "--" not in argv:
        raise Usage("usage: ntsync-vm in-root SUITE -- CMD [ARGS...]")
    i = argv.index("--")
    if i != 1 or not argv[i + 1:]:
        raise Usage("usage: ntsync-vm in-root SUITE -- CMD [ARGS...]")
    root = roots.kroot(suites.resolve(argv[0]))
    return roots.in_root(root, argv[i + 1:]).returncode
