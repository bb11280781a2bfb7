#!/usr/bin/python3
"""ntsync-vm: Debian cloud guests under QEMU that install ntsync's packages and run its jobs.

Run `vm/ntsync-vm --help`.  Everything big lives under ${NTSYNC_CACHE:-/var/cache/ntsync}:
  images/   guest disk images (qcow2) plus the kernel and initrd taken out of them
  apt/      the .deb files mmdebstrap downloaded, reused by the next image build
  debs/     our packages, built with dpkg-buildpackage, keyed by the source tree's hash
  runs/     one folder per guest run: console.log, the seed, the results that came back
"""

import argparse
import fcntl
import hashlib
import inspect
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accel as accel_mod  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
VM_DIR = REPO / "vm"
CACHE = Path(os.environ.get("NTSYNC_CACHE", "/var/cache/ntsync"))
T0 = time.monotonic()

MIRROR = "http://deb.debian.org/debian"
SECURITY = "http://deb.debian.org/debian-security"

# Bump when the way images are made changes, so cached images get rebuilt.
IMAGE_RECIPE = "5"  # 5: MBR disk with its own GRUB, like genericcloud

# Packages of every image.  Nothing here waits for a network at boot:
# no ifupdown/networkd config is enabled, cloud-init has network config disabled.
BASE_PACKAGES = [
    "systemd-sysv", "udev", "kmod", "initramfs-tools", "dbus", "procps", "iproute2",
    "netbase", "e2fsprogs", "util-linux", "less", "ca-certificates",
    "cloud-init", "cloud-guest-utils",
    "dkms", "gcc", "make", "libc6-dev", "pkgconf",
    "libcmocka0",
    # The image's own bootloader (BIOS GRUB in the MBR gap), as on Debian's genericcloud.
    "grub-pc-bin",
]

SUITES = {
    "bookworm": {
        "release": "bookworm",
        "kernel": "6.1",
        "sources": [f"deb {MIRROR} bookworm main", f"deb {MIRROR} bookworm-updates main",
                    f"deb {SECURITY} bookworm-security main"],
        "kernel_packages": ["linux-image-cloud-amd64", "linux-headers-cloud-amd64"],
        "in_tree": False,
    },
    "trixie": {
        "release": "trixie",
        "kernel": "6.12",
        "sources": [f"deb {MIRROR} trixie main", f"deb {MIRROR} trixie-updates main",
                    f"deb {SECURITY} trixie-security main"],
        "kernel_packages": ["linux-image-cloud-amd64", "linux-headers-cloud-amd64"],
        "in_tree": False,
    },
    "trixie-7x": {
        "release": "trixie",
        "kernel": "7.x (trixie-backports)",
        "sources": [f"deb {MIRROR} trixie main", f"deb {MIRROR} trixie-updates main",
                    f"deb {SECURITY} trixie-security main", f"deb {MIRROR} trixie-backports main"],
        # linux-base must come from backports too, or apt cannot install the 7.x kernel.
        "kernel_packages": ["linux-image-cloud-amd64/trixie-backports",
                            "linux-headers-cloud-amd64/trixie-backports",
                            "linux-base/trixie-backports"],
        "in_tree": True,
    },
}
DEFAULT_SUITE = "trixie"

# Kernel log lines that fail a run: report headers, not words.  A debug kernel prints
# "RCU lockdep checking is enabled" or "KernelAddressSanitizer initialized" at boot; those pass.
GATE_PATTERNS = [
    (r"\bBUG: ", "kernel BUG/KASAN/lockup report"),
    (r"\bWARNING: ", "kernel WARNING (includes lockdep reports)"),
    (r"\bOops\b", "kernel Oops"),
    (r"general protection fault", "general protection fault"),
    (r"Kernel panic", "kernel panic"),
    (r"possible circular locking dependency", "lockdep report"),
    (r"possible recursive locking detected", "lockdep report"),
    (r"inconsistent lock state", "lockdep report"),
    (r"suspicious RCU usage", "lockdep/RCU report"),
    (r"INFO: trying to register non-static key", "lockdep report"),
    (r"\bKASAN: ", "KASAN report"),
    (r"\bUBSAN: ", "UBSAN report"),
    (r"kmemleak: \d+ new suspected memory leak", "kmemleak report"),
    (r"unreferenced object 0x", "kmemleak report"),
    (r"refcount_t: ", "refcount_t warning"),
    (r"list_(add|del) corruption", "list corruption"),
    (r"INFO: task .* blocked for more than", "hung task"),
    (r"rcu: INFO: .* self-detected stall|rcu_.*detected stalls", "RCU stall"),
]
TAINT_LETTERS = "PFSRMBUDAWCIOELKXTN"
TAINT_ALLOWED = (1 << 12) | (1 << 13)  # O: out-of-tree module, E: unsigned module

STAGE_TIMEOUTS = {  # seconds under TCG; NTSYNC_TIMEOUT_SCALE multiplies them
    "boot": 300,
    "install": 900,
    "install-net": 2400,
    "driver": 600,
    "job": 1200,
    "unload": 120,
    "collect": 240,
}


# ----------------------------------------------------------------------------- helpers

def elapsed():
    return time.monotonic() - T0


def log(msg):
    print(f"[{elapsed():6.1f}s] {msg}", flush=True)


def warn(msg):
    print(f"ntsync-vm: warning: {msg}", file=sys.stderr, flush=True)


class Failure(Exception):
    """A run failed for a reason to print (exit code 1 = result, 3 = infrastructure)."""

    def __init__(self, msg, code=3):
        super().__init__(msg)
        self.code = code


def die(msg, code=2):
    print(f"ntsync-vm: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def fmt_secs(s):
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def timeout_for(stage, override=None):
    scale = float(os.environ.get("NTSYNC_TIMEOUT_SCALE", "1"))
    return (override or STAGE_TIMEOUTS[stage]) * scale


def repo_version():
    return (REPO / "VERSION").read_text().strip()


# ----------------------------------------------------------------------------- host deps

HOST_TOOLS = {
    "mmdebstrap": "mmdebstrap",
    "qemu-system-x86_64": "qemu-system-x86",
    "qemu-img": "qemu-utils",
    "cloud-localds": "cloud-image-utils",
    "mkfs.ext4": "e2fsprogs",
    "dpkg-buildpackage": "dpkg-dev",
    "busybox": "busybox-static",  # the KVM probe's initramfs
}


def ensure_host_tools(names):
    missing = sorted({HOST_TOOLS[n] for n in names if shutil.which(n) is None})
    # mmdebstrap needs the archive keyring to verify trixie/bookworm.
    if "mmdebstrap" in names and not Path("/usr/share/keyrings/debian-archive-keyring.gpg").exists():
        missing.append("debian-archive-keyring")
    if not missing:
        return
    if os.geteuid() != 0:
        die(f"missing host packages: {' '.join(missing)}; install them with "
            f"'sudo apt-get install {' '.join(missing)}' or run ntsync-vm as root")
    log(f"installing host dependencies with apt-get: {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-qq"], env=env)
    run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env)


def require_root(what):
    if os.geteuid() != 0:
        die(f"{what} needs root (mmdebstrap and mkfs run as root here); run it with sudo")


# ----------------------------------------------------------------------------- images

def image_key(suite, extra_debs):
    spec = SUITES[suite]
    h = hashlib.sha256()
    h.update(IMAGE_RECIPE.encode())
    for part in (spec["sources"], spec["kernel_packages"], BASE_PACKAGES):
        h.update(("\n".join(part) + "\n--\n").encode())
    h.update(json.dumps([GUEST_FILES, MASKED_UNITS], sort_keys=True).encode())
    h.update(inspect.getsource(customize_root).encode())
    for deb in extra_debs:
        h.update(deb.name.encode())
        h.update(str(deb.stat().st_size).encode())
    return h.hexdigest()[:12]


def image_paths(suite, key):
    d = CACHE / "images" / f"{suite}-{key}"
    return {"dir": d, "disk": d / "disk.qcow2", "kernel": d / "vmlinuz", "initrd": d / "initrd.img",
            "info": d / "image.json"}


def image_is_fresh(paths):
    if not all(paths[k].exists() for k in ("disk", "kernel", "initrd", "info")):
        return False, "not built yet"
    max_days = float(os.environ.get("NTSYNC_IMAGE_MAX_AGE_DAYS", "14"))
    age = (time.time() - paths["info"].stat().st_mtime) / 86400
    if age > max_days:
        return False, f"{age:.0f} days old (NTSYNC_IMAGE_MAX_AGE_DAYS={max_days:g})"
    return True, ""


def find_image(suite, kernel_debs_dir=None, rebuild=False):
    extra = sorted(Path(kernel_debs_dir).glob("*.deb")) if kernel_debs_dir else []
    if kernel_debs_dir and not extra:
        die(f"--kernel-debs {kernel_debs_dir}: no .deb files there; point it at a folder of "
            "linux-image-*.deb (and linux-headers-*.deb) files")
    key = image_key(suite, extra)
    paths = image_paths(suite, key)
    fresh, why = image_is_fresh(paths)
    if not (fresh and not rebuild):
        # One build per suite at a time; whoever waited uses the image just built.
        with locked(CACHE / "images" / f".{suite}.lock", f"another ntsync-vm building the {suite} image"):
            fresh2, why = image_is_fresh(paths)
            if not (fresh2 and (not rebuild or not fresh)):
                log(f"image {suite}: {'rebuild requested' if rebuild else why}; building")
                return paths, build_image(suite, paths, extra)
    info = json.loads(paths["info"].read_text())
    log(f"image {suite}: cached {paths['disk']} (kernel {info.get('kernel_release')})")
    return paths, info


class locked:
    """An exclusive flock on path; says whom it waits for."""

    def __init__(self, path, what):
        self.path, self.what = Path(path), what

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(self.path, "a+")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.f.seek(0)
            holder = self.f.read().strip()
            log(f"waiting for {self.what} ({holder or 'lock ' + str(self.path)})")
            t = time.monotonic()
            fcntl.flock(self.f, fcntl.LOCK_EX)
            log(f"waited {fmt_secs(time.monotonic() - t)}")
        self.f.seek(0)
        self.f.truncate()
        self.f.write(f"pid {os.getpid()}: {' '.join(sys.argv[1:])}\n")
        self.f.flush()
        return self

    def __exit__(self, *exc):
        self.f.truncate(0)
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


GUEST_FILES = {
    "etc/fstab": "LABEL=ntsync-root / ext4 rw,discard,errors=remount-ro 0 1\n",
    "etc/hosts": "127.0.0.1 localhost\n127.0.1.1 ntsync-guest\n::1 localhost ip6-localhost ip6-loopback\n",
    "etc/hostname": "ntsync-guest\n",
    # NoCloud only: no probing of cloud metadata services, and no network wait.
    "etc/cloud/cloud.cfg.d/90_ntsync.cfg": (
        "datasource_list: [ NoCloud, None ]\n"
        "network: {config: disabled}\n"
        # Only the modules a NoCloud seed of ntsync-vm (or a user's) needs: every module is
        # Python imported under TCG, seconds each. No ssh keys (no sshd), no apt, no locale.
        "cloud_init_modules: [seed_random, bootcmd, write_files, set_hostname, update_hostname,\n"
        "  update_etc_hosts, users_groups, set_passwords]\n"
        "cloud_config_modules: [runcmd]\n"
        "cloud_final_modules: [scripts_per_once, scripts_per_boot, scripts_per_instance, scripts_user,\n"
        "  final_message, power_state_change]\n"
    ),
    # `ntsync-vm shell`: root shell on the serial console without a password.
    "etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf": (
        "[Service]\nExecStart=\n"
        "ExecStart=-/sbin/agetty -o '-p -f -- \\\\u' --keep-baud --autologin root 115200,57600,38400,9600 - $TERM\n"
    ),
    # A journal in memory is enough and spares the disk.
    "etc/systemd/journald.conf.d/90_ntsync.conf": "[Journal]\nStorage=volatile\n",
}
MASKED_UNITS = [
    "apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "e2scrub_reap.service",
    "fstrim.timer", "man-db.timer", "dpkg-db-backup.timer", "systemd-networkd-wait-online.service",
]


def customize_root(root, extra_dir):
    extra_debs = sorted(Path(extra_dir).glob("*.deb"))
    for rel, text in GUEST_FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for unit in MASKED_UNITS:
        link = root / "etc/systemd/system" / unit
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to("/dev/null")
    run(["chroot", str(root), "passwd", "-d", "root"], stdout=subprocess.DEVNULL)
    # First boot would run ldconfig.service and DKMS would make its signing key with openssl,
    # both slow under TCG: do them here, natively.
    for rel in ("etc/.updated", "var/.updated"):
        (root / rel).write_text("# ntsync-vm: up to date at image build\n")
    if (root / "usr/bin/openssl").exists() and not (root / "var/lib/dkms/mok.key").exists():
        (root / "var/lib/dkms").mkdir(parents=True, exist_ok=True)
        run(["chroot", str(root), "openssl", "req", "-new", "-x509", "-nodes", "-days", "36500",
             "-subj", "/CN=ntsync-vm guest DKMS signing key/", "-newkey", "rsa:2048",
             "-keyout", "/var/lib/dkms/mok.key", "-outform", "DER", "-out", "/var/lib/dkms/mok.pub"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Root's console prompt: say where the user is.
    with open(root / "root/.bashrc", "a") as f:
        f.write("\n[ -t 0 ] && echo 'ntsync guest: root shell (poweroff to leave)'\n")
    if extra_debs:
        dst = root / "tmp/kernel-debs"
        dst.mkdir(parents=True, exist_ok=True)
        for d in extra_debs:
            shutil.copy2(d, dst / d.name)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["chroot", str(root), "sh", "-c", "dpkg -i /tmp/kernel-debs/*.deb"], env=env)
        shutil.rmtree(dst)
    # MODULES=dep in a chroot would read the host's hardware: list what a QEMU guest needs.
    (root / "etc/initramfs-tools/conf.d/90_ntsync").write_text("MODULES=list\nCOMPRESS=gzip\n")
    with open(root / "etc/initramfs-tools/modules", "a") as f:
        f.write("virtio_pci\nvirtio_blk\next4\ncrc32c_generic\n")
    run(["chroot", str(root), "update-initramfs", "-u", "-k", "all"], stdout=subprocess.DEVNULL)
    for d in (root / "var/cache/apt/archives").glob("*.deb"):
        d.unlink()


def newest_kernel(root):
    """Pick the kernel the image boots: the newest vmlinuz with an initrd."""
    def vkey(name):
        return [int(x) if x.isdigit() else x for x in re.split(r"[.\-+~]", name)]
    kernels = []
    for vm in (root / "boot").glob("vmlinuz-*"):
        rel = vm.name[len("vmlinuz-"):]
        if (root / "boot" / f"initrd.img-{rel}").exists():
            kernels.append(rel)
    if not kernels:
        raise Failure("image build: no /boot/vmlinuz-* with an initrd in the new root")
    # A --kernel-debs kernel wins over the distribution's: it is why it was added.
    kernels.sort(key=lambda r: (("cloud" not in r and "debug" in r) or "kasan" in r, vkey(r)))
    return kernels[-1]


def clean_stale_builds():
    """Remove half-built roots of earlier, interrupted builds (unmounting what mmdebstrap left)."""
    for d in (CACHE / "images").glob(".build-*"):
        pid = d.name.rsplit("-", 1)[-1]
        if pid.isdigit() and Path(f"/proc/{pid}").exists():
            continue
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                  if line.split()[1].startswith(str(d) + "/")]
        for m in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", m], check=False)
        shutil.rmtree(d, ignore_errors=True)


DISK_BYTES = 12 * 1024 ** 3
PART_START = 2048  # sectors: the first partition at 1 MiB leaves the MBR gap for GRUB's core.img
GRUB_MODULES = ["biosdisk", "part_msdos", "ext2", "normal", "linux", "configfile", "echo", "test", "search"]


def make_disk(root, raw, krel):
    """A disk that boots by itself like Debian's genericcloud image: an MBR partition table
    with one ext4 partition (label ntsync-root) at 1 MiB, GRUB's boot.img in the MBR and its
    core.img in the gap after it (the layout grub-install makes, written without loop devices).
    ntsync-vm itself boots the kernel and initrd directly (faster, and --append works);
    `--image disk.qcow2` goes through SeaBIOS and GRUB like a user's cloud image."""
    cmdline = "root=LABEL=ntsync-root rw console=ttyS0,115200 net.ifnames=0 panic=-1"
    grub = root / "boot/grub"
    (grub / "i386-pc").mkdir(parents=True, exist_ok=True)
    for mod in (root / "usr/lib/grub/i386-pc").iterdir():
        if mod.suffix in (".mod", ".lst"):
            shutil.copy2(mod, grub / "i386-pc" / mod.name)
    (grub / "grub.cfg").write_text(
        "# ntsync-vm image: boot the newest kernel at once, console on the serial port\n"
        "serial --unit=0 --speed=115200\nterminal_input serial console\nterminal_output serial console\n"
        "set timeout=0\n"
        f"menuentry 'Debian GNU/Linux, {krel}' {{\n"
        f"  linux /boot/vmlinuz-{krel} {cmdline}\n"
        f"  initrd /boot/initrd.img-{krel}\n"
        "}\n")
    run(["chroot", str(root), "grub-mkimage", "-O", "i386-pc", "-o", "/boot/grub/i386-pc/core.img",
         "-p", "(hd0,msdos1)/boot/grub", *GRUB_MODULES, "serial", "terminal"])
    core = (grub / "i386-pc/core.img").read_bytes()
    boot = (root / "usr/lib/grub/i386-pc/boot.img").read_bytes()
    if len(boot) != 512 or (len(core) + 511) // 512 > PART_START - 1:
        raise Failure(f"GRUB images do not fit: boot.img {len(boot)} B, core.img {len(core)} B")
    sectors = DISK_BYTES // 512 - PART_START
    with open(raw, "wb") as f:
        f.truncate(DISK_BYTES)
    run(["mkfs.ext4", "-q", "-F", "-L", "ntsync-root", "-E", f"root_owner=0:0,offset={PART_START * 512}",
         "-d", str(root), str(raw), str(sectors * 512 // 4096)])
    # MBR: boot code (446 bytes minus the disk signature), one bootable Linux partition
    # addressed by LBA (CHS fields saturated), the 0x55aa signature.
    entry = (bytes([0x80, 0xfe, 0xff, 0xff, 0x83, 0xfe, 0xff, 0xff])
             + PART_START.to_bytes(4, "little") + sectors.to_bytes(4, "little"))
    mbr = boot[:440] + os.urandom(4) + b"\0\0" + entry + bytes(48) + b"\x55\xaa"
    with open(raw, "r+b") as f:
        f.write(mbr)
        f.seek(512)
        f.write(core)


def build_image(suite, paths, extra_debs):
    require_root("building an image")
    ensure_host_tools(["mmdebstrap", "qemu-img", "mkfs.ext4"])
    spec = SUITES[suite]
    t = time.monotonic()
    work = CACHE / "images" / f".build-{suite}-{os.getpid()}"
    clean_stale_builds()
    root = work / "root"
    root.mkdir(parents=True)
    apt_cache = CACHE / "apt" / spec["release"]
    apt_cache.mkdir(parents=True, exist_ok=True)
    logf = work / "mmdebstrap.log"
    extra_dir = work / "kernel-debs"
    extra_dir.mkdir()
    for d in extra_debs:
        shutil.copy2(d, extra_dir / d.name)
    pkgs = BASE_PACKAGES + spec["kernel_packages"]
    cmd = [
        "nice", "-n", "10", "mmdebstrap", "--mode=root", "--variant=minbase",
        "--include=" + ",".join(pkgs),
        "--aptopt=Acquire::Languages \"none\"",
        "--aptopt=APT::Install-Recommends \"false\"",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--dpkgopt=path-exclude=/usr/share/info/*",
        "--skip=download/empty",
        "--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/",
        f"--setup-hook=sync-in {apt_cache} /var/cache/apt/archives/",
        f"--customize-hook=sync-out /var/cache/apt/archives {apt_cache}",
        # The rest runs in this script again, while mmdebstrap has /proc, /sys and /dev mounted.
        f"--customize-hook=/usr/bin/python3 {Path(__file__).resolve()} _customize \"$1\" {extra_dir}",
        spec["release"], str(root), *spec["sources"],
    ]
    log(f"image {suite}: mmdebstrap {spec['release']} ({len(pkgs)} packages; log {logf})")
    with open(logf, "w") as lf:
        try:
            subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, check=True, timeout=1800)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            tail = logf.read_text(errors="replace").splitlines()[-25:]
            raise Failure(f"image {suite}: mmdebstrap failed ({e}); last lines of {logf}:\n  "
                          + "\n  ".join(tail))
    log(f"image {suite}: root ready in {fmt_secs(time.monotonic() - t)}")
    krel = newest_kernel(root)
    work_kernel, work_initrd = work / "vmlinuz", work / "initrd.img"
    shutil.copy2(root / "boot" / f"vmlinuz-{krel}", work_kernel)
    shutil.copy2(root / "boot" / f"initrd.img-{krel}", work_initrd)
    raw = work / "disk.raw"
    log(f"image {suite}: MBR disk with GRUB, mkfs.ext4 -d (kernel {krel})")
    make_disk(root, raw, krel)
    qcow = work / "disk.qcow2"
    run(["qemu-img", "convert", "-O", "qcow2", str(raw), str(qcow)])
    raw.unlink()
    shutil.rmtree(root)
    info = {"suite": suite, "kernel_release": krel, "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.monotonic() - t, 1), "packages": pkgs,
            "kernel_debs": [d.name for d in extra_debs]}
    (work / "image.json").write_text(json.dumps(info, indent=1) + "\n")
    if paths["dir"].exists():
        shutil.rmtree(paths["dir"])
    paths["dir"].parent.mkdir(parents=True, exist_ok=True)
    work.rename(paths["dir"])
    # Older images of the same suite with the same extra kernel are stale now; an image
    # with other --kernel-debs (or none) stays, or the two would rebuild each other.
    for old in (CACHE / "images").glob(f"{suite}-*"):
        if old != paths["dir"] and old.is_dir() and re.fullmatch(rf"{re.escape(suite)}-[0-9a-f]{{12}}", old.name):
            try:
                same = json.loads((old / "image.json").read_text()).get("kernel_debs", []) == info["kernel_debs"]
            except (OSError, ValueError):
                same = True
            if same:
                shutil.rmtree(old, ignore_errors=True)
    log(f"image {suite}: built {paths['disk']} in {fmt_secs(time.monotonic() - t)} "
        f"({paths['disk'].stat().st_size // 2**20} MiB)")
    return info


# ----------------------------------------------------------------------------- our packages

def source_files():
    """Files of the source tree as git sees them (tracked plus new, minus ignored)."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        files = sorted({f for f in out.decode().split("\0") if f and (REPO / f).is_file()})
    except (subprocess.CalledProcessError, FileNotFoundError):
        files = sorted(str(p.relative_to(REPO)) for p in REPO.rglob("*")
                       if p.is_file() and ".git" not in p.parts)
    return files


def tree_hash(files):
    h = hashlib.sha256()
    for f in files:
        h.update(f.encode() + b"\0")
        h.update(hashlib.sha256((REPO / f).read_bytes()).digest())
    return h.hexdigest()[:12]


def build_debs():
    """Our packages from this tree (debian/build-debs, i.e. dpkg-buildpackage -us -uc -b).
    Cached under $NTSYNC_CACHE/vm-debs/HASH, HASH being that of the files that go into them."""
    if not (REPO / "debian/control").exists():
        return None
    files = [f for f in source_files() if not f.startswith(("vm/", ".ci/")) and f not in ("README.md", "check")]
    key = tree_hash(files)
    out = CACHE / "vm-debs" / key
    debs = sorted(out.glob("*.deb")) if (out / "ok").exists() else []
    if debs:
        log(f"packages: cached {out} ({len(debs)} debs)")
        return debs
    ensure_host_tools(["dpkg-buildpackage"])
    t = time.monotonic()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    logf = out.parent / f"build-{key}.log"
    if (REPO / "debian/build-debs").exists():
        cmd = ["bash", str(REPO / "debian/build-debs"), "--out", str(out)]
    else:
        die("debian/build-debs is missing; it builds the packages (dpkg-buildpackage -us -uc -b)")
    log(f"packages: building with {shlex.join(cmd[1:])} (log {logf})")
    with open(logf, "w") as lf:
        try:
            r = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=1800)
        except subprocess.TimeoutExpired:
            raise Failure(f"building the packages timed out after 30 min; see {logf}")
    if r.returncode != 0:
        tail_lines = logf.read_text(errors="replace").splitlines()[-20:]
        raise Failure(f"building the packages failed; last lines of {logf}:\n  " + "\n  ".join(tail_lines))
    debs = sorted(out.glob("*.deb"))
    if not debs:
        raise Failure(f"building the packages made no .deb files; see {logf}")
    (out / "ok").write_text("")
    builds = sorted((p for p in (CACHE / "vm-debs").iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in builds[:-4]:
        shutil.rmtree(old, ignore_errors=True)
    log(f"packages: {len(debs)} debs in {fmt_secs(time.monotonic() - t)}: " + " ".join(d.name for d in debs))
    return debs


def build_i386_suite():
    """The conformance suite as static i386 executables (tests/build-static), for the compat
    ioctl path. Cached under $NTSYNC_CACHE/tests-static/HASH. None where tests/build-static
    does not exist yet."""
    script = REPO / "tests/build-static"
    if not script.exists():
        return None
    files = [f for f in source_files() if f.startswith(("tests/", "include/uapi/"))]
    out = CACHE / "tests-static" / tree_hash(files)
    if (out / "ok").exists():
        log(f"i386 suite: cached {out / 'i386'}")
        return out / "i386"
    t = time.monotonic()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    logf = out.parent / f"build-{out.name}.log"
    log(f"i386 suite: building with tests/build-static (log {logf})")
    with open(logf, "w") as lf:
        try:
            r = subprocess.run(["bash", str(script), str(out)], stdout=lf, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=1200)
        except subprocess.TimeoutExpired:
            raise Failure(f"tests/build-static timed out after 20 min; see {logf}")
    if r.returncode != 0 or not (out / "i386/ntsync-run-tests").exists():
        tail_lines = logf.read_text(errors="replace").splitlines()[-15:]
        raise Failure(f"tests/build-static failed; last lines of {logf}:\n  " + "\n  ".join(tail_lines)
                      + "\n(ntsync-vm test --no-i386 runs the 64-bit suite alone)")
    (out / "ok").write_text("")
    builds = sorted((q for q in out.parent.iterdir() if q.is_dir() and (q / "ok").exists()),
                    key=lambda q: q.stat().st_mtime)
    for old in builds[:-3]:
        shutil.rmtree(old, ignore_errors=True)
    log(f"i386 suite: built in {fmt_secs(time.monotonic() - t)}")
    return out / "i386"


# ----------------------------------------------------------------------------- QEMU

def decide_accel(image=None):
    """The accelerator of this host's guests (vm/lib/accel.py: a real kernel is booted under
    KVM once per boot of the host; the image's own kernel first)."""
    try:
        return accel_mod.decide([image["kernel"]] if image else [], say=log)
    except ValueError as e:
        die(str(e))


class KvmTrouble(Failure):
    """A guest started under KVM that KVM cannot run: boot it again under TCG."""


def make_seed(run_dir, hostname, shell_password=False):
    user_data = [
        "#cloud-config",
        "# ntsync-vm: unpack the job from the disk with serial ntsync-in and run it",
        "runcmd:",
        "  - [ bash, -c, 'mkdir -p /var/tmp/ntsync-in && tar -xf /dev/disk/by-id/virtio-ntsync-in"
        " -C /var/tmp/ntsync-in && exec bash /var/tmp/ntsync-in/guest.sh' ]",
    ]
    if shell_password:
        user_data += ["chpasswd:", "  expire: false", "  users:", "    - {name: root, password: ntsync, type: text}"]
    (run_dir / "user-data").write_text("\n".join(user_data) + "\n")
    (run_dir / "meta-data").write_text(f"instance-id: ntsync-{run_dir.name}\nlocal-hostname: {hostname}\n")
    seed = run_dir / "seed.img"
    run(["cloud-localds", str(seed), str(run_dir / "user-data"), str(run_dir / "meta-data")])
    return seed


def make_input(run_dir, job, env, debs, share=None, extra=None):
    tarpath = run_dir / "in.tar"
    env_text = "".join(f"{k}={shlex.quote(str(v))}\n" for k, v in env.items())
    with tarfile.open(tarpath, "w") as tf:
        def add_text(name, text, mode=0o644):
            data = text.encode()
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), mode, int(time.time())
            tf.addfile(ti, io.BytesIO(data))
        tf.add(VM_DIR / "guest/guest.sh", "guest.sh")
        tf.add(VM_DIR / f"guest/jobs/{job}.sh", "job.sh")
        add_text("job.env", env_text)
        for d in debs or []:
            tf.add(d, f"debs/{d.name}")
        # The module source always goes along: without packages the guest builds it, and
        # `bench` falls back to it when the dkms package's copy is missing.
        for f in source_files():
            if f.startswith(("module/", "include/")) or f == "VERSION":
                tf.add(REPO / f, f"src/{f}")
        if share:
            tf.add(share, "share")
        for name, path in (extra or {}).items():
            tf.add(path, name)
    # A raw disk must be a whole number of sectors.
    size = tarpath.stat().st_size
    with open(tarpath, "ab") as f:
        f.truncate(((size + 1024 * 1024 - 1) // (1024 * 1024)) * 1024 * 1024 or 1024 * 1024)
    return tarpath


class Guest:
    def __init__(self, run_dir, console, proc):
        self.run_dir, self.console, self.proc = run_dir, console, proc


def qemu_command(run_dir, disk_args, smp, mem, accel, net, icount, interactive, console):
    cmd = ["qemu-system-x86_64", "-name", f"ntsync-{run_dir.name}", "-nodefaults", "-display", "none",
           "-no-reboot", "-machine", "q35", "-m", str(mem), "-smp", str(smp)]
    if accel == "kvm":
        cmd += ["-accel", "kvm", "-cpu", "host"]
    elif icount:
        cmd += ["-accel", "tcg", "-cpu", "max", "-icount", "shift=0,sleep=off"]
    else:
        cmd += ["-accel", "tcg,thread=multi" if smp > 1 else "tcg", "-cpu", "max"]
    cmd += disk_args
    cmd += ["-device", "virtio-rng-pci"]
    cmd += ["-nic", "user,model=virtio-net-pci"] if net else ["-nic", "none"]
    if interactive:
        cmd += ["-chardev", f"stdio,id=ser0,mux=on,signal=off,logfile={console}",
                "-serial", "chardev:ser0", "-mon", "chardev=ser0"]
    else:
        cmd += ["-chardev", f"file,id=ser0,path={console}", "-serial", "chardev:ser0", "-monitor", "none"]
    return cmd


def tail(path, n=40):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "(no console log)"
    return "\n".join("  | " + line for line in lines[-n:])


MARK = re.compile(r"##ntsync## (\S+)(?: (.*))?")
TESTLINE = re.compile(r"^(PASS|FAIL|SKIP) \S+: ")


def watch_guest(proc, console, stages, echo_job, job_timeout, t_start, accel="tcg", qemu_stderr=None):
    """Follow the console log; enforce a time-out per stage; return timings per stage.
    Under KVM, a QEMU that reports a KVM error or a console that stays empty raises
    KvmTrouble at once (the caller boots the guest again under TCG)."""
    stage, since = "boot", time.monotonic()
    times = {}
    pos = 0
    buf = ""
    done_rc = None
    echoing = False
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    last_progress = time.monotonic()
    while True:
        try:
            with open(console, "rb") as f:
                f.seek(pos)
                chunk = f.read()
                pos += len(chunk)
        except FileNotFoundError:
            chunk = b""
        buf += chunk.decode(errors="replace")
        *lines, buf = buf.split("\n")
        for raw in lines:
            line = raw.rstrip("\r")
            m = MARK.search(line)
            if not m:
                if echoing and not line.startswith("["):
                    print("    " + line, flush=True)
                elif stage == "job":
                    t = TESTLINE.match(line)
                    if t:
                        counts[t.group(1)] += 1
                        if t.group(1) == "FAIL":
                            log(f"  {line.strip()}")
                        if time.monotonic() - last_progress > 15:
                            last_progress = time.monotonic()
                            # (not in the "N passed, N failed" form: that is the final line's)
                            log(f"  tests so far: PASS {counts['PASS']}, FAIL {counts['FAIL']}, "
                                f"SKIP {counts['SKIP']}")
                continue
            kind, rest = m.group(1), (m.group(2) or "").strip()
            now = time.monotonic()
            if kind == "stage":
                name = rest.split()[0]
                times[stage] = now - since
                if stage == "boot":
                    times["boot_to_job"] = now - t_start
                    log(f"guest up after {fmt_secs(now - t_start)} ({rest})")
                if name == "job":
                    times["boot_to_first_test"] = now - t_start
                stage, since = ("boot-script" if name == "start" else name), now
                echoing = echo_job and name == "job"
                label = {"install": "installing packages", "driver": "loading the driver",
                         "job": "running the job", "unload": "modprobe -r ntsync",
                         "collect": "collecting results"}.get(name)
                if label:
                    log(label)
            elif kind == "info":
                log(rest)
            elif kind == "done":
                times[stage] = now - since
                done_rc = rest
                stage, since = "poweroff", now
                echoing = False
        rc = proc.poll()
        if accel == "kvm" and stage == "boot":
            trouble = accel_mod.kvm_trouble(
                qemu_stderr.read_text(errors="replace") if qemu_stderr and qemu_stderr.exists() else "",
                pos, time.monotonic() - t_start, rc)
            if trouble:
                if rc is None:
                    accel_mod._stop(proc)
                raise KvmTrouble(trouble)
        if rc is not None:
            times.setdefault(stage, time.monotonic() - since)
            return times, stage, done_rc
        limit = (job_timeout if stage == "job" else
                 timeout_for(stages.get(stage, stage)) if stage in STAGE_TIMEOUTS or stage in stages else
                 timeout_for("collect"))
        if time.monotonic() - since > limit:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise Failure(f"stage '{stage}' stalled: no progress for {fmt_secs(limit)} under "
                          f"{accel.upper()} ({accel_mod.OVERRIDE} sets the accelerator); QEMU stopped. "
                          f"Console log {console}, its tail:\n{tail(console)}")
        time.sleep(0.5)


def read_results(out_img, dest):
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(out_img, "r:") as tf:
            safe = [m for m in tf.getmembers()
                    if (m.isfile() or m.isdir()) and not m.name.startswith("/") and ".." not in Path(m.name).parts]
            for m in safe:
                m.mode = (m.mode | 0o600) & 0o755
            tf.extractall(dest, members=safe)
        return bool(safe)
    except (tarfile.TarError, OSError):
        return False


def gate_kernel_log(results, console):
    """The honest gates: kernel log reports after the job started, taint, modprobe -r."""
    problems = []
    dm = results / "dmesg.txt"
    if dm.exists():
        lines = dm.read_text(errors="replace").splitlines()
        start = next((i for i, line in enumerate(lines) if "ntsync-vm: job " in line and " start" in line), 0)
        before, after = lines[:start], lines[start:]
        source = "dmesg"
    else:
        before = []
        after = [line for line in Path(console).read_text(errors="replace").splitlines()
                 if re.match(r"\[\s*\d+\.\d+\]", line)]
        source = "console"
    for pat, what in GATE_PATTERNS:
        rx = re.compile(pat)
        for line in after:
            if rx.search(line):
                problems.append(f"{what}: {line.strip()} ({source})")
                break
    notes = []
    for pat, what in GATE_PATTERNS:
        for line in before:
            if re.search(pat, line):
                notes.append(f"before the job, at boot: {line.strip()}")
                break
    try:
        t0 = int((results / "taint.start").read_text())
        t1 = int((results / "taint.end").read_text())
        new = t1 & ~t0 & ~TAINT_ALLOWED
        if new:
            flags = "".join(TAINT_LETTERS[b] for b in range(len(TAINT_LETTERS)) if new >> b & 1)
            problems.append(f"kernel tainted during the job: {flags} (tainted={t1})")
        if t0 & ~TAINT_ALLOWED:
            notes.append(f"kernel already tainted at job start: {t0}")
    except (OSError, ValueError):
        problems.append("no taint state came back from the guest")
    try:
        urc = int((results / "unload.rc").read_text())
        if urc != 0:
            problems.append(f"modprobe -r ntsync failed at the end (rc {urc})")
    except (OSError, ValueError):
        problems.append("the end-of-job modprobe -r ntsync did not report")
    return problems, notes


SUMMARY = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")


class BootCrash(Failure):
    """The guest kernel died before the job script started, with none of our code loaded."""

    def __init__(self, msg, console):
        super().__init__(msg)
        self.console = console


def boot_crash(console):
    """A kernel panic or oops on the console during boot, with no ntsync module among the
    modules it lists. Multi-threaded TCG (QEMU 7.2 here) now and then runs a stale int3 that
    the kernel's text patching left behind (seen: "Oops: int3" in sched_clock_cpu, 1 boot in ~15):
    QEMU's fault, not the driver's, and the cue to boot again."""
    try:
        text = Path(console).read_text(errors="replace")
    except OSError:
        return False
    if not re.search(r"Kernel panic - not syncing|\bOops: ", text):
        return False
    linked = re.findall(r"Modules linked in:(.*)", text)
    return not any(re.search(r"\bntsync\b", m) for m in linked) and "ntsync: " not in text


def run_guest(job, suite, opts, debs, image=None, echo_job=False):
    """One guest run. Returns a dict with result, summary, timings, paths.
    Guests of all ntsync-vm users on this machine run one at a time (2 shared cores under TCG);
    NTSYNC_VM_PARALLEL=1 skips the queue. A guest whose kernel crashes while booting, before
    any of our code is there, boots once more (said on the console, never silently)."""
    global WAITED
    ensure_host_tools(["qemu-system-x86_64", "qemu-img", "cloud-localds", "busybox"])
    accel, why = decide_accel(None if getattr(opts, "image", None) else image)
    if os.environ.get("NTSYNC_VM_PARALLEL") == "1" or job == "shell":
        return _run_guest_kvm_or_tcg(job, suite, opts, debs, image, echo_job, accel, why)
    t = time.monotonic()
    with locked(CACHE / "guest.lock", "another ntsync-vm guest to finish"):
        WAITED += time.monotonic() - t
        try:
            return _run_guest_kvm_or_tcg(job, suite, opts, debs, image, echo_job, accel, why)
        except BootCrash as e:
            warn(f"{str(e).splitlines()[0]}")
            warn("booting a fresh guest once more (a TCG text-patching fault, see boot_crash() in "
                 "vm/lib/ntsync_vm.py); a second crash fails the run")
            accel, why = decide_accel(None if getattr(opts, "image", None) else image)
            res = _run_guest_kvm_or_tcg(job, suite, opts, debs, image, echo_job, accel, why)
            res["notes"].append(f"the first boot crashed before the job: {e.console}")
            return res


def _run_guest_kvm_or_tcg(job, suite, opts, debs, image, echo_job, accel, why):
    try:
        return _run_guest(job, suite, opts, debs, image, echo_job, accel, why)
    except KvmTrouble as e:
        if os.environ.get("NTSYNC_ACCEL") == "kvm":
            raise Failure(f"KVM could not run this guest ({e}); NTSYNC_ACCEL=kvm is set, so no fallback "
                          "to TCG: unset it (or set NTSYNC_ACCEL=tcg)") from None
        warn(f"KVM could not run this guest ({e}); stopped it and booting it again under TCG. "
             f"TCG is remembered for this boot of the host ({accel_mod.OVERRIDE} overrides)")
        accel_mod.remember("tcg", f"a guest failed under KVM: {e}")
        return _run_guest(job, suite, opts, debs, image, echo_job, "tcg", f"KVM failed this guest: {e}")


WAITED = 0.0


def _run_guest(job, suite, opts, debs, image, echo_job, accel, why):
    t_start = time.monotonic()
    spec = SUITES.get(suite)
    user_image = getattr(opts, "image", None)
    driver = opts.driver
    if driver == "in-tree" and user_image is None and not spec["in_tree"]:
        die(f"--driver in-tree needs a kernel with the in-tree driver; use --suite trixie-7x "
            f"(suite {suite} has kernel {spec['kernel']})")
    ensure_host_tools(["qemu-system-x86_64", "qemu-img", "cloud-localds"])
    runs = CACHE / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-") + f"{job}-{suite}-", dir=runs))
    console = run_dir / "console.log"
    console.touch()
    prune_runs(runs)
    net = bool(user_image) or opts.net
    share = None
    if job == "exec":
        share = Path(opts.share).resolve() if opts.share else None
    env = {"JOB": job, "DRIVER": driver, "NET": int(net), "VERSION": repo_version(),
           "MODE": "debs" if debs else "src", "CMD": opts.cmd_string if job == "exec" else ""}
    seed = make_seed(run_dir, f"ntsync-{suite}")
    extra = {}
    if job == "test" and getattr(opts, "i386_dir", None):
        extra["i386"] = opts.i386_dir
    inp = make_input(run_dir, job, env, debs, share=share, extra=extra)
    out_img = run_dir / "out.img"
    with open(out_img, "wb") as f:
        f.truncate(1024 * 1024 * int(os.environ.get("NTSYNC_OUT_MIB", "512")))
    overlay = run_dir / "disk.qcow2"
    if user_image:
        base = Path(user_image).resolve()
        fmt = "qcow2" if base.read_bytes()[:4] == b"QFI\xfb" else "raw"
        run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(base), "-F", fmt, str(overlay), "16G"])
        boot_args = []
        kernel_desc = "its own bootloader and kernel"
    else:
        run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(image["disk"]), "-F", "qcow2", str(overlay)])
        append = "root=LABEL=ntsync-root rw console=ttyS0,115200 net.ifnames=0 panic=-1 " + opts.append
        boot_args = ["-kernel", str(image["kernel"]), "-initrd", str(image["initrd"]), "-append", append.strip()]
        kernel_desc = image["info"]["kernel_release"]
    disks = boot_args + [
        # bootindex: SeaBIOS would otherwise try another of the virtio disks (the seed or the
        # job's tar) first and find no bootloader there ("No bootable device"). 1, because
        # with -kernel QEMU's linuxboot option ROM holds 0.
        "-drive", f"file={overlay},if=none,id=root,format=qcow2,discard=unmap,cache=unsafe",
        "-device", "virtio-blk-pci,drive=root,bootindex=1",
        "-drive", f"file={seed},if=virtio,format=raw,readonly=on",
        "-drive", f"file={inp},if=none,id=ntin,format=raw,readonly=on",
        "-device", "virtio-blk-pci,drive=ntin,serial=ntsync-in",
        "-drive", f"file={out_img},if=none,id=ntout,format=raw",
        "-device", "virtio-blk-pci,drive=ntout,serial=ntsync-out",
    ]
    smp = opts.smp or (1 if job == "bench" else 2)
    icount = job == "bench" and accel == "tcg" and not opts.no_icount
    interactive = job == "shell"
    cmd = qemu_command(run_dir, disks, smp, opts.mem, accel, net, icount, interactive, console)
    (run_dir / "qemu.cmd").write_text(shlex.join(cmd) + "\n")
    what = (f"{job} on {suite if not user_image else user_image} ({kernel_desc}), driver {driver}, "
            f"{accel.upper()}{' icount' if icount else ''}, {smp} vCPU, {opts.mem} MiB"
            f"{', user network' if net else ''}; {accel.upper()}: {why}")
    log(f"booting: {what}")
    log(f"console log: {console}")
    stages = {"install": "install-net" if net else "install"}
    job_timeout = timeout_for("job", opts.timeout or (3600 if job == "bench" else None))
    if interactive:
        job_timeout = 10 ** 9
        proc = subprocess.Popen(cmd)
        proc.wait()
        times, last_stage, done = {}, "shell", None
    else:
        stderr_f = open(run_dir / "qemu.stderr", "w")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stderr_f, stderr=stderr_f)
        try:
            times, last_stage, done = watch_guest(proc, console, stages, echo_job, job_timeout, t_start,
                                                  accel, run_dir / "qemu.stderr")
        except BaseException:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            raise
        finally:
            stderr_f.close()
    total = time.monotonic() - t_start
    results = run_dir / "out"
    got = read_results(out_img, results)
    overlay.unlink(missing_ok=True)
    res = {"job": job, "suite": suite, "driver": driver, "run_dir": str(run_dir), "console": str(console),
           "times": times, "total": total, "kernel": kernel_desc}
    if done is None and not interactive and not (results / "job.rc").exists():
        err = (run_dir / "qemu.stderr").read_text(errors="replace").strip()
        if last_stage == "boot" and boot_crash(console):
            raise BootCrash(f"the guest's kernel crashed while booting, before the job began and with no "
                            f"ntsync module loaded. Console log {console}, its tail:\n{tail(console)}", console)
        raise Failure(f"the guest stopped during stage '{last_stage}' without finishing"
                      f"{' (QEMU: ' + err.splitlines()[-1] + ')' if err else ''}. Console log {console}, "
                      f"its tail:\n{tail(console)}")
    if not got:
        raise Failure(f"no results came back from the guest (disk {out_img}); console log {console}")
    if (results / "uname").exists():
        res["kernel"] = (results / "uname").read_text().strip()
    res["job_rc"] = int((results / "job.rc").read_text()) if (results / "job.rc").exists() else None
    if (results / "failure").exists():
        res["failure"] = (results / "failure").read_text().strip()
    problems, notes = gate_kernel_log(results, console)
    res["problems"], res["notes"] = problems, notes
    joblog = results / "job.log"
    res["summary"] = None
    if joblog.exists():
        for line in joblog.read_text(errors="replace").splitlines():
            m = SUMMARY.match(line.strip())
            if m:
                res["summary"] = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    res["results"] = str(results)
    return res


def prune_runs(runs, keep=12):
    dirs = sorted((p for p in runs.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in dirs[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


# ----------------------------------------------------------------------------- jobs

TARGETS = {"total_cached": 240, "boot": 90, "total_cold": 480}


def print_timings(res, image_seconds=None):
    t = res["times"]
    parts = [f"boot to job script {fmt_secs(t.get('boot_to_job', 0))}"]
    if "boot_to_first_test" in t:
        # the packages installed (DKMS build included) and the driver loaded: the job begins
        parts.append(f"boot to first test {fmt_secs(t['boot_to_first_test'])} (target <= {TARGETS['boot']}s)")
    for st in ("install", "driver", "job", "unload", "collect", "poweroff"):
        if st in t:
            parts.append(f"{st} {fmt_secs(t[st])}")
    total = elapsed() - WAITED
    target = TARGETS["total_cold"] if image_seconds else TARGETS["total_cached"]
    parts.append(f"whole run {fmt_secs(total)}{' not counting ' + fmt_secs(WAITED) + ' queued' if WAITED > 1 else ''} (target <= {fmt_secs(target)}"
                 f"{', image built in this run' if image_seconds else ', cached image'})")
    log("timings: " + "; ".join(parts))


def verdict(res):
    """Exit code and the reasons: 0 pass, 1 failed (tests or gates)."""
    reasons = list(res["problems"])
    if res.get("failure"):
        reasons.insert(0, res["failure"])
    if res["job_rc"] not in (0, None):
        reasons.insert(0, f"the job exited {res['job_rc']}")
    return (1 if reasons else 0), reasons


def report(res, image_seconds=None, timings=True):
    if timings:
        print_timings(res, image_seconds)
    for n in res["notes"]:
        log(f"note: {n}")
    code, reasons = verdict(res)
    log(f"results: {res['results']}")
    log(f"console log: {res['console']}")
    for r in reasons:
        log(f"FAIL: {r}")
    if not reasons:
        log("kernel log clean (no BUG/WARNING/Oops/lockdep/KASAN/kmemleak/refcount_t), "
            "no new taint beyond O/E, modprobe -r ntsync succeeded")
    return code


def prepare(opts, suite):
    """Image (unless --image) and packages. Returns (image, debs, image_seconds)."""
    image, image_seconds = None, None
    if not opts.image:
        t = time.monotonic()
        paths, info = find_image(suite, opts.kernel_debs, rebuild=opts.rebuild)
        if time.monotonic() - t > 30:
            image_seconds = time.monotonic() - t
        image = dict(paths, info=info)
    debs = None
    if opts.debs:
        debs = sorted(p for p in Path(opts.debs).glob("*.deb") if "-dbgsym_" not in p.name)
        if not debs:
            die(f"--debs {opts.debs}: no .deb files there")
        log(f"packages: {len(debs)} debs from {opts.debs}")
    elif not opts.no_debs:
        debs = build_debs()
        if debs is None:
            warn("debian/ is not there yet: the guest builds module/ directly (make -C module) "
                 "and loads it with insmod; no packages, so no test suite")
    if opts.job == "test" and not opts.no_i386 and not getattr(opts, "i386_dir", None):
        d = build_i386_suite()
        opts.i386_dir = str(d) if d else None
    return image, debs, image_seconds


def job_single(opts):
    suite = opts.suite
    if opts.driver == "in-tree" and not opts.image and not SUITES[suite]["in_tree"]:
        die(f"--driver in-tree: suite {suite} (kernel {SUITES[suite]['kernel']}) has no in-tree ntsync; "
            "use --suite trixie-7x")
    image, debs, image_seconds = prepare(opts, suite)
    if opts.job in ("test", "demo", "bench") and debs is None:
        die(f"job {opts.job} needs our packages, and debian/ does not exist yet; "
            "try 'ntsync-vm exec --suite trixie-7x -- ls -l /dev/ntsync' meanwhile")
    res = run_guest(opts.job, suite, opts, debs, image=image,
                    echo_job=opts.job in ("demo", "bench", "exec") or opts.verbose)
    if opts.job == "shell":
        if res.get("job_rc") is None:
            log(f"shell ended without ntsync-vm-exit: no end-of-job checks; console log {res['console']}")
            return 0
        log("shell ended through ntsync-vm-exit: the end-of-job checks")
        return report(res, timings=False)
    code = report(res, image_seconds)
    if opts.job == "exec":
        share = Path(res["results"]) / "share"
        if share.exists():
            log(f"the folder as the command left it: {share}")
    if opts.job == "test":
        s = res["summary"]
        if s is None:
            log("FAIL: the test runner printed no summary line")
            code = 1
        elif s[1]:
            code = 1
        line = f"{s[0]} passed, {s[1]} failed, {s[2]} skipped" if s else "0 passed, 1 failed, 0 skipped"
        print(line, flush=True)
    elif opts.job == "exec":
        if res["job_rc"] not in (0, None) and not res["problems"]:
            code = res["job_rc"] if 0 < res["job_rc"] < 256 else 1
    return code


def job_matrix(opts):
    rows = []
    plan = [(s, "ours") for s in ("bookworm", "trixie", "trixie-7x")] + [("trixie-7x", "in-tree")]
    if opts.suites:
        plan = [p for p in plan if p[0] in opts.suites.split(",")]
    if not opts.debs:
        # One build of the packages for every row, even if the tree changes meanwhile.
        debs = build_debs()
        if debs is None:
            die("matrix needs our packages (debian/)")
        opts.debs = str(debs[0].parent)
    if not opts.no_i386 and not getattr(opts, "i386_dir", None):
        # Likewise one build of the i386 suite.
        d = build_i386_suite()
        opts.i386_dir = str(d) if d else None
    for suite, driver in plan:
        o = argparse.Namespace(**vars(opts))
        o.suite, o.driver, o.job = suite, driver, "test"
        log(f"matrix: {suite} / {driver}")
        t = time.monotonic()
        try:
            image, debs, _ = prepare(o, suite)
            if debs is None:
                die("matrix needs our packages (debian/)")
            res = run_guest("test", suite, o, debs, image=image)
            code, reasons = verdict(res)
            s = res["summary"]
            if s is None or s[1]:
                code = 1
            rows.append((suite, res["kernel"], driver, s, "clean" if not res["problems"] else "; ".join(res["problems"]),
                         fmt_secs(time.monotonic() - t), "PASS" if code == 0 else "FAIL", res["console"]))
        except Failure as e:
            rows.append((suite, SUITES[suite]["kernel"], driver, None, str(e).splitlines()[0],
                         fmt_secs(time.monotonic() - t), "FAIL", ""))
    print()
    hdr = ("suite", "kernel", "driver", "passed", "failed", "skipped", "kernel log", "time", "result")
    table = [hdr] + [(r[0], r[1], r[2], *(map(str, r[3]) if r[3] else ("-", "-", "-")), r[4][:60], r[5], r[6])
                     for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(hdr))]
    for row in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    tot = [sum(r[3][i] for r in rows if r[3]) for i in range(3)]
    failed_rows = sum(1 for r in rows if r[6] != "PASS")
    print(f"\n{tot[0]} passed, {tot[1] + (failed_rows if not tot[1] else 0)} failed, {tot[2]} skipped")
    return 0 if failed_rows == 0 else 1


def main(argv):
    if argv and argv[0] == "_customize":
        customize_root(Path(argv[1]), argv[2])
        return 0
    if argv and argv[0] in ("accel", "qemu"):
        return accel_mod.main(argv)
    cmd_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(
        prog="ntsync-vm",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Debian cloud guests under QEMU for ntsync: build images, install our packages "
                    "with apt, run a job, check the kernel log.",
        epilog="""jobs:
  demo      fresh guest, packages installed with apt, /dev/ntsync shown working, quick benchmark
  test      the installed conformance suite (ntsync-run-tests); prints 'N passed, N failed, N skipped'
  bench     ntsync-bench in a 1-vCPU icount guest; on trixie-7x the in-tree driver vs ours, with ratios
  exec      run a command in a guest:  ntsync-vm exec [--share DIR] -- CMD ARGS...
  shell     interactive root shell on the guest's serial console
  matrix    test on every suite (and trixie-7x with both drivers), one table
  image     just build (or refresh) the image of --suite
  accel     print the accelerator guests use on this host (kvm or tcg); --why says why
  qemu      run QEMU for the other guest scripts:  ntsync-vm qemu --console F --timeout S -- ARGS

exit codes: 0 passed, 1 failed (tests, a job command, or a kernel-log/taint/unload gate),
2 bad usage, 3 infrastructure (image build, boot, a stage that stalled).
environment: NTSYNC_CACHE (default /var/cache/ntsync), NTSYNC_ACCEL=tcg|kvm, NTSYNC_TIMEOUT_SCALE,
NTSYNC_IMAGE_MAX_AGE_DAYS (default 14).""")
    ap.add_argument("job", choices=["demo", "test", "bench", "exec", "shell", "matrix", "image"])
    ap.add_argument("--suite", choices=sorted(SUITES), default=None,
                    help="bookworm (6.1), trixie (6.12, default), trixie-7x (backports 7.x; default for bench)")
    ap.add_argument("--driver", choices=["ours", "in-tree"], default="ours",
                    help="in-tree: use the kernel's own ntsync (trixie-7x or --image only)")
    ap.add_argument("--image", metavar="FILE", help="boot this Debian genericcloud qcow2 instead of our image "
                    "(the guest then gets a network to install headers and a compiler)")
    ap.add_argument("--kernel-debs", metavar="DIR", help="install these kernel .debs into the image and boot them")
    ap.add_argument("--debs", metavar="DIR", help="install these .debs instead of building the repository's")
    ap.add_argument("--no-debs", action="store_true", help="no packages: build module/ in the guest and load it (debugging the flow)")
    ap.add_argument("--share", metavar="DIR", help="exec: folder copied into the guest (cwd of CMD) and back")
    ap.add_argument("--net", action="store_true", help="give the guest QEMU's user network")
    ap.add_argument("--smp", type=int, default=None, help="vCPUs (default 2; bench 1)")
    ap.add_argument("--mem", type=int, default=2048, help="guest memory in MiB (default 2048)")
    ap.add_argument("--timeout", type=int, default=None, help="time-out of the job stage in seconds")
    ap.add_argument("--no-icount", action="store_true", help="bench: plain TCG instead of -icount")
    ap.add_argument("--no-i386", action="store_true",
                    help="test: skip the 32-bit (i386, compat ioctl) build of the suite, which runs after the 64-bit one")
    ap.add_argument("--append", default="", help="extra kernel command line")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the image even if the cached one is fresh")
    ap.add_argument("--suites", help="matrix: comma-separated subset of suites")
    ap.add_argument("-v", "--verbose", action="store_true", help="show the job's console output")
    opts = ap.parse_args(argv)
    opts.cmd = cmd_args
    opts.cmd_string = shlex.join(cmd_args) if len(cmd_args) != 1 else cmd_args[0]
    if opts.suite is None:
        opts.suite = "trixie-7x" if opts.job == "bench" else DEFAULT_SUITE
    if opts.job == "exec" and not cmd_args:
        die("exec needs a command: ntsync-vm exec [--share DIR] -- CMD ARGS...")
    if opts.job != "exec" and cmd_args:
        die(f"'-- {' '.join(cmd_args)}': only the exec job takes a command")
    if opts.share and not Path(opts.share).is_dir():
        die(f"--share {opts.share}: not a folder")
    if opts.image and not Path(opts.image).is_file():
        die(f"--image {opts.image}: no such file; pass a Debian genericcloud qcow2 "
            "(debian-13-genericcloud-amd64.qcow2 from Debian's cloud image site)")
    if opts.kernel_debs and not Path(opts.kernel_debs).is_dir():
        die(f"--kernel-debs {opts.kernel_debs}: not a folder")
    try:
        if opts.job == "image":
            find_image(opts.suite, opts.kernel_debs, rebuild=opts.rebuild)
            return 0
        if opts.job == "matrix":
            return job_matrix(opts)
        return job_single(opts)
    except Failure as e:
        print(f"ntsync-vm: {e}", file=sys.stderr, flush=True)
        return e.code
    except KeyboardInterrupt:
        print("ntsync-vm: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
