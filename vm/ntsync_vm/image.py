"""Cloud guest disk images: a Debian root (roots.mmdebstrap), customised, on an MBR disk
with its own GRUB, as Debian's genericcloud images are; cached per suite and recipe."""

import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from . import lock, roots, suites
from .util import VM_DIR, Failure, cache, die, ensure_host_tools, fmt_secs, log, require_root, run

IMAGE_RECIPE = "6"  # 6: no file of the image is named *ntsync* (a neutral autopkgtest testbed)

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


def image_key(suite, extra_debs):
    spec = suites.SUITES[suite]
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
    d = cache() / "images" / f"{suite}-{key}"
    return {"dir": d, "disk": d / "disk.qcow2", "kernel": d / "vmlinuz", "initrd": d / "initrd.img",
            "info": d / "image.json"}


def image_is_fresh(paths):
    if not all(paths[k].exists() for k in ("disk", "kernel", "initrd")):
        return False, "not built yet"
    why = roots.stale(paths["info"])
    return why is None, why or ""


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
        with lock.Locked(cache() / "images" / f".{suite}.lock", f"another ntsync-vm building the {suite} image"):
            fresh2, why = image_is_fresh(paths)
            if not (fresh2 and (not rebuild or not fresh)):
                log(f"image {suite}: {'rebuild requested' if rebuild else why}; building")
                return paths, build_image(suite, paths, extra)
    info = json.loads(paths["info"].read_text())
    log(f"image {suite}: cached {paths['disk']} (kernel {info.get('kernel_release')})")
    return paths, info


GUEST_FILES = {
    "etc/fstab": "LABEL=ntsync-root / ext4 rw,discard,errors=remount-ro 0 1\n",
    "etc/hosts": "127.0.0.1 localhost\n127.0.1.1 ntsync-guest\n::1 localhost ip6-localhost ip6-loopback\n",
    "etc/hostname": "ntsync-guest\n",
    # NoCloud only: no probing of cloud metadata services, and no network wait.
    "etc/cloud/cloud.cfg.d/90_vm-guest.cfg": (
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
    "etc/systemd/journald.conf.d/90_vm-guest.conf": "[Journal]\nStorage=volatile\n",
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
    (root / "etc/initramfs-tools/conf.d/90_vm-guest").write_text("MODULES=list\nCOMPRESS=gzip\n")
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
    spec = suites.SUITES[suite]
    t = time.monotonic()
    work = cache() / "images" / f".build-{suite}-{os.getpid()}"
    roots.clean_stale()
    root = work / "root"
    root.mkdir(parents=True)
    logf = work / "mmdebstrap.log"
    extra_dir = work / "kernel-debs"
    extra_dir.mkdir()
    for d in extra_debs:
        shutil.copy2(d, extra_dir / d.name)
    pkgs = BASE_PACKAGES + spec["kernel_packages"]
    log(f"image {suite}: mmdebstrap {spec['release']} ({len(pkgs)} packages; log {logf})")
    # The rest runs in this tool again, while mmdebstrap has /proc, /sys and /dev mounted.
    hook = (f"env PYTHONPATH={VM_DIR} /usr/bin/python3 -m ntsync_vm _customize \"$1\" {extra_dir}")
    try:
        roots.mmdebstrap(spec["release"], root, spec["sources"], pkgs, logf, variant="minbase",
                         hooks=[hook], keep_debs=True)
    except Failure as e:
        raise Failure(f"image {suite}: {e}")
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
    for old in (cache() / "images").glob(f"{suite}-*"):
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
