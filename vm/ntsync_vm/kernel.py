"""`ntsync-vm build-kernel --flavour debug|kcsan|gcov`: a debug kernel for the boot jobs, built from
Debian trixie's linux-source-6.12 with a small guest configuration
(tests/debug-kernel/config/guest.config) plus the flavour's fragment, packaged with
`make bindeb-pkg`:
  debug  lockdep, KASAN, kmemleak, debug-objects, failslab (config/debug.config)
  kcsan  the kernel concurrency sanitizer (config/kcsan.config); KCSAN and KASAN exclude
         each other, so it is a kernel of its own
  gcov   CONFIG_GCOV_KERNEL (only objects that ask for it are instrumented), failslab,
         lockdep (config/gcov.config): the kernel of `ntsync-vm coverage`
The build runs in a trixie root (roots.mmdebstrap), with trixie's gcc-14, the compiler DKMS
uses in a trixie guest. Everything goes to $NTSYNC_CACHE/FLAVOUR-kernel/: root/ (the build
root, the tree in root/build/linux-source-6.12), debs/, build.log, stamp. Both age under the
one cache policy of images and kernel roots (roots.stale, NTSYNC_MAX_AGE_DAYS, 14 days): the
build root is made again when it is older (stamp root/.complete), and a finished build older
than that (its stamp file) is no longer taken as cached: build-kernel builds it again."""

import argparse
import os
import shutil
import subprocess
import time

from . import arches, roots
from .util import MIRROR, REPO, Failure, Usage, cache, require_root, say

WANTED = {
    "debug": "PROVE_LOCKING DEBUG_ATOMIC_SLEEP KASAN DEBUG_KMEMLEAK DEBUG_OBJECTS FAULT_INJECTION FAILSLAB "
             "FAULT_INJECTION_DEBUG_FS",
    "kcsan": "KCSAN KCSAN_INTERRUPT_WATCHER DEBUG_ATOMIC_SLEEP",
    "gcov": "GCOV_KERNEL FAULT_INJECTION FAILSLAB FAULT_INJECTION_DEBUG_FS PROVE_LOCKING DEBUG_ATOMIC_SLEEP "
            "SMP ACPI BLK_DEV_INITRD BINFMT_SCRIPT IA32_EMULATION COMPAT_32BIT_TIME PROC_FS UNIX MEMCG HIGH_RES_TIMERS",
}
# The configuration a flavour starts from before the architecture's extras (kvm_guest.config),
# guest.config and its fragment: defconfig, unless the flavour names a leaner one. The gcov
# kernel is allnoconfig plus what the initramfs guest and the tests use (its fragment): a
# third of defconfig's objects, so that it builds in minutes on two shared cores.
BASE = {"gcov": "allnoconfig"}
# Options a flavour must not end up with (olddefconfig could switch them on by a select).
UNWANTED = {
    "gcov": "GCOV_PROFILE_ALL KASAN",
}
ALWAYS = "DEBUG_FS TIME_NS USER_NS DEVTMPFS EXT4_FS VIRTIO_BLK 9P_FS MODULE_UNLOAD"
PACKAGES = ["build-essential", "bc", "bison", "flex", "libelf-dev", "libssl-dev", "kmod", "cpio", "rsync",
            "dpkg-dev", "debhelper", "python3", "xz-utils", "fakeroot", "linux-source-6.12"]
TREE = "/build/linux-source-6.12"


def build_root(base, what="kernel build root"):
    """The trixie root of PACKAGES that builds the kernel, BASE/root: kept while fresh, made
    again by roots.cached_root (the age rule of every root) when missing or stale."""
    return roots.cached_root(base / "root", "trixie", [f"deb {MIRROR} trixie main"], PACKAGES, what)


def cached_build(base):
    """Why the finished build in BASE cannot be reused (a reason), or None when it can."""
    if not list((base / "debs").glob("linux-image-*.deb")):
        return "no linux-image-*.deb in debs/"
    return roots.stale(base / "stamp")


def main(argv):
    ap = argparse.ArgumentParser(prog="ntsync-vm build-kernel", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--flavour", choices=sorted(WANTED), default="debug")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel make jobs (nproc)")
    ap.add_argument("--force", action="store_true", help="rebuild even when debs/ holds a finished build")
    ap.add_argument("--clean", action="store_true", help="remove the build root (keeps debs/) and exit")
    o = ap.parse_args(argv)
    if o.jobs < 1:
        raise Usage(f"--jobs wants a positive number, got {o.jobs}")
    fl = o.flavour
    if not (REPO / f"tests/debug-kernel/config/{fl}.config").is_file():
        raise Usage(f"no tests/debug-kernel/config/{fl}.config in {REPO}")
    base = cache() / f"{fl}-kernel"
    root, logf, stampf = base / "root", base / "build.log", base / "stamp"
    if o.clean:
        roots.safe_rm(root)
        say(f"removed {root}")
        return 0
    require_root("build-kernel")
    why = cached_build(base)
    if not o.force and why is None:
        print(f"ntsync-vm build-kernel: cached build in {base / 'debs'} (use --force to rebuild):")
        for d in sorted((base / "debs").iterdir()):
            print(d)
        return 0
    if not o.force and stampf.exists():
        say(f"the {fl} kernel in {base / 'debs'} is built again: {why}")
    base.mkdir(parents=True, exist_ok=True)
    start = time.time()
    say(f"log in {logf}")

    def in_root(cmd, what):
        with open(logf, "a") as lf:
            r = roots.in_root(root, ["sh", "-c", cmd], stdout=lf, stderr=subprocess.STDOUT)
        if r.returncode:
            raise Failure(f"{what} failed, see the end of {logf}", 1)

    def out_of_root(cmd):
        return roots.in_root(root, ["sh", "-c", cmd], capture_output=True, text=True).stdout.strip()

    try:
        build_root(base, f"trixie build root of the {fl} kernel")
    except Failure as e:
        raise Failure(f"{e}\n(is {MIRROR} reachable?)", 1)
    if not list((root / "usr/src").glob("linux-source-6.12.tar.*")):
        raise Failure(f"no /usr/src/linux-source-6.12.tar.* in {root}; run build-kernel --clean and again", 1)
    tarball = sorted((root / "usr/src").glob("linux-source-6.12.tar.*"))[0].relative_to(root)
    srcver = out_of_root("dpkg-query -W -f='${Version}' linux-source-6.12")
    say(f"linux-source-6.12 {srcver}")
    shutil.rmtree(root / "build", ignore_errors=True)
    (root / "build").mkdir()
    in_root(f"tar -C /build -xf /{tarball}", "unpacking the kernel source")
    if not (root / TREE.lstrip("/")).is_dir():
        raise Failure(f"unexpected tarball layout: no {TREE} in /{tarball}", 1)
    cfg = root / f"build/ntsync-{fl}.config"
    cfg.write_text((REPO / "tests/debug-kernel/config/guest.config").read_text()
                   + (REPO / f"tests/debug-kernel/config/{fl}.config").read_text())
    arch = arches.get()
    extra = "".join(f" && make {t}" for t in arch.defconfig_extra)
    base_cfg = BASE.get(fl, "defconfig")
    extras = "".join(" + " + t for t in arch.defconfig_extra)
    say(f"configuring ({arch.kernel_arch} {base_cfg}{extras} + guest.config + {fl}.config)")
    in_root(f"cd {TREE} && make {base_cfg}{extra} && "
            f"scripts/kconfig/merge_config.sh -m .config /build/ntsync-{fl}.config && "
            f"./scripts/config --set-str LOCALVERSION '-ntsync-{fl}' --disable LOCALVERSION_AUTO && "
            "make olddefconfig", "configuration")
    config = (root / TREE.lstrip("/") / ".config").read_text().splitlines()
    missing = [opt for opt in (WANTED[fl] + " " + ALWAYS).split() if f"CONFIG_{opt}=y" not in config]
    if missing:
        raise Failure(f"the configuration lost: {' '.join(missing)} (see {root}{TREE}/.config)", 1)
    extra_on = [opt for opt in UNWANTED.get(fl, "").split() if f"CONFIG_{opt}=y" in config]
    if extra_on:
        raise Failure(f"the {fl} configuration has {' '.join(extra_on)} switched on, which it must not "
                      f"(see {root}{TREE}/.config and tests/debug-kernel/config/{fl}.config)", 1)
    say(f"building with {o.jobs} jobs under nice -n 19 (this takes a while)")
    bstart = time.time()
    in_root(f"cd {TREE} && nice -n 19 make -j{o.jobs} bindeb-pkg KDEB_PKGVERSION={srcver}+ntsync{fl}1 "
            "KDEB_COMPRESS=xz", "the kernel build")
    end = time.time()
    debs = base / "debs"
    shutil.rmtree(debs, ignore_errors=True)
    debs.mkdir()
    for d in list((root / "build").glob("linux-image-*.deb")) + list((root / "build").glob("linux-headers-*.deb")):
        shutil.copy2(d, debs / d.name)
    kver = out_of_root(f"cd {TREE} && make -s kernelrelease")
    shutil.copy2(root / TREE.lstrip("/") / ".config", debs / f"config-{kver}")
    stampf.write_text(f"kernel={kver}\nsource=linux-source-6.12 {srcver}\n"
                      f"compiler={out_of_root('gcc --version | head -n1')}\njobs={o.jobs}\n"
                      f"build_seconds={int(end - bstart)}\ntotal_seconds={int(end - start)}\n"
                      f"finished={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
    say(f"done in {int(end - start) // 60} min {int(end - start) % 60} s (make: {int(end - bstart)} s)")
    print(stampf.read_text(), end="")
    for d in sorted(debs.iterdir()):
        print(d.name)
    return 0
