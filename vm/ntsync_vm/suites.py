"""THE suite table: every Debian suite ntsync supports, as data.

Every tool reads it: the kernel-header roots of the W=1 matrix (roots.kroot), the initramfs
boots (boot.py), the cloud guest images (image.py), the lifecycle. A kernel from 6.14 on has
mainline's complete driver in tree (KERNEL_WITH_DRIVER); before it ours is built.
"""

from .util import MIRROR, SECURITY, Usage, warn

# The first mainline kernel with the complete ntsync driver (6.14): before it, DKMS builds ours.
KERNEL_WITH_DRIVER = (6, 14)


def series_tuple(series):
    return tuple(int(x) for x in series.split(".")[:2])


def has_in_tree_driver(series):
    """The 6.1-6.13 rule, in one place: a kernel series from 6.14 on has mainline's driver."""
    return series_tuple(series) >= KERNEL_WITH_DRIVER


def _sources(release, *extra):
    return [f"deb {MIRROR} {release} main", f"deb {MIRROR} {release}-updates main",
            f"deb {SECURITY} {release}-security main", *extra]


_CLOUD = ["linux-image-cloud-amd64", "linux-headers-cloud-amd64"]
_BPO = ["linux-image-cloud-amd64/trixie-backports", "linux-headers-cloud-amd64/trixie-backports",
        # linux-base must come from backports too, or apt cannot install the 7.x kernel.
        "linux-base/trixie-backports"]

# name: release, apt sources, kernel packages, kernel series, aliases, whether cloud guest
# images are offered (sid moves daily: headers and the initramfs boots only).
SUITES = {
    "bookworm": {"release": "bookworm", "series": "6.1", "sources": _sources("bookworm"),
                 "kernel_packages": _CLOUD, "aliases": [], "image": True},
    "trixie": {"release": "trixie", "series": "6.12", "sources": _sources("trixie"),
               "kernel_packages": _CLOUD, "aliases": [], "image": True},
    "sid": {"release": "sid", "series": "7.2", "sources": [f"deb {MIRROR} sid main"],
            "kernel_packages": _CLOUD, "aliases": ["unstable"], "image": False},
    "trixie-backports": {"release": "trixie", "series": "7.3",
                         "sources": _sources("trixie", f"deb {MIRROR} trixie-backports main"),
                         "kernel_packages": _BPO, "aliases": ["trixie-7x"], "image": True},
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


def describe():
    return ", ".join(f"{n} ({s['series']})" for n, s in SUITES.items())
