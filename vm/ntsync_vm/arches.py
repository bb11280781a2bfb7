"""THE architecture table: everything a Debian architecture means to the launcher, as data.

One frozen Arch per Debian architecture, after kunit's qemu_configs (one QemuArchParams per
architecture, tools/testing/kunit/qemu_configs/) and virtme-ng's architectures.py (one Arch
class each): the QEMU binary, machine and CPUs, the console, the kernel's image name and
flavour packages, the firmware, how a disk boots, the cross compiler, the static programs'
cross file, the compat ABI, word size, endianness and ioctl encoding. Nothing else in
vm/ntsync_vm names an architecture (the Wine build's PE side excepted: Windows programs are
x86-64 by nature); a suite row of suites.py says which architectures it has. Adding an
architecture is one row in ARCHES.
"""

import os
from dataclasses import dataclass


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
    qemu: Qemu
    boot: str                   # how an image's disk boots by itself: "bios-grub" (MBR, GRUB)
    grub_platform: str          # GRUB's platform of that boot (usr/lib/grub/PLATFORM)
    grub_packages: tuple        # the image's packages for it
    secure_boot: SecureBoot     # None: no Secure Boot guest for this architecture
    static_cross: str           # meson cross file of the static guest programs
    compat: str                 # the 32-bit ABI its kernels run (compat ioctls), or None
    compat_cross: str           # that ABI's static cross file, or None
    word_bits: int
    endian: str                 # "little" | "big"
    ioc_encoding: str           # "generic" (_IOC_WRITE 1, 2 direction bits) | "powerpc" (4, 3 bits)

    def kernel_packages(self, pin=""):
        """The suite's kernel and headers for this architecture (PIN: "/trixie-backports")."""
        return [f"linux-image-{self.kernel_flavour}{pin}", f"linux-headers-{self.kernel_flavour}{pin}"]

    def headers_glob(self):
        """The headers folder of this flavour under /usr/src."""
        return f"linux-headers-*-{self.kernel_flavour}"

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


ARCHES = {
    "amd64": Arch(
        name="amd64", uname="x86_64", gnu_type="x86_64-linux-gnu",
        kernel_flavour="cloud-amd64", kernel_image="vmlinuz",
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
    """The static program sets a guest of ARCH runs: its own and its compat ABI's."""
    return [arch.name] + ([arch.compat] if arch.compat else [])
