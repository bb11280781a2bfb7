"""Cloud guest disk images: a Debian root (roots.mmdebstrap), customised, on an MBR disk
with its own GRUB, as Debian's genericcloud images are; cached per suite and recipe.
An autopkgtest testbed image (testbed=True) is the same disk prepared the way
autopkgtest-build-qemu prepares one: autopkgtest's own setup-commands/setup-testbed run in the
root (a root shell on ttyS1/hvc1 for autopkgtest-virt-qemu, apt and dpkg tuned, eatmydata),
with ifupdown bringing up eth0 as that image has it, and the generic kernel flavour as there
(arches.py testbed_flavour: the cloud kernels have no 9p, autopkgtest's shared folder); then
autopkgtest-virt-qemu boots it.
A Secure Boot image (secure_boot=True) is a UEFI PC's disk instead: GPT, an EFI system
partition with Debian's signed shim, MokManager and GRUB, and the firmware to boot it
(firmware.py) beside it."""

import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import time
import uuid
import zlib
from pathlib import Path

from . import arches, firmware, lock, roots, suites
from .util import VM_DIR, Failure, Usage, cache, ensure_host_tools, fmt_secs, log, require_root, run

IMAGE_RECIPE = "6"  # 6: no file of the image is named *ntsync* (a neutral autopkgtest testbed)

# Packages of every image.  Nothing here waits for a network at boot:
# no ifupdown/networkd config is enabled, cloud-init has network config disabled.
BASE_PACKAGES = [
    "systemd-sysv", "udev", "kmod", "initramfs-tools", "dbus", "procps", "iproute2",
    "netbase", "e2fsprogs", "util-linux", "less", "ca-certificates",
    "cloud-init", "cloud-guest-utils",
    "dkms", "gcc", "make", "libc6-dev", "pkgconf",
    "libcmocka0",
]
# Besides them: the architecture's own bootloader (arch.grub_packages: BIOS GRUB in the MBR
# gap on a PC, as on Debian's genericcloud) and, in a Secure Boot image, Debian's
# Microsoft-signed shim, MokManager, GRUB signed by Debian and mokutil, as on an installed
# UEFI PC (arch.secure_boot.packages). The cloud kernel of every suite is the signed one already.
# An autopkgtest testbed also gets what autopkgtest-build-qemu installs besides the kernel:
# ifupdown (setup-testbed writes eth0's DHCP stanza for it), and a DHCP client for it; and
# apt-utils, whose apt-ftparchive autopkgtest runs in the testbed to serve it the packages under
# test (it would install it with apt, but an image of mmdebstrap has no package lists).
TESTBED_PACKAGES = ["ifupdown", "isc-dhcp-client", "apt-utils"]
SETUP_TESTBED = Path("/usr/share/autopkgtest/setup-commands/setup-testbed")
# The customize hooks of a testbed image, after customize_root: setup-testbed as
# autopkgtest-build-qemu runs it (AUTOPKGTEST_BUILD_QEMU=1: virtio_console added to the
# initramfs, which it updates), keeping the suite's sources; and the 9p modules loaded at boot
# (autopkgtest-virt-qemu gives the guest 10 s to mount its shared folder over 9p: under TCG,
# loading them on demand can take longer).
TESTBED_HOOKS = (
    f"env AUTOPKGTEST_BUILD_QEMU=1 AUTOPKGTEST_KEEP_APT_SOURCES=1 {SETUP_TESTBED} \"$1\"",
    'printf "9p\\n9pnet_virtio\\n" > "$1/etc/modules-load.d/autopkgtest-9p.conf"',
)


def kernel_cmdline(arch):
    """The kernel command line of every cloud guest: the root by label, the serial console."""
    return f"root=LABEL=ntsync-root rw {arch.console_arg(speed=True)} net.ifnames=0 panic=-1"


def packages(suite, arch, secure_boot=False, testbed=False):
    """Every package of an image of SUITE for ARCH."""
    if testbed and not arch.testbed_flavour:
        raise Usage(f"{arch.name}: no testbed_flavour in arches.py (the kernel of autopkgtest's testbed, with 9p)")
    return (BASE_PACKAGES + list(arch.grub_packages)
            + suite.kernel_packages(arch, arch.testbed_flavour if testbed else None)
            + (list(firmware.spec(arch).packages) if secure_boot else [])
            + (TESTBED_PACKAGES if testbed else []))


def image_key(suite, extra_debs, secure_boot=False, arch=None, testbed=False):
    spec = suites.SUITES[suite]
    arch = arch or arches.get()
    h = hashlib.sha256()
    h.update(IMAGE_RECIPE.encode())
    for part in (spec.sources, packages(spec, arch, secure_boot, testbed)):
        h.update(("\n".join(part) + "\n--\n").encode())
    h.update(json.dumps([guest_files(arch), MASKED_UNITS, kernel_cmdline(arch)], sort_keys=True).encode())
    h.update(inspect.getsource(customize_root).encode())
    if arch.boot == "efi" and not secure_boot:
        h.update(repr(arch.uefi).encode())
        for f in (make_uefi_disk, write_gpt, uefi_grub_cfg):
            h.update(inspect.getsource(f).encode())
    if secure_boot:
        h.update(repr(firmware.spec(arch)).encode())
        for f in (make_efi_disk, write_gpt, efi_grub_cfg):
            h.update(inspect.getsource(f).encode())
    if testbed:
        h.update(b"testbed" + "\n".join(TESTBED_HOOKS).encode()
                 + (SETUP_TESTBED.read_bytes() if SETUP_TESTBED.exists() else b""))
    for deb in extra_debs:
        h.update(deb.name.encode())
        h.update(str(deb.stat().st_size).encode())
    return h.hexdigest()[:12]


def image_name(suite, secure_boot=False, arch=None, testbed=False):
    """SUITE, SUITE-sb (Secure Boot), SUITE-testbed (autopkgtest's), SUITE-ARCH for another
    architecture than the default."""
    name = suite if arch is None or arch.name == arches.DEFAULT else f"{suite}-{arch.name}"
    return f"{name}-sb" if secure_boot else f"{name}-testbed" if testbed else name


def image_paths(suite, key, secure_boot=False, arch=None, testbed=False):
    d = cache() / "images" / f"{image_name(suite, secure_boot, arch, testbed)}-{key}"
    paths = {"dir": d, "disk": d / "disk.qcow2", "kernel": d / "vmlinuz", "initrd": d / "initrd.img",
             "info": d / "image.json"}
    if secure_boot:
        paths.update(code=d / "efi-code.fd", vars=d / "efi-vars.fd", vars_mok=d / "efi-vars-mok.fd",
                     mok=d / "dkms-mok.pub")
    return paths


def image_is_fresh(paths):
    if not all(paths[k].exists() for k in ("disk", "kernel", "initrd", "code", "vars", "vars_mok") if k in paths):
        return False, "not built yet"
    why = roots.stale(paths["info"])
    return why is None, why or ""


def find_image(suite, kernel_debs_dir=None, rebuild=False, secure_boot=False, arch=None, testbed=False):
    """(paths, info) of the image of SUITE for ARCH, built when missing or stale. TESTBED: the
    autopkgtest testbed image (setup-testbed run in it)."""
    arch = arch or arches.get()
    extra = sorted(Path(kernel_debs_dir).glob("*.deb")) if kernel_debs_dir else []
    if kernel_debs_dir and not extra:
        raise Usage(f"--kernel-debs {kernel_debs_dir}: no .deb files there; point it at a folder of "
                    "linux-image-*.deb (and linux-headers-*.deb) files")
    if kernel_debs_dir and secure_boot:
        raise Usage("--kernel-debs with --secure-boot: our own kernel builds are not signed by Debian, "
                    "shim would refuse them; use the suite's signed kernel")
    if testbed and (secure_boot or extra):
        raise Usage("an autopkgtest testbed image is the suite's plain cloud image: no --secure-boot, "
                    "no --kernel-debs")
    key = image_key(suite, extra, secure_boot, arch, testbed)
    paths = image_paths(suite, key, secure_boot, arch, testbed)
    name = image_name(suite, secure_boot, arch, testbed)
    fresh, why = image_is_fresh(paths)
    if not (fresh and not rebuild):
        # One build per image at a time; whoever waited uses the image just built.
        with lock.Locked(cache() / "images" / f".{name}.lock", f"another ntsync-vm building the {name} image"):
            fresh2, why = image_is_fresh(paths)
            if not (fresh2 and (not rebuild or not fresh)):
                log(f"image {name}: {'rebuild requested' if rebuild else why}; building")
                return paths, build_image(suite, paths, extra, secure_boot, arch, testbed)
    info = json.loads(paths["info"].read_text())
    log(f"image {name}: cached {paths['disk']} (kernel {info.get('kernel_release')})")
    return paths, info


def guest_files(arch):
    """The files every image gets, written over what the packages installed."""
    return {**GUEST_FILES, **{
        # `ntsync-vm shell`: root shell on the serial console without a password.
        f"etc/systemd/system/serial-getty@{arch.console}.service.d/autologin.conf": (
            "[Service]\nExecStart=\n"
            "ExecStart=-/sbin/agetty -o '-p -f -- \\\\u' --keep-baud --autologin root 115200,57600,38400,9600 - "
            "$TERM\n"),
    }}


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
    # A journal in memory is enough and spares the disk.
    "etc/systemd/journald.conf.d/90_vm-guest.conf": "[Journal]\nStorage=volatile\n",
}
MASKED_UNITS = [
    "apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "e2scrub_reap.service",
    "fstrim.timer", "man-db.timer", "dpkg-db-backup.timer", "systemd-networkd-wait-online.service",
]


def customize_root(root, extra_dir, arch_name):
    extra_debs = sorted(Path(extra_dir).glob("*.deb"))
    for rel, text in guest_files(arches.get(arch_name)).items():
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
        # apt, not dpkg -i: a foreign kernel's headers need this suite's packages too
        # (bookworm's 6.1 in trixie: trixie's gcc-12).
        run(["chroot", str(root), "sh", "-c", "apt-get install -y -q --no-install-recommends "
             "-o Acquire::Check-Valid-Until=false /tmp/kernel-debs/*.deb"], env=env)
        shutil.rmtree(dst)
    # MODULES=dep in a chroot would read the host's hardware: list what a QEMU guest needs.
    (root / "etc/initramfs-tools/conf.d/90_vm-guest").write_text("MODULES=list\nCOMPRESS=gzip\n")
    with open(root / "etc/initramfs-tools/modules", "a") as f:
        f.write("virtio_pci\nvirtio_blk\next4\ncrc32c_generic\n")
    run(["chroot", str(root), "update-initramfs", "-u", "-k", "all"], stdout=subprocess.DEVNULL)
    for d in (root / "var/cache/apt/archives").glob("*.deb"):
        d.unlink()


def deb_kernel_releases(debs):
    """The kernel releases whose linux-image packages are among DEBS (their file names)."""
    return [m.group(1) for d in debs
            if (m := re.match(r"linux-image-(\d[^_]*)_", Path(d).name)) and not m.group(1).endswith("-dbg")]


def newest_kernel(root, extra_debs=(), arch=None):
    """Pick the kernel the image boots: a --kernel-debs kernel (it is why it was added,
    even when it is older than the distribution's: bookworm's 6.1 under trixie's userland),
    else the newest kernel image with an initrd."""
    image = (arch or arches.get()).kernel_image

    def vkey(name):
        return [int(x) if x.isdigit() else x for x in re.split(r"[.\-+~]", name)]
    kernels = []
    for vm in (root / "boot").glob(f"{image}-*"):
        rel = vm.name[len(image) + 1:]
        if (root / "boot" / f"initrd.img-{rel}").exists():
            kernels.append(rel)
    if not kernels:
        raise Failure(f"image build: no /boot/{image}-* with an initrd in the new root")
    wanted = deb_kernel_releases(extra_debs)
    if wanted:
        have = [r for r in kernels if r in wanted]
        if not have:
            raise Failure(f"image build: the --kernel-debs kernel {', '.join(wanted)} has no {image} with an "
                          f"initrd in the new root (it has {', '.join(sorted(kernels))})")
        kernels = have
    kernels.sort(key=lambda r: (("cloud" not in r and "debug" in r) or "kasan" in r, vkey(r)))
    return kernels[-1]


def foreign_kernel_debs(suite, host_suite, arch=None):
    """SUITE's cloud kernel as .debs for an image of HOST_SUITE (--kernel-debs): the image
    and headers, and what DKMS needs to build for it that HOST_SUITE lacks (for bookworm's
    6.1 in trixie: its kbuild, and gcc-12, which built that kernel). Fetched once with a
    private apt, cached under $NTSYNC_CACHE/kernel-debs/SUITE-for-HOST_SUITE, aged like images."""
    out = cache() / "kernel-debs" / f"{suite}-for-{host_suite}"
    if not roots.stale(out / ".complete"):
        return out
    log(f"kernel-debs: fetching {suite}'s cloud kernel for a {host_suite} image")
    meta = (arch or arches.get()).kernel_packages()
    mine = roots.Apt(cache() / "kernel-debs" / f".apt-{suite}", suites.SUITES[suite].sources)
    host = roots.Apt(cache() / "kernel-debs" / f".apt-{host_suite}", suites.SUITES[host_suite].sources)
    want, todo = [], list(meta)
    while todo:
        p = todo.pop()
        if p in want:
            continue
        want.append(p)
        todo += [d for d in mine.depends(p) if not host.has(d)]
    # The meta-packages only lead to the real ones; installed, they would pull the host's.
    want = [p for p in want if p not in meta]
    debs = mine.download(want)
    roots.safe_rm(out)
    out.mkdir(parents=True)
    for d in debs:
        shutil.copy2(d, out / d.name)
    shutil.rmtree(mine.dir, ignore_errors=True)
    shutil.rmtree(host.dir, ignore_errors=True)
    (out / ".complete").write_text(" ".join(want) + "\n")
    log(f"kernel-debs: {out}: {' '.join(d.name for d in debs)}")
    return out


DISK_BYTES = DISK_BYTES = 12 * 1024 ** 3
PART_START = 2048  # sectors: the first partition at 1 MiB leaves the MBR gap for GRUB's core.img
GRUB_MODULES = ["biosdisk", "part_msdos", "ext2", "normal", "linux", "configfile", "echo", "test", "search"]


def make_disk(root, raw, krel, arch):
    """A disk that boots by itself like Debian's genericcloud image: an MBR partition table
    with one ext4 partition (label ntsync-root) at 1 MiB, GRUB's boot.img in the MBR and its
    core.img in the gap after it (the layout grub-install makes, written without loop devices).
    ntsync-vm itself boots the kernel and initrd directly (faster, and --append works);
    `--image disk.qcow2` goes through SeaBIOS and GRUB like a user's cloud image."""
    if arch.boot != "bios-grub":
        raise Failure(f"image build: {arch.name} boots by '{arch.boot}', which make_disk does not write yet")
    cmdline = kernel_cmdline(arch)
    platform = arch.grub_platform
    grub = root / "boot/grub"
    (grub / platform).mkdir(parents=True, exist_ok=True)
    for mod in (root / "usr/lib/grub" / platform).iterdir():
        if mod.suffix in (".mod", ".lst"):
            shutil.copy2(mod, grub / platform / mod.name)
    (grub / "grub.cfg").write_text(
        "# ntsync-vm image: boot the newest kernel at once, console on the serial port\n"
        "serial --unit=0 --speed=115200\nterminal_input serial console\nterminal_output serial console\n"
        "set timeout=0\n"
        f"menuentry 'Debian GNU/Linux, {krel}' {{\n"
        f"  linux /boot/{arch.kernel_image}-{krel} {cmdline}\n"
        f"  initrd /boot/initrd.img-{krel}\n"
        "}\n")
    run(["chroot", str(root), "grub-mkimage", "-O", platform, "-o", f"/boot/grub/{platform}/core.img",
         "-p", "(hd0,msdos1)/boot/grub", *GRUB_MODULES, "serial", "terminal"])
    core = (grub / platform / "core.img").read_bytes()
    boot = (root / "usr/lib/grub" / platform / "boot.img").read_bytes()
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


ESP_GUID = "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"    # EFI system partition
LINUX_GUID = "0fc63daf-8483-4772-8e79-3d69d8477de4"  # Linux filesystem data
ESP_MIB = 64


def write_gpt(raw, parts):
    """A GUID partition table on disk file RAW (whose size is fixed): a protective MBR, the
    primary header and entry array at LBA 1-33, the backup ones in the last 33 sectors.
    PARTS: [(type GUID, name, first LBA, last LBA inclusive)], as UEFI 2.x, chapter 5."""
    sectors = Path(raw).stat().st_size // 512
    last = sectors - 1
    entries = bytearray(128 * 128)
    for i, (ptype, name, first, end) in enumerate(parts):
        if not 34 <= first <= end <= last - 33:
            raise Failure(f"GPT: partition {name} at {first}-{end} does not fit a disk of {sectors} sectors")
        e = (uuid.UUID(ptype).bytes_le + uuid.uuid4().bytes_le + first.to_bytes(8, "little")
             + end.to_bytes(8, "little") + bytes(8) + name.encode("utf-16-le").ljust(72, b"\0"))
        entries[i * 128:(i + 1) * 128] = e
    entries_crc = zlib.crc32(entries)
    disk_guid = uuid.uuid4().bytes_le

    def header(mine, other, entries_lba):
        h = bytearray(b"EFI PART" + (0x00010000).to_bytes(4, "little") + (92).to_bytes(4, "little")
                      + bytes(8) + mine.to_bytes(8, "little") + other.to_bytes(8, "little")
                      + (34).to_bytes(8, "little") + (last - 33).to_bytes(8, "little") + disk_guid
                      + entries_lba.to_bytes(8, "little") + (128).to_bytes(4, "little")
                      + (128).to_bytes(4, "little") + entries_crc.to_bytes(4, "little"))
        h[16:20] = zlib.crc32(h).to_bytes(4, "little")
        return bytes(h).ljust(512, b"\0")

    pmbr = (bytes(446) + bytes([0, 0, 2, 0, 0xee, 0xff, 0xff, 0xff]) + (1).to_bytes(4, "little")
            + min(sectors - 1, 0xffffffff).to_bytes(4, "little") + bytes(48) + b"\x55\xaa")
    with open(raw, "r+b") as f:
        f.write(pmbr + header(1, last, 2) + entries)
        f.seek((last - 32) * 512)
        f.write(entries + header(last, 1, last - 32))


def efi_grub_cfg(krel, arch):
    """The grub.cfg Debian's signed GRUB reads from the ESP (its prefix is /EFI/debian; with
    shim started from the removable path, /EFI/BOOT is where it finds itself)."""
    cmdline = kernel_cmdline(arch)
    return ("# ntsync-vm Secure Boot image: the newest kernel at once, console on the serial port\n"
            "serial --unit=0 --speed=115200\nterminal_input serial console\nterminal_output serial console\n"
            "set timeout=0\n"
            "search --no-floppy --label ntsync-root --set root\n"
            f"menuentry 'Debian GNU/Linux, {krel} (Secure Boot)' {{\n"
            f"  linux /boot/{arch.kernel_image}-{krel} {cmdline}\n"
            f"  initrd /boot/initrd.img-{krel}\n"
            "}\n")


def make_efi_disk(root, raw, krel, work, arch):
    """A UEFI PC's disk without loop devices: GPT; an EFI system partition (FAT, 64 MiB)
    holding Debian's signed shim as the removable-media boot file /EFI/BOOT/NAME (the
    architecture's), with MokManager and Debian's signed GRUB beside it; the root file system
    (ext4, label ntsync-root) after it. Firmware -> shim (Microsoft's signature) -> GRUB and the
    kernel (Debian's, checked by shim) -> modules (the kernel's keys and MokList)."""
    sb = firmware.spec(arch)
    files = dict(sb.files)
    for name, rel in files.items():
        if not (root / rel).is_file():
            raise Failure(f"image build: no {rel} in the root (packages {', '.join(sb.packages)})")
    esp_first = PART_START
    esp_last = esp_first + ESP_MIB * 2048 - 1
    root_first = esp_last + 1
    sectors = DISK_BYTES // 512
    root_last = sectors - 2048 - 1  # 1 MiB before the end: room for the backup GPT
    esp = work / "esp.img"
    esp.unlink(missing_ok=True)
    run(["mkfs.vfat", "-F", "32", "-n", "EFI", "-C", str(esp), str(ESP_MIB * 1024)], stdout=subprocess.DEVNULL)
    cfg = work / "grub.cfg"
    cfg.write_text(efi_grub_cfg(krel, arch))
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    run(["mmd", "-i", str(esp), "::/EFI", "::/EFI/BOOT", "::/EFI/debian"], env=env)
    for name, rel in files.items():
        run(["mcopy", "-i", str(esp), str(root / rel), f"::/EFI/BOOT/{name}"], env=env)
    for d in ("BOOT", "debian"):
        run(["mcopy", "-i", str(esp), str(cfg), f"::/EFI/{d}/grub.cfg"], env=env)
    with open(raw, "wb") as f:
        f.truncate(DISK_BYTES)
    run(["mkfs.ext4", "-q", "-F", "-L", "ntsync-root", "-E", f"root_owner=0:0,offset={root_first * 512}",
         "-d", str(root), str(raw), str((root_last - root_first + 1) * 512 // 4096)])
    with open(raw, "r+b") as f, open(esp, "rb") as e:
        f.seek(esp_first * 512)
        shutil.copyfileobj(e, f)
    esp.unlink()
    write_gpt(raw, [(ESP_GUID, "EFI system partition", esp_first, esp_last),
                    (LINUX_GUID, "ntsync-root", root_first, root_last)])


# The GRUB modules of an "efi" disk's boot program: the GPT and its FAT EFI system partition,
# the ext4 root found by label, the kernel (gzio: Debian's vmlinuz of some architectures is gzip-compressed)
UEFI_GRUB_MODULES = ["part_gpt", "fat", "ext2", "normal", "linux", "gzio", "configfile", "echo", "test",
                     "search", "search_label"]


def uefi_grub_cfg(krel, arch):
    """The grub.cfg of an "efi" disk, beside GRUB on the EFI system partition: the root by label,
    the newest kernel at once. No serial commands: GRUB writes to the firmware's console, which
    the UEFI firmware of a QEMU machine puts on the serial port."""
    return ("# ntsync-vm image: boot the newest kernel at once (the firmware's console is the serial port)\n"
            "set timeout=0\n"
            "search --no-floppy --label ntsync-root --set root\n"
            f"menuentry 'Debian GNU/Linux, {krel}' {{\n"
            f"  linux /boot/{arch.kernel_image}-{krel} {kernel_cmdline(arch)}\n"
            f"  initrd /boot/initrd.img-{krel}\n"
            "}\n")


def make_uefi_disk(root, raw, krel, work, arch):
    """A disk that boots by itself through UEFI (arch.boot "efi", no Secure Boot), as Debian's
    genericcloud images of UEFI machines do, without loop devices: GPT; an EFI system partition
    (FAT, ESP_MIB) whose removable-media boot program /EFI/BOOT/arch.efi_boot_file is GRUB made
    by the root's own grub-mkimage (prefix /EFI/BOOT, where its grub.cfg is); the root file
    system (ext4, label ntsync-root) after it. ntsync-vm boots the kernel and initrd directly,
    as for a bios-grub disk; --disk-boot (and --image) go through the firmware (arch.uefi) and
    GRUB."""
    if not arch.efi_boot_file:
        raise Failure(f"image build: {arch.name} has no efi_boot_file in arches.py (the removable-media boot file)")
    platform = arch.grub_platform
    run(["chroot", str(root), "grub-mkimage", "-O", platform, "-o", "/tmp/ntsync-grub.efi",
         "-p", "/EFI/BOOT", *UEFI_GRUB_MODULES])
    grub_efi = root / "tmp/ntsync-grub.efi"
    esp_first = PART_START
    esp_last = esp_first + ESP_MIB * 2048 - 1
    root_first = esp_last + 1
    root_last = DISK_BYTES // 512 - 2048 - 1  # 1 MiB before the end: room for the backup GPT
    esp = work / "esp.img"
    esp.unlink(missing_ok=True)
    run(["mkfs.vfat", "-F", "32", "-n", "EFI", "-C", str(esp), str(ESP_MIB * 1024)], stdout=subprocess.DEVNULL)
    cfg = work / "grub.cfg"
    cfg.write_text(uefi_grub_cfg(krel, arch))
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    run(["mmd", "-i", str(esp), "::/EFI", "::/EFI/BOOT"], env=env)
    run(["mcopy", "-i", str(esp), str(grub_efi), f"::/EFI/BOOT/{arch.efi_boot_file}"], env=env)
    run(["mcopy", "-i", str(esp), str(cfg), "::/EFI/BOOT/grub.cfg"], env=env)
    grub_efi.unlink()
    with open(raw, "wb") as f:
        f.truncate(DISK_BYTES)
    run(["mkfs.ext4", "-q", "-F", "-L", "ntsync-root", "-E", f"root_owner=0:0,offset={root_first * 512}",
         "-d", str(root), str(raw), str((root_last - root_first + 1) * 512 // 4096)])
    with open(raw, "r+b") as f, open(esp, "rb") as e:
        f.seek(esp_first * 512)
        shutil.copyfileobj(e, f)
    esp.unlink()
    write_gpt(raw, [(ESP_GUID, "EFI system partition", esp_first, esp_last),
                    (LINUX_GUID, "ntsync-root", root_first, root_last)])


# A foreign root runs every maintainer script under qemu-user, and the kernel's and
# initramfs-tools' each build an initramfs of every module (MODULES=most) before the customize
# hook makes the one the image boots: the small one from the start (minutes saved per build).
FOREIGN_ESSENTIAL_HOOKS = (
    'mkdir -p "$1/etc/initramfs-tools/conf.d" && printf "MODULES=list\\nCOMPRESS=gzip\\n" '
    '> "$1/etc/initramfs-tools/conf.d/90_vm-guest"',
)


def build_image(suite, paths, extra_debs, secure_boot=False, arch=None, testbed=False):
    require_root("building an image")
    arch = arch or arches.get()
    efi = secure_boot or arch.boot == "efi"
    ensure_host_tools(["mmdebstrap", "qemu-img", "mkfs.ext4"] + (["mkfs.vfat", "mcopy"] if efi else [])
                      + (["autopkgtest-virt-qemu"] if testbed else []))
    spec = suites.SUITES[suite]
    # a foreign root (another architecture than the host's): mmdebstrap through qemu-user
    foreign = [arch.debian_arch] if arch.uname != os.uname().machine else []
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
    pkgs = packages(spec, arch, secure_boot, testbed)
    name = image_name(suite, secure_boot, arch, testbed)
    log(f"image {name}: mmdebstrap {spec.release} ({len(pkgs)} packages; log {logf})")
    # The rest runs in this tool again, while mmdebstrap has /proc, /sys and /dev mounted.
    hooks = [f"env PYTHONPATH={VM_DIR} /usr/bin/python3 -m ntsync_vm _customize \"$1\" {extra_dir} {arch.name}"]
    if testbed:
        hooks += TESTBED_HOOKS
    try:
        roots.mmdebstrap(spec.release, root, spec.sources, pkgs, logf, variant="minbase",
                         hooks=hooks, keep_debs=True, architectures=foreign,
                         essential_hooks=FOREIGN_ESSENTIAL_HOOKS if foreign else (),
                         timeout=3600 if foreign else 1800)
    except Failure as e:
        raise Failure(f"image {name}: {e}")
    log(f"image {name}: root ready in {fmt_secs(time.monotonic() - t)}")
    krel = newest_kernel(root, extra_debs, arch)
    work_kernel, work_initrd = work / "vmlinuz", work / "initrd.img"
    shutil.copy2(root / "boot" / f"{arch.kernel_image}-{krel}", work_kernel)
    shutil.copy2(root / "boot" / f"initrd.img-{krel}", work_initrd)
    raw = work / "disk.raw"
    fw = {}
    if secure_boot:
        log(f"image {name}: GPT disk, EFI system partition with signed shim and GRUB, mkfs.ext4 -d "
            f"(kernel {krel})")
        make_efi_disk(root, raw, krel, work, arch)
        # DKMS's signing key, made at image build (customize_root): the key case b enrolls.
        shutil.copy2(root / "var/lib/dkms/mok.pub", work / "dkms-mok.pub")
        fw = firmware.install(work, (work / "dkms-mok.pub").read_bytes(), arch)
    elif arch.boot == "efi":
        log(f"image {name}: GPT disk, EFI system partition with GRUB ({arch.efi_boot_file}), mkfs.ext4 -d "
            f"(kernel {krel})")
        make_uefi_disk(root, raw, krel, work, arch)
    else:
        log(f"image {name}: MBR disk with GRUB, mkfs.ext4 -d (kernel {krel})")
        make_disk(root, raw, krel, arch)
    qcow = work / "disk.qcow2"
    run(["qemu-img", "convert", "-O", "qcow2", str(raw), str(qcow)])
    raw.unlink()
    shutil.rmtree(root)
    info = {"suite": suite, "arch": arch.name, "kernel_release": krel, "testbed": testbed,
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.monotonic() - t, 1), "packages": pkgs,
            "kernel_debs": [d.name for d in extra_debs]}
    if secure_boot:
        info.update(secure_boot=True, ovmf=fw["version"], firmware=[arch.secure_boot.code, arch.secure_boot.vars])
    (work / "image.json").write_text(json.dumps(info, indent=1) + "\n")
    if paths["dir"].exists():
        shutil.rmtree(paths["dir"])
    paths["dir"].parent.mkdir(parents=True, exist_ok=True)
    work.rename(paths["dir"])
    # Older images of the same suite with the same extra kernel are stale now; an image
    # with other --kernel-debs (or none) stays, or the two would rebuild each other.
    for old in (cache() / "images").glob(f"{name}-*"):
        if old != paths["dir"] and old.is_dir() and re.fullmatch(rf"{re.escape(name)}-[0-9a-f]{{12}}", old.name):
            try:
                same = json.loads((old / "image.json").read_text()).get("kernel_debs", []) == info["kernel_debs"]
            except (OSError, ValueError):
                same = True
            if same:
                shutil.rmtree(old, ignore_errors=True)
    log(f"image {name}: built {paths['disk']} in {fmt_secs(time.monotonic() - t)} "
        f"({paths['disk'].stat().st_size // 2**20} MiB)")
    return info
