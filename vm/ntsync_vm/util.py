"""What every module needs: paths, logging, failures, host tools."""

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VM_DIR = REPO / "vm"
T0 = time.monotonic()
MIRROR = os.environ.get("NTSYNC_MIRROR", "http://deb.debian.org/debian")
SECURITY = "http://deb.debian.org/debian-security"


def cache():
    return Path(os.environ.get("NTSYNC_CACHE", "/var/cache/ntsync"))


def elapsed():
    return time.monotonic() - T0


def log(msg):
    print(f"[{elapsed():6.1f}s] {msg}", flush=True)


def say(msg):
    """A line on stderr, for the subcommands whose stdout is a table or a path."""
    print(f"ntsync-vm: {msg}", file=sys.stderr, flush=True)


def warn(msg):
    print(f"ntsync-vm: warning: {msg}", file=sys.stderr, flush=True)


class Failure(Exception):
    """A run failed for a reason to print (exit code 1 = result, 2 = usage, 3 = infrastructure)."""

    def __init__(self, msg, code=3):
        super().__init__(msg)
        self.code = code


class Usage(Failure):
    """Bad usage, or something the user must provide first (exit code 2)."""

    def __init__(self, msg):
        super().__init__(msg, 2)


class Failed(Failure):
    """The thing under test failed (exit code 1): a module that does not build, a verdict."""

    def __init__(self, msg):
        super().__init__(msg, 1)


def fmt_secs(s):
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def repo_version():
    return (REPO / "VERSION").read_text().strip()


def tail_text(path, n=40):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join("  | " + line for line in lines[-n:])


HOST_TOOLS = {
    "mmdebstrap": "mmdebstrap",
    "qemu-img": "qemu-utils",
    "cloud-localds": "cloud-image-utils",
    "mkfs.ext4": "e2fsprogs",
    "dpkg-buildpackage": "dpkg-dev",
    "busybox": "busybox-static",  # every initramfs
    "unshare": "util-linux",
    "meson": "meson",
    "ninja": "ninja-build",
    "xz": "xz-utils",
    "zstd": "zstd",
    "debugfs": "e2fsprogs",
    "mkfs.vfat": "dosfstools",  # the EFI system partition of a Secure Boot image
    "mcopy": "mtools",
    "gpg": "gnupg",  # the apt repository's signature (repo.py)
    "apt-ftparchive": "apt-utils",
    "dpkg-deb": "dpkg",
    # Debian's own tools on our packages (debtools.py)
    "piuparts": "piuparts",
    "capsh": "libcap2-bin",  # piuparts runs without CAP_SYS_MODULE: no chroot loads a module here
    "autopkgtest": "autopkgtest",
    "autopkgtest-virt-qemu": "autopkgtest",
    "reprotest": "reprotest",
    "faketime": "faketime",
    "diffoscope": "diffoscope-minimal",
}


def ensure_host_tools(names):
    """Install with apt-get the packages of the host programs NAMES that are missing (a QEMU
    binary: the package the architecture table names for it)."""
    from . import arches
    known = dict(HOST_TOOLS, **{a.qemu.binary: a.qemu.package for a in arches.ARCHES.values() if a.qemu},
                 **{a.qemu_user: "qemu-user-static" for a in arches.ARCHES.values() if a.qemu_user})
    missing = sorted({known[n] for n in names if shutil.which(n) is None})
    # mmdebstrap needs the archive keyring to verify trixie/bookworm.
    if "mmdebstrap" in names and not Path("/usr/share/keyrings/debian-archive-keyring.gpg").exists():
        missing.append("debian-archive-keyring")
    if not missing:
        return
    if os.geteuid() != 0:
        raise Usage(f"missing host packages: {' '.join(missing)}; install them with "
                    f"'sudo apt-get install {' '.join(missing)}' or run ntsync-vm as root")
    say(f"installing host dependencies with apt-get: {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    out = {"stdout": subprocess.DEVNULL}
    r = subprocess.run(["apt-get", "update", "-qq"], env=env, **out)
    r = r.returncode or subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
                                       env=env, **out).returncode
    if r:
        raise Failure(f"apt-get install {' '.join(missing)} failed; install them by hand and rerun")


def require_root(what):
    if os.geteuid() != 0:
        raise Usage(f"{what} needs root (mmdebstrap, chroot and mkfs run as root here); run it with sudo")


def source_files(prefixes=None):
    """Files of the source tree as git sees them (tracked plus new, minus ignored)."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        files = sorted({f for f in out.decode().split("\0") if f and (REPO / f).is_file()})
    except (subprocess.CalledProcessError, FileNotFoundError):
        files = sorted(str(p.relative_to(REPO)) for p in REPO.rglob("*")
                       if p.is_file() and ".git" not in p.parts)
    if prefixes:
        files = [f for f in files if f.startswith(tuple(prefixes))]
    return files


def tree_hash(files, extra=""):
    h = hashlib.sha256(extra.encode())
    for f in files:
        h.update(f.encode() + b"\0")
        h.update(hashlib.sha256((REPO / f).read_bytes()).digest())
    return h.hexdigest()[:12]
