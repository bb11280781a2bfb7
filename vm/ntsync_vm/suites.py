"""THE suite table: every Debian suite ntsync supports, as data.

Every tool reads it: the kernel-header roots of the W=1 matrix (roots.kroot, kbuild), the
initramfs boots (boot.py), the cloud guest images (image.py), the lifecycle, the matrix,
./check's guest list and tests/wine-gate-check's roots (`ntsync-vm suites --job JOB`), and
the help texts (describe()). Adding a Debian suite is one row in SUITES.

The kernel range has one source, dkms.conf's BUILD_EXCLUSIVE_KERNEL (the regular expression
DKMS itself obeys): a kernel it matches gets ours built; from the first series after it
(KERNEL_WITH_DRIVER, 6.14) mainline's complete driver is in tree.
"""

import re

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


KERNEL_WITH_DRIVER = first_in_tree()


def has_in_tree_driver(series):
    """From KERNEL_WITH_DRIVER on a kernel series has mainline's driver."""
    return series_tuple(series) >= KERNEL_WITH_DRIVER


def _sources(release, *extra):
    return [f"deb {MIRROR} {release} main", f"deb {MIRROR} {release}-updates main",
            f"deb {SECURITY} {release}-security main", *extra]


_CLOUD = ["linux-image-cloud-amd64", "linux-headers-cloud-amd64"]
_BPO = ["linux-image-cloud-amd64/trixie-backports", "linux-headers-cloud-amd64/trixie-backports",
        # linux-base must come from backports too, or apt cannot install the 7.x kernel.
        "linux-base/trixie-backports"]

# name: release, apt sources, kernel packages, kernel series, aliases, whether cloud guest
# images are offered (sid moves daily: headers and the initramfs boots only), and CHECK: what
# ./check runs on it (JOBS: smoke = the initramfs smoke boot, test = the cmocka suite in a
# cloud guest, secure-boot = the Secure Boot PC, wine-gate = Wine's header gate in its root).
SUITES = {
    "bookworm": {"release": "bookworm", "series": "6.1", "sources": _sources("bookworm"),
                 "kernel_packages": _CLOUD, "aliases": [], "image": True,
                 "check": ["smoke", "test", "wine-gate"]},
    "trixie": {"release": "trixie", "series": "6.12", "sources": _sources("trixie"),
               "kernel_packages": _CLOUD, "aliases": [], "image": True,
               "check": ["smoke", "test", "secure-boot", "wine-gate"]},
    "sid": {"release": "sid", "series": "7.2", "sources": [f"deb {MIRROR} sid main"],
            "kernel_packages": _CLOUD, "aliases": ["unstable"], "image": False, "check": []},
    "trixie-backports": {"release": "trixie", "series": "7.3",
                         "sources": _sources("trixie", f"deb {MIRROR} trixie-backports main"),
                         "kernel_packages": _BPO, "aliases": ["trixie-7x"], "image": True, "check": []},
}
for _name, _s in SUITES.items():
    _s["name"] = _name
    _s["in_tree"] = has_in_tree_driver(_s["series"])
    _s["kernel"] = _s["series"] + (" (trixie-backports)" if _name == "trixie-backports" else "")

DEFAULT = "trixie"
DEPRECATED = {"trixie-7x": "trixie-backports"}


def names(image_only=False):
    return [n for n, s in SUITES.items() if s["image"] or not image_only]


def accepted(image_only=False):
    """Every name the command line accepts, aliases included."""
    out = []
    for n in names(image_only):
        out += [n] + SUITES[n]["aliases"]
    return out


def resolve(name, image_only=False, quiet=False):
    """The canonical name of suite NAME (an alias is accepted; trixie-7x with a note)."""
    for n, s in SUITES.items():
        if name == n or name in s["aliases"]:
            if image_only and not s["image"]:
                raise Usage(f"suite {n}: no cloud guest image for it (use one of "
                            f"{', '.join(names(True))}); the initramfs boots and kbuild take it")
            if name in DEPRECATED and not quiet:
                warn(f"suite name '{name}' is deprecated; it is '{DEPRECATED[name]}' now")
            return n
    raise Usage(f"unknown suite '{name}': use one of {', '.join(names(image_only))}")


def get(name, **kw):
    return SUITES[resolve(name, **kw)]


CHECK_JOBS = ("smoke", "test", "secure-boot", "wine-gate")


def in_tree_names(image_only=True):
    return [n for n in names(image_only) if SUITES[n]["in_tree"]]


# bench compares the in-tree driver with ours: the first suite with an image that has it
BENCH_DEFAULT = in_tree_names()[0]


def for_job(job):
    """The suites ./check runs JOB on, in table order."""
    if job not in CHECK_JOBS:
        raise Usage(f"unknown job '{job}': use one of {', '.join(CHECK_JOBS)}")
    return [n for n, s in SUITES.items() if job in s["check"]]


def matrix_plan():
    """(suite, driver) of `ntsync-vm matrix`: every suite with an image, ours; and the kernel's
    own driver where the kernel has it."""
    plan = [(n, "ours") for n in names(image_only=True)]
    return plan + [(n, "in-tree") for n in names(image_only=True) if SUITES[n]["in_tree"]]


def describe(image_only=False):
    """'bookworm (6.1), trixie (6.12), ...' for help texts; old names said."""
    out = []
    for n in names(image_only):
        s = SUITES[n]
        old = [a for a in s["aliases"] if a in DEPRECATED]
        out.append(f"{n} ({s['series']}{'; old name ' + ', '.join(old) if old else ''})")
    return ", ".join(out)


def main(argv):
    """`ntsync-vm suites [--job JOB] [--image]`: the suite names, one a line."""
    import argparse
    ap = argparse.ArgumentParser(prog="ntsync-vm suites", description="print the suites of the suite table "
                                 "(vm/ntsync_vm/suites.py), one a line")
    ap.add_argument("--job", choices=CHECK_JOBS, help="only the suites ./check runs JOB on")
    ap.add_argument("--image", action="store_true", help="only the suites with cloud guest images")
    ap.add_argument("--describe", action="store_true", help="one line with the kernel series")
    o = ap.parse_args(argv)
    found = for_job(o.job) if o.job else names(o.image)
    if o.image:
        found = [n for n in found if SUITES[n]["image"]]
    if o.describe:
        print(describe(o.image))
    else:
        print("\n".join(found))
    return 0
