"""vm/ntsync-vm's command line: the cloud guest jobs (cloud.py) and the subcommands."""

import argparse
import signal
import sys
from pathlib import Path

from . import accel as accel_mod
from . import jobs, qemu, run, suites
from .util import Failure

BOOT_JOBS = "|".join(j.name for j in jobs.of_kind("initramfs", cli_only=True))
SUBCOMMANDS = f"""more subcommands (each has --help):
  kbuild [--sparse] [--arch A] [SUITE...]   module/ built with W=1 against each suite's kernel headers,
                                 every architecture of the suite (cross-built), one table
  kroot [--cross] SUITE          print the path of SUITE's kernel (or cross) root (built when missing)
  in-root SUITE -- CMD...        run CMD in SUITE's kernel root (chroot, private namespaces)
  boot [KERNEL] --job {BOOT_JOBS}   a kernel booted with an initramfs job
  build-kernel --flavour debug|kcsan|gcov         the debug kernels of boot --job fuzz, coverage's
  coverage [--no-mainline]       line and branch coverage of module/ntsync.c per test group (gcov kernel)
  lifecycle [--suite S]          the package's autopkgtests (debian/tests) in a cloud guest
  repo [--out DIR]               our packages as an apt repository signed by the (test) archive key
  piuparts [SUITE...]            piuparts: install/purge and upgrade from the previous version, chroots
  autopkgtest [--suite S]        debian/tests by autopkgtest with autopkgtest-virt-qemu (testbed image)
  reprotest [--quick]            two builds differing in path, time and umask give identical .debs
  wine --source DIR|TARBALL      a real Wine built against ntsync-uapi-dev in a trixie root, cached
  qemu --console F --timeout S -- QEMU-ARGS       QEMU with this host's accelerator (debugging)
  suites [--job JOB] [--image]   the suite table's names (JOB: what ./check runs on them)
suites: {suites.describe()}
"""


def qemu_main(argv):
    """`ntsync-vm qemu --console FILE --timeout S [--tcg-only] -- QEMU-ARGS`: a guest of raw
    QEMU arguments with the accelerator decided for this host (KVM falls back to TCG)."""
    ap = argparse.ArgumentParser(prog="ntsync-vm qemu", description="run QEMU with the accelerator "
                                 "decided for this host, falling back from KVM to TCG")
    ap.add_argument("--console", required=True, help="file that receives the serial console")
    ap.add_argument("--timeout", type=float, required=True, help="seconds; then QEMU is stopped, exit 124")
    ap.add_argument("--tcg-only", action="store_true", help="never KVM (runs that use -icount)")
    if "--" not in argv:
        ap.error("the QEMU arguments follow '--'")
    i = argv.index("--")
    o = ap.parse_args(argv[:i])
    qargs = argv[i + 1:]
    kernel = qargs[qargs.index("-kernel") + 1] if "-kernel" in qargs else None
    m = qemu.Machine(console=Path(o.console), name="ntsync-qemu", machine="", rng=False, kernel=None,
                     extra=qargs, smp=1, mem=256)
    # timeout(1) or a caller's kill: stop QEMU on the way out (the guest loop's finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    r = run.guest(m, run.Watch(o.timeout), tcg_only=o.tcg_only, kernels=[kernel] if kernel else [],
                  stderr_to_console=True, retry_crash=False)
    return 124 if r.stalled else r.rc


def accel_main(argv):
    ap = argparse.ArgumentParser(prog="ntsync-vm accel",
                                 description="print the QEMU accelerator guests use here: kvm or tcg")
    ap.add_argument("--why", action="store_true", help="also print the reason on stderr")
    ap.add_argument("--kernel", action="append", default=[], help="probe with this kernel first")
    o = ap.parse_args(argv)
    # the probe is a guest of the loop: it queues for the guest lock like any other
    accel, why = accel_mod.decide(o.kernel, say=lambda m: print(f"ntsync-vm: {m}", file=sys.stderr),
                                  probe=run.probe)
    print(accel)
    if o.why:
        print(f"ntsync-vm accel: {accel} ({why})", file=sys.stderr)
    return 0


def main(argv):
    sub = argv[0] if argv else ""
    try:
        if sub == "_customize":  # mmdebstrap's customize hook of an image build
            from .image import customize_root
            customize_root(Path(argv[1]), argv[2], argv[3])
            return 0
        if sub == "accel":
            return accel_main(argv[1:])
        if sub == "qemu":
            return qemu_main(argv[1:])
        if sub == "suites":
            return suites.main(argv[1:])
        if sub == "kbuild":
            from . import kbuild
            return kbuild.main(argv[1:])
        if sub == "kroot":
            from . import kbuild
            return kbuild.kroot_main(argv[1:])
        if sub == "in-root":
            from . import kbuild
            return kbuild.in_root_main(argv[1:])
        if sub == "boot":
            from . import boot
            return boot.main(argv[1:])
        if sub == "build-kernel":
            from . import kernel
            return kernel.main(argv[1:])
        if sub == "coverage":
            from . import coverage
            return coverage.main(argv[1:])
        if sub == "wine":
            from . import wine
            return wine.main(argv[1:])
        if sub == "lifecycle":
            from . import lifecycle
            return lifecycle.main(argv[1:])
        if sub in ("piuparts", "autopkgtest", "reprotest"):
            from . import debtools
            return debtools.main(sub, argv[1:])
        if sub == "repo":
            from . import repo
            return repo.main(argv[1:])
        from . import cloud
        return cloud.main(argv, SUBCOMMANDS)
    except ValueError as e:  # NTSYNC_ACCEL=bogus and the like
        print(f"ntsync-vm: {e}", file=sys.stderr, flush=True)
        return 2
    except Failure as e:
        print(f"ntsync-vm: {e}", file=sys.stderr, flush=True)
        return e.code
    except KeyboardInterrupt:
        print("ntsync-vm: interrupted", file=sys.stderr)
        return 130
