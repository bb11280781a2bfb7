"""THE architecture table: everything a Debian architecture means to the launcher, as data.

One frozen Arch per Debian architecture, after kunit's qemu_configs (one QemuArchParams per
architecture, tools/testing/kunit/qemu_configs/) and virtme-ng's architectures.py (one Arch
class each): the QEMU binary, machine and CPUs, the console, the kernel's image name and
flavour packages, the firmware, how a disk boots, the cross compiler, the static programs'
cross file, the compat ABI, word size, endianness and ioctl encoding. Nothing else in
vm/ntsync_vm names an architecture (the Wine build's PE side excepted: Windows programs are
x86-64 by nature); a suite row of suites.py says which architectures it has. Adding an
architecture is one row in ARCHES.

A row may also be a kernel flavour of an architecture that needs guests and builds of its own:
arm64-16k (Debian's linux-image-arm64-16k, 16 KiB pages, what Apple-silicon machines run) is
arm64 in everything but its kernel. Its dpkg_arch names the Debian architecture (packages,
apt, the static programs, dpkg-buildpackage -a); its name keys what is its own (the kernel
fetched, the headers extracted, logs, images).
"""

import os
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Qemu:
    """How QEMU runs a guest of the architecture."""
    binary: str                 # qemu-system-*
    package: str                # the Debian package that has it
    machine: str                # -machine
    cpu_tcg: str = "max"        # -cpu under TCG
    cpu_kvm: str = "host"       # -cpu under KVM (a host of the same architecture)
    cpu_bench: str = "max"      # a fixed model for figures that must repeat (-icount)
    virtio: str = "pci"         # the virtio transport: virtio-blk-pci, virtio-blk-ccw, ...
    max_smp: int = 0            # the most vCPUs a guest boots with (0: no limit)
    max_mem: int = 0            # the most MiB a guest boots with (0: no limit)
    # tcg_slow: how many times longer a cloud guest's stages take emulated on another
    # architecture's host than the host's own guests under TCG: its stage time-outs are
    # multiplied by it (DKMS's build, cloud-init's Python)
    tcg_slow: float = 1.0


@dataclass(frozen=True)
class SecureBoot:
    """A UEFI PC with Secure Boot: Debian's Microsoft-signed shim, MokManager and signed GRUB
    (paths in the root of the image), the firmware that checks them, from FIRMWARE_PACKAGES."""
    packages: tuple             # in the image: shim, MokManager, signed GRUB, mokutil
    removable: str              # the removable-media boot file name, /EFI/BOOT/NAME
    files: tuple                # (name on the ESP, path in the root): shim first
    firmware_packages: tuple    # of the firmware root (and virt-fw-vars to enroll keys)
    code: str                   # firmware code, read-only flash (path in the firmware root)
    vars: str                   # its variable store: Microsoft's keys, Secure Boot on
    smm: bool = True            # the variable services run in SMM: -machine ...,smm=on


@dataclass(frozen=True)
class Uefi:
    """The UEFI firmware an "efi" disk boots through (no Secure Boot): Debian's build for the
    machine, from PACKAGES (arch all) in the firmware root (firmware.py), CODE read-only flash
    and VARS the variable store template (paths in that root)."""
    packages: tuple
    code: str
    vars: str


@dataclass(frozen=True)
class Arch:
    name: str                   # Debian's name (dpkg --print-architecture)
    uname: str                  # the kernel's (uname -m): KVM only on a host of the same
    gnu_type: str               # GNU triplet: the cross compilers are gcc-N-<this, _ as ->
    kernel_flavour: str         # linux-image-FLAVOUR, linux-headers-FLAVOUR
    kernel_image: str           # /boot/IMAGE-RELEASE
    kernel_arch: str            # ARCH= of a kernel tree
    kernel_build_image: str     # the bootable image a kernel build leaves (debug kernels)
    defconfig_extra: tuple      # config targets after defconfig (a guest kernel's needs)
    console: str                # the serial console's device
    console_speed: str          # its console= options (baud rate), "" for none
    qemu: Qemu                  # None: no QEMU machine runs its kernels (build_only says why)
    # boot: how an image's disk boots by itself: "bios-grub" (MBR, GRUB), "efi" (GPT, an EFI
    # system partition with GRUB as the removable-media program /EFI/BOOT/efi_boot_file, booted
    # by the uefi firmware; image.py writes it for the rows that have both) or "none"
    # (initramfs boots with -kernel only)
    boot: str
    grub_platform: str          # GRUB's platform of that boot (usr/lib/grub/PLATFORM), or None
    grub_packages: tuple        # the image's packages for it
    secure_boot: SecureBoot     # None: no Secure Boot guest for this architecture
    static_cross: str           # meson cross file of the static guest programs
    compat: str                 # the 32-bit ABI its kernels run (compat ioctls), or None
    compat_cross: str           # that ABI's static cross file, or None
    word_bits: int
    endian: str                 # "little" | "big"
    ioc_encoding: str           # "generic" (_IOC_WRITE 1, 2 direction bits) | "powerpc" (4, 3 bits)
    # kbuild_flavour: the headers the W=1 matrix builds against (None: kernel_flavour); cloud-*
    # flavours exist only on amd64 and arm64
    kbuild_flavour: str = None
    # testbed_flavour: the kernel of autopkgtest's testbed image (image.py, testbed=True): the
    # generic flavour, as autopkgtest-build-qemu installs; autopkgtest-virt-qemu shares its
    # folder with the guest over 9p, which the cloud flavours leave out (no CONFIG_NET_9P)
    testbed_flavour: str = None
    build_only: str = None      # why no guest of it boots (then qemu is None): the W=1 matrix only
    # check: the initramfs jobs ./check boots on this architecture when it is not the host's
    # (on the suites whose rows name the job), only where the suite's cross root is cached
    # (`ntsync-vm suites --job JOB --cross`): cold, a cross root costs many minutes
    check: tuple = ()
    # qemu_user: the static user-mode QEMU (qemu-user-static) that runs this architecture's
    # programs on another through binfmt_misc: how a foreign root (cloud image) is built
    qemu_user: str = None
    efi_boot_file: str = None   # the removable-media boot file of an "efi" disk (BOOTAA64.EFI)
    uefi: Uefi = None           # the firmware that boots an "efi" disk (None: no such disk yet)
    # dpkg_arch: the Debian architecture of a row that is a kernel flavour of one (arm64-16k:
    # arm64); None: the row's name is (debian_arch)
    dpkg_arch: str = None

    @property
    def debian_arch(self):
        """The Debian architecture (dpkg --print-architecture) of this row's packages and programs."""
        return self.dpkg_arch or self.name

    def kernel_packages(self, pin="", flavour=None):
        """The suite's kernel and headers for this architecture (PIN: "/trixie-backports";
        FLAVOUR: another than the guests' kernel_flavour)."""
        f = flavour or self.kernel_flavour
        return [f"linux-image-{f}{pin}", f"linux-headers-{f}{pin}"]

    def headers_glob(self):
        """The headers folder of this flavour under /usr/src."""
        return f"linux-headers-*-{self.kernel_flavour}"

    @property
    def headers_flavour(self):
        """The flavour of the headers the W=1 matrix builds against (linux-headers-FLAVOUR)."""
        return self.kbuild_flavour or self.kernel_flavour

    @property
    def cross_compile(self):
        """CROSS_COMPILE= of a kernel build for this architecture on another (bookworm's
        header packages leave it to the caller; trixie's and later set it themselves)."""
        return f"{self.gnu_type}-"

    def cross_make_flags(self):
        """make's ARCH= and CROSS_COMPILE= of a module build for this architecture on another."""
        return [f"ARCH={self.kernel_arch}", f"CROSS_COMPILE={self.cross_compile}"]

    def cross_gcc(self, version):
        """Debian's cross compiler package of gcc VERSION for this architecture."""
        return f"gcc-{version}-{self.gnu_type.replace('_', '-')}"

    def console_arg(self, speed=False):
        """console= of the kernel command line (SPEED: with the baud rate, as Debian's images)."""
        return f"console={self.console}" + (f",{self.console_speed}" if speed and self.console_speed else "")

    def device(self, kind):
        """A virtio device of this machine: virtio-blk, virtio-rng, virtio-net."""
        return f"{kind}-{self.qemu.virtio}"

    def can_kvm(self):
        """Whether KVM can run this architecture's guests here (the host's own)."""
        return os.uname().machine == self.uname


# arm64's row, named: the arm64-16k row of ARCHES is this one with another kernel
ARM64 = Arch(
    name="arm64", uname="aarch64", gnu_type="aarch64-linux-gnu",
    # cloud-arm64 for guests; the W=1 matrix builds against the generic arm64 flavour
    # (what boards and laptops run; the arm64-16k row below is the 16 KiB-page flavour)
    kernel_flavour="cloud-arm64", kbuild_flavour="arm64", kernel_image="vmlinuz",
    kernel_arch="arm64", kernel_build_image="arch/arm64/boot/Image", defconfig_extra=(),
    console="ttyAMA0", console_speed="115200",
    # gic-version=max: KVM on a GICv3-only host refuses virt's default GICv2 (unverified here).
    # pauth-impdef=on: pointer authentication (which Debian's kernels use in every function)
    # with QEMU's cheap hash instead of emulated QARMA, many times faster under TCG
    qemu=Qemu(binary="qemu-system-aarch64", package="qemu-system-arm", machine="virt,gic-version=max",
              cpu_tcg="max,pauth-impdef=on", cpu_bench="cortex-a57", tcg_slow=3.0),  # cpu_bench unverified
    # the cloud image: a foreign root (qemu-user) on a GPT disk, GRUB on its EFI system
    # partition, booted by Debian's AAVMF (qemu-efi-aarch64) on -M virt (--disk-boot)
    boot="efi", grub_platform="arm64-efi", grub_packages=("grub-efi-arm64-bin",),
    qemu_user="qemu-aarch64-static", efi_boot_file="BOOTAA64.EFI",
    uefi=Uefi(packages=("qemu-efi-aarch64",), code="usr/share/AAVMF/AAVMF_CODE.fd",
              vars="usr/share/AAVMF/AAVMF_VARS.fd"),
    secure_boot=None, static_cross="meson/cross/arm64-static.ini",
    compat="armhf", compat_cross="meson/cross/armhf-static.ini",
    word_bits=64, endian="little", ioc_encoding="generic",
    # the smoke boot: about 30 s a suite under TCG once the kernel and programs are cached
    check=("smoke",))


ARCHES = {
    "amd64": Arch(
        name="amd64", uname="x86_64", gnu_type="x86_64-linux-gnu",
        kernel_flavour="cloud-amd64", kernel_image="vmlinuz", testbed_flavour="amd64",
        kernel_arch="x86", kernel_build_image="arch/x86/boot/bzImage", defconfig_extra=("kvm_guest.config",),
        console="ttyS0", console_speed="115200",
        qemu=Qemu(binary="qemu-system-x86_64", package="qemu-system-x86", machine="q35", cpu_bench="qemu64"),
        boot="bios-grub", grub_platform="i386-pc", grub_packages=("grub-pc-bin",),
        secure_boot=SecureBoot(
            packages=("shim-signed", "shim-helpers-amd64-signed", "grub-efi-amd64-signed", "mokutil"),
            removable="BOOTX64.EFI",
            files=(("BOOTX64.EFI", "usr/lib/shim/shimx64.efi.signed"),
                   ("mmx64.efi", "usr/lib/shim/mmx64.efi.signed"),
                   ("grubx64.efi", "usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed")),
            firmware_packages=("ovmf", "python3-virt-firmware"),
            code="usr/share/OVMF/OVMF_CODE_4M.secboot.fd",
            vars="usr/share/OVMF/OVMF_VARS_4M.ms.fd"),
        static_cross="meson/cross/amd64-static.ini", compat="i386", compat_cross="meson/cross/i386-static.ini",
        word_bits=64, endian="little", ioc_encoding="generic"),
    # The rows below: the QEMU facts are issue 37's (a porter's hand-run boots); the launcher's
    # initramfs guests (boot --arch, TCG, -cpu cpu_tcg) have since booted arm64, armhf, i386,
    # ppc64el, s390x and riscv64 with them; facts marked "unverified" no guest has used yet
    # (cpu_bench: no timed job ran; boot/grub: no cloud guest of these exists, arm64's excepted: its
    # cloud guest ran the suite, with kernel and initrd given to QEMU and (--disk-boot) from its
    # efi disk through AAVMF and GRUB). The static programs are the cross
    # builds of meson/cross/ARCH-static.ini (meson/build-static). The header flavours were read
    # from the archive (apt, every suite of suites.py). Their initramfs guests boot the kernel
    # of those headers (roots.CrossKernel: fetched, extracted, the module cross-built against
    # them), not kernel_flavour's (cloud-* is amd64's and arm64's).
    "arm64": ARM64,
    # Debian's 16 KiB-page kernel of arm64 (trixie on; bookworm has it only in
    # bookworm-security's linux-6.12, not for 6.1): arm64 in everything but the kernel, one
    # flavour for guests and the W=1 matrix (there is no cloud-arm64-16k). QEMU's -cpu max has
    # the 16K granule.
    # compat: armhf, as arm64's. arch/arm64/Kconfig lets COMPAT on a 16K kernel only with
    # EXPERT; Debian's arm64-16k config (trixie's 6.12.118) has CONFIG_EXPERT=y and CONFIG_COMPAT=y.
    # It runs only armhf programs whose load segments are 16 KiB-aligned (armhf-static.ini)
    "arm64-16k": replace(ARM64, name="arm64-16k", dpkg_arch="arm64", kernel_flavour="arm64-16k",
                         kbuild_flavour=None, check=()),
    "armhf": Arch(
        name="armhf", uname="armv7l", gnu_type="arm-linux-gnueabihf",
        kernel_flavour="armmp-lpae", kernel_image="vmlinuz",
        kernel_arch="arm", kernel_build_image="arch/arm/boot/zImage", defconfig_extra=(),
        console="ttyAMA0", console_speed="115200",
        qemu=Qemu(binary="qemu-system-arm", package="qemu-system-arm", machine="virt",
                  cpu_bench="cortex-a15"),  # cpu_bench unverified
        boot="efi", grub_platform="arm-efi", grub_packages=("grub-efi-arm-bin",),  # unverified
        secure_boot=None, static_cross="meson/cross/armhf-static.ini", compat=None, compat_cross=None,
        word_bits=32, endian="little", ioc_encoding="generic"),
    "armel": Arch(
        name="armel", uname="armv5tel", gnu_type="arm-linux-gnueabi",
        kernel_flavour="rpi", kernel_image="vmlinuz",  # bookworm also has marvell, trixie rpi only
        kernel_arch="arm", kernel_build_image="arch/arm/boot/zImage", defconfig_extra=(),
        console="ttyAMA0", console_speed="115200",
        qemu=None, build_only="no QEMU machine runs its flavours (rpi, marvell)",
        boot="none", grub_platform=None, grub_packages=(),
        secure_boot=None, static_cross=None, compat=None, compat_cross=None,
        word_bits=32, endian="little", ioc_encoding="generic"),
    "i386": Arch(
        name="i386", uname="i686", gnu_type="i686-linux-gnu",
        kernel_flavour="686-pae", kernel_image="vmlinuz",
        kernel_arch="x86", kernel_build_image="arch/x86/boot/bzImage", defconfig_extra=(),
        console="ttyS0", console_speed="115200",
        # qemu32 (Intel, with PAE) under TCG too: "max" on this AMD host is an AMD family-6 CPU,
        # and the 32-bit kernel's K7 check then warns "This combination of AMD processors is not
        # suitable for SMP" and taints (S) every 2-vCPU boot (seen with bookworm's 686-pae)
        qemu=Qemu(binary="qemu-system-i386", package="qemu-system-x86", machine="q35",
                  cpu_tcg="qemu32", cpu_bench="qemu32"),
        boot="bios-grub", grub_platform="i386-pc", grub_packages=("grub-pc-bin",),
        secure_boot=None, static_cross="meson/cross/i386-static.ini", compat=None, compat_cross=None,
        word_bits=32, endian="little", ioc_encoding="generic"),
    "ppc64el": Arch(
        name="ppc64el", uname="ppc64le", gnu_type="powerpc64le-linux-gnu",
        kernel_flavour="powerpc64le", kernel_image="vmlinux",  # /boot/vmlinux-KREL (6.12.113, extracted)
        kernel_arch="powerpc", kernel_build_image="vmlinux", defconfig_extra=(),
        console="hvc0", console_speed="",
        qemu=Qemu(binary="qemu-system-ppc64", package="qemu-system-ppc", machine="pseries",
                  cpu_tcg="power9", cpu_bench="power9"),  # power9 boots 6.12.113 under TCG; bench unverified
        boot="none", grub_platform=None, grub_packages=(),
        secure_boot=None, static_cross="meson/cross/ppc64el-static.ini", compat=None, compat_cross=None,
        word_bits=64, endian="little", ioc_encoding="powerpc"),
    "s390x": Arch(
        name="s390x", uname="s390x", gnu_type="s390x-linux-gnu",
        kernel_flavour="s390x", kernel_image="vmlinuz",
        kernel_arch="s390", kernel_build_image="arch/s390/boot/bzImage", defconfig_extra=(),
        console="ttysclp0", console_speed="",
        qemu=Qemu(binary="qemu-system-s390x", package="qemu-system-misc", machine="s390-ccw-virtio",
                  cpu_bench="qemu", virtio="ccw"),  # cpu_bench unverified
        boot="none", grub_platform=None, grub_packages=(),
        secure_boot=None, static_cross="meson/cross/s390x-static.ini", compat=None, compat_cross=None,
        word_bits=64, endian="big", ioc_encoding="generic"),
    "mips64el": Arch(
        name="mips64el", uname="mips64", gnu_type="mips64el-linux-gnuabi64",
        # 5kc-malta is the flavour -M malta runs (bookworm also has mips64r2el, loongson-3, octeon)
        kernel_flavour="5kc-malta", kernel_image="vmlinuz",  # /boot/vmlinuz-KREL: a self-decompressing ELF
        kernel_arch="mips", kernel_build_image="vmlinux", defconfig_extra=(),
        console="ttyS0", console_speed="115200",
        # bookworm's 6.1.0-50-5kc-malta boots under QEMU 7.2 with -smp 1 -m 256 (to the root
        # mount; with or without nokaslr); with -smp 2 -m 1024 it printed nothing in 60 s (which
        # of the two was not told apart): one vCPU, 256 MiB (its kernel has no CPS SMP for 5KEc)
        qemu=Qemu(binary="qemu-system-mips64el", package="qemu-system-mips", machine="malta",
                  cpu_tcg="5KEc", cpu_bench="5KEc", max_smp=1, max_mem=256),
        boot="none", grub_platform=None, grub_packages=(),
        secure_boot=None, static_cross="meson/cross/mips64el-static.ini", compat=None, compat_cross=None,
        word_bits=64, endian="little", ioc_encoding="powerpc"),
    "riscv64": Arch(
        name="riscv64", uname="riscv64", gnu_type="riscv64-linux-gnu",
        kernel_flavour="riscv64", kernel_image="vmlinux",
        kernel_arch="riscv", kernel_build_image="arch/riscv/boot/Image", defconfig_extra=(),
        console="ttyS0", console_speed="115200",
        qemu=Qemu(binary="qemu-system-riscv64", package="qemu-system-misc", machine="virt",
                  cpu_tcg="rv64", cpu_bench="rv64"),  # rv64: bookworm's QEMU 7.2 has no riscv "max"
        boot="efi", grub_platform="riscv64-efi", grub_packages=("grub-efi-riscv64-bin",),  # unverified
        secure_boot=None, static_cross="meson/cross/riscv64-static.ini", compat=None, compat_cross=None,
        word_bits=64, endian="little", ioc_encoding="generic"),
}

DEFAULT = "amd64"


def get(name=DEFAULT):
    """The row of architecture NAME (Usage when there is none)."""
    from .util import Usage
    try:
        return ARCHES[name]
    except KeyError:
        raise Usage(f"unknown architecture '{name}': use one of {', '.join(ARCHES)}") from None


def host():
    """The row whose kernel name is the host's (None on a host of another architecture)."""
    return next((a for a in ARCHES.values() if a.uname == os.uname().machine), None)


def static_names(arch):
    """The static program sets a guest of ARCH runs: its Debian architecture's and its compat ABI's."""
    return [arch.debian_arch] + ([arch.compat] if arch.compat else [])


# The kinds of guest: "initramfs" (ntsync-vm boot: a kernel and an initramfs, any row with a
# QEMU machine and static programs) and "cloud" (a disk image of a Debian root: cloud guests,
# the package tests; the host's own architecture, and foreign ones whose row says how their
# root runs here (qemu_user) and how their disk boots (a boot image.py writes))
GUEST_KINDS = ("initramfs", "cloud")


def why_no_guests(arch, kind="initramfs"):
    """Why the launcher cannot boot a guest of KIND (GUEST_KINDS) of ARCH yet, or None when it
    can: a QEMU machine and the static guest programs (a meson cross file) are what every
    guest needs; a cloud guest also needs an image root of that architecture (the host's own,
    or a foreign one mmdebstrap builds through qemu-user: the row's qemu_user) on a disk
    image.py writes (bios-grub, or efi with the row's uefi firmware)."""
    assert kind in GUEST_KINDS, kind
    if arch.qemu is None:
        return f"{arch.name} is build-only: {arch.build_only}; kbuild builds for it"
    if not arch.static_cross:
        return (f"no static guest programs for {arch.name} yet (its row has no meson cross file); "
                "kbuild builds for it")
    if kind == "cloud" and arch.name != (host() or get()).name and not (
            arch.qemu_user and (arch.boot == "bios-grub" or (arch.boot == "efi" and arch.uefi))):
        return (f"no cloud guests of {arch.name} yet (its row has no qemu_user to build its foreign root, "
                f"or no disk boot image.py writes); initramfs guests boot for it: ntsync-vm boot --arch {arch.name}")
    return None


def guest_names(kind="initramfs"):
    """The architectures guests of KIND can be booted for: the --arch choices of the guest commands."""
    return [n for n, a in ARCHES.items() if why_no_guests(a, kind) is None]


def for_guests(name, kind="initramfs"):
    """The row of NAME, when guests of KIND of it can boot (Usage naming why not, otherwise)."""
    from .util import Usage
    arch = get(name)
    why = why_no_guests(arch, kind)
    if why:
        raise Usage(f"--arch {name}: {why}; {kind} guests boot for {', '.join(guest_names(kind))}")
    return arch
