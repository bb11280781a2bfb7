"""THE suite table: every Debian suite ntsync supports, as data.

Every tool reads it: the kernel-header roots of the W=1 matrix (roots.kroot, kbuild), the
initramfs boots (boot.py), the cloud guest images (image.py), the lifecycle, the matrix,
./check's guest list and tests/wine-gate-check's roots (`ntsync-vm suites --job JOB`), and
the help texts (describe()). Adding a Debian suite is one row in SUITES.

The kernel range has one source, dkms.conf's BUILD_EXCLUSIVE_KERNEL (the regular expression
DKMS itself obeys): a kernel it matches gets ours built; from the first series after it
(kernel_with_driver(), 6.14) mainline's complete driver is in tree.
"""

import functools
import re
from dataclasses import dataclass

from . import arches, jobs
from .util import MIRROR, REPO, SECURITY, Failure, Usage, warn

DKMS_CONF = REPO / "dkms.conf"


def dkms_range(path=DKMS_CONF):
    """The compiled BUILD_EXCLUSIVE_KERNEL of dkms.conf."""
    try:
        m = re.search(r'^BUILD_EXCLUSIVE_KERNEL="(.*)"$', path.read_text(), re.M)
    except OSError as e:
        raise Failure(f"{path}: {e}; it states the kernels ntsync is built for")
    if not m:
        raise Failure(f"{path}: no BUILD_EXCLUSIVE_KERNEL=\"REGEX\" line; it states the kernels ntsync is built for")
    return re.compile(m.group(1))


def series_tuple(series):
    return tuple(int(x) for x in series.split(".")[:2])


def builds_ours(release, rx=None):
    """Whether DKMS builds ours for kernel RELEASE (or series): dkms.conf says it."""
    return bool((rx or dkms_range()).search(release))


def first_in_tree(rx=None):
    """The first series after dkms.conf's range: (6, 14)."""
    rx = rx or dkms_range()
    ours = [(major, minor) for major in (6, 7) for minor in range(40) if rx.search(f"{major}.{minor}.0")]
    if not ours:
        raise Failure(f"{DKMS_CONF}: BUILD_EXCLUSIVE_KERNEL matches no 6.x or 7.x kernel")
    major, minor = max(ours)
    return major, minor + 1


@functools.cache
def kernel_with_driver():
    """The first series with mainline's complete driver, from dkms.conf (read on first use)."""
    return first_in_tree()


def has_in_tree_driver(series):
    """From kernel_with_driver() on a kernel series has mainline's driver."""
    return series_tuple(series) >= kernel_with_driver()


def _sources(release, *extra):
    return (f"deb {MIRROR} {release} main", f"deb {MIRROR} {release}-updates main",
            f"deb {SECURITY} {release}-security main", *extra)


@dataclass(frozen=True)
class Suite:
    """A row of the suite table. NAME: release, apt sources, the kernel series, where its
    kernel comes from (PIN: "/trixie-backports" and the packages that must come with it),
    the gcc that built that kernel (DKMS builds with it), the architectures it has, aliases,
    whether cloud guest images are offered (sid moves daily: headers and the initramfs
    boots only), and CHECK: the jobs of the job table ./check runs on it."""
    name: str
    release: str
    series: str
    sources: tuple
    gcc: int
    architectures: tuple = (arches.DEFAULT,)
    pin: str = ""
    pinned_too: tuple = ()
    aliases: tuple = ()
    image: bool = True
    check: tuple = ()

    def kernel_packages(self, arch=None, flavour=None):
        """The kernel and its headers for ARCH (a row of arches.py; default the first), of
        FLAVOUR when given (else the architecture's guest flavour)."""
        a = arch or arches.get(self.architectures[0])
        return a.kernel_packages(self.pin, flavour) + list(self.pinned_too)

    @property
    def in_tree(self):
        """Whether the kernel has mainline's driver (from kernel_with_driver() on)."""
        return has_in_tree_driver(self.series)

    @property
    def kernel(self):
        """The kernel as the tables say it: '6.12', '7.3 (trixie-backports)'."""
        return self.series + (f" ({self.pin.lstrip('/')})" if self.pin else "")


# The architectures of each suite are the ones whose kernel headers the archive has (apt,
# every Packages index of the suite); gcc is the one the kernel was built with: the header
# package's dependency (gcc-N, gcc-N-for-host, linux-compiler-gcc-N-*) and its .config's
# CONFIG_CC_VERSION_TEXT agree on every architecture.
SUITES = {s.name: s for s in (
    Suite("bookworm", "bookworm", "6.1", _sources("bookworm"), gcc=12,
          architectures=("amd64", "arm64", "armhf", "armel", "i386", "ppc64el", "s390x", "mips64el"),
          check=("smoke", "test", "wine-gate")),
    # arm64-16k: Debian's 16 KiB-page arm64 kernel (arches.py), from trixie on; bookworm's is
    # 6.12 (bookworm-security's linux-6.12), not the suite's 6.1
    Suite("trixie", "trixie", "6.12", _sources("trixie"), gcc=14,
          architectures=("amd64", "arm64", "arm64-16k", "armhf", "armel", "ppc64el", "riscv64", "s390x"),
          check=("smoke", "test", "secure-boot", "wine-gate")),
    # sid has no armel (the port left unstable) and no i386 kernel; 7.2 is built with gcc-16
    Suite("sid", "sid", "7.2", (f"deb {MIRROR} sid main",), gcc=16,
          architectures=("amd64", "arm64", "arm64-16k", "armhf", "ppc64el", "riscv64", "s390x"),
          aliases=("unstable",), image=False),
    # linux-base must come from backports too, or apt cannot install the 7.x kernel.
    # trixie-backports has no 7.x kernel for armel.
    Suite("trixie-backports", "trixie", "7.3", _sources("trixie", f"deb {MIRROR} trixie-backports main"), gcc=14,
          architectures=("amd64", "arm64", "arm64-16k", "armhf", "ppc64el", "riscv64", "s390x"),
          pin="/trixie-backports", pinned_too=("linux-base/trixie-backports",), aliases=("trixie-7x",)),
)}

DEFAULT = "trixie"
DEPRECATED = {"trixie-7x": "trixie-backports"}


def names(image_only=False):
    return [n for n, s in SUITES.items() if s.image or not image_only]


def accepted(image_only=False):
    """Every name the command line accepts, aliases included."""
    out = []
    for n in names(image_only):
        out += [n, *SUITES[n].aliases]
    return out


def resolve(name, image_only=False, quiet=False):
    """The canonical name of suite NAME (an alias is accepted; trixie-7x with a note)."""
    for n, s in SUITES.items():
        if name == n or name in s.aliases:
            if image_only and not s.image:
                raise Usage(f"suite {n}: no cloud guest image for it (use one of "
                            f"{', '.join(names(True))}); the initramfs boots and kbuild take it")
            if name in DEPRECATED and not quiet:
                warn(f"suite name '{name}' is deprecated; it is '{DEPRECATED[name]}' now")
            return n
    raise Usage(f"unknown suite '{name}': use one of {', '.join(names(image_only))}")


def get(name, **kw):
    return SUITES[resolve(name, **kw)]


def in_tree_names(image_only=True):
    return [n for n in names(image_only) if SUITES[n].in_tree]


def bench_default():
    """bench compares the in-tree driver with ours: the first suite with an image that has it."""
    return in_tree_names()[0]


def default_for(job):
    """The suite (or, for ROLE debug, the debug kernel's name) JOB boots by default."""
    role = job.default
    if role == "default":
        return DEFAULT
    if role == "in-tree":
        return bench_default()
    return role


def for_job(job):
    """The suites ./check runs JOB on, in table order."""
    if job not in jobs.checked():
        raise Usage(f"unknown job '{job}': use one of {', '.join(jobs.checked())}")
    return [n for n, s in SUITES.items() if job in s.check]


def cross_checks(job):
    """([(suite, architecture)], [(suite, architecture, why skipped)]) of the initramfs boots
    of JOB ./check runs on architectures other than the host's (their rows' check, on the
    suites ./check runs JOB on that have them): only where the suite's cross root is cached
    and fresh; the others are skipped, with why."""
    from . import roots
    native = roots.native_arch().name
    run, skipped = [], []
    for n in for_job(job):
        for a in SUITES[n].architectures:
            arch = arches.get(a)
            if a == native or job not in arch.check or arches.why_no_guests(arch):
                continue
            why = roots.stale(roots.xroot_dir(n) / ".complete")
            if why:
                skipped.append((n, a, f"the {n} cross root is {why} (`vm/ntsync-vm kbuild {n}` builds it)"))
            else:
                run.append((n, a))
    return run, skipped


def matrix_plan(arch=arches.DEFAULT):
    """(suite, driver) of `ntsync-vm matrix`'s cloud rows of ARCH: every suite with an image
    that has ARCH, ours; and the kernel's own driver where the kernel has it."""
    have = [n for n in names(image_only=True) if arch in SUITES[n].architectures]
    return [(n, "ours") for n in have] + [(n, "in-tree") for n in have if SUITES[n].in_tree]


def arch_plan(arch_names, only=None):
    """(architecture, suite, driver) of the matrix's initramfs rows: each of ARCH_NAMES (rows of
    the architecture table that boot initramfs guests) on every suite that has it (ONLY: those
    suites), with ours; the kernel's own driver too where that kernel has it."""
    plan = []
    for a in arch_names:
        for n in names():
            if a in SUITES[n].architectures and (not only or n in only):
                plan.append((a, n, "ours"))
                if SUITES[n].in_tree:
                    plan.append((a, n, "in-tree"))
    return plan


def describe(image_only=False):
    """'bookworm (6.1), trixie (6.12), ...' for help texts; old names said."""
    out = []
    for n in names(image_only):
        s = SUITES[n]
        old = [a for a in s.aliases if a in DEPRECATED]
        out.append(f"{n} ({s.series}{'; old name ' + ', '.join(old) if old else ''})")
    return ", ".join(out)


def main(argv):
    """`ntsync-vm suites [--job JOB] [--image]`: the suite names, one a line."""
    import argparse
    ap = argparse.ArgumentParser(prog="ntsync-vm suites", description="print the suites of the suite table "
                                 "(vm/ntsync_vm/suites.py), one a line")
    ap.add_argument("--job", choices=jobs.checked(), help="only the suites ./check runs JOB on")
    ap.add_argument("--image", action="store_true", help="only the suites with cloud guest images")
    ap.add_argument("--describe", action="store_true", help="one line with the kernel series")
    ap.add_argument("--cross", action="store_true",
                    help="with --job: 'SUITE ARCH' of the boots ./check runs on other architectures (their "
                    "rows' check), where the suite's cross root is cached; 'skipped SUITE ARCH: why' otherwise")
    o = ap.parse_args(argv)
    if o.cross:
        if not o.job:
            raise Usage("--cross needs --job")
        run, skipped = cross_checks(o.job)
        for n, a in run:
            print(f"{n} {a}")
        for n, a, why in skipped:
            print(f"skipped {n} {a}: {why}")
        return 0
    found = for_job(o.job) if o.job else names(o.image)
    if o.image:
        found = [n for n in found if SUITES[n].image]
    if o.describe:
        print(describe(o.image))
    else:
        print("\n".join(found))
    return 0
