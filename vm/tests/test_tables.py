#!/usr/bin/python3
"""Host tests of the launcher's tables and its inside as data (no guest, no root): the
architecture table (every row's QEMU command lines built from the table alone and compared
with recorded ones, test_data/argv/ARCH.txt), the job table (every row's script exists, every
script has a row, the command lines offer what the table says), the typed request (from the
command line; no option read through getattr), the error kinds (library code raises, only the
command line exits), and nothing read from disk at import time. Runs in `meson test`."""

import dataclasses
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PKG = REPO / "vm" / "ntsync_vm"
sys.path.insert(0, str(REPO / "vm"))

from ntsync_vm import arches, boot, cloud, console, image, jobs, qemu, suites  # noqa: E402
from ntsync_vm.util import Failure, Usage  # noqa: E402


def machines(arch):
    """The three kinds of guest, built from ARCH's row and nothing else: a cloud guest
    (kernel, initrd, four disks, a network), the timed initramfs boot, a Secure Boot PC."""
    sb = dict(firmware=qemu.Firmware("/img/efi-code.fd", "/run/efi-vars.fd", secure=arch.secure_boot.smm)) \
        if arch.secure_boot else None
    out = {
        "cloud": qemu.Machine(console=Path("/run/console.log"), arch=arch, name="ntsync-run", mem=2048, smp=2,
                              kernel="/img/vmlinuz", initrd="/img/initrd.img", append=image.kernel_cmdline(arch),
                              drives=[qemu.Drive("/run/disk.qcow2", "qcow2", bootindex=1,
                                                 opts="discard=unmap,cache=unsafe"),
                                      qemu.Drive("/run/seed.img", "raw", readonly=True),
                                      qemu.Drive("/run/in.tar", "raw", serial="ntsync-in", readonly=True),
                                      qemu.Drive("/run/out.img", "raw", serial="ntsync-out")], net=True),
        "bench": qemu.Machine(console=Path("/logs/boot-bench.log"), arch=arch, name="ntsync-boot-bench", mem=1024,
                              smp=1, cpu=arch.qemu.cpu_bench, icount=True, kernel="/k/vmlinuz",
                              initrd="/w/initrd.gz", rng=False,
                              append=f"{arch.console_arg()} panic=-1 oops=panic quiet"),
    }
    if arch.boot == "efi" and arch.uefi:
        # a cloud guest booted from its disk (--disk-boot, --image): the UEFI firmware, no -kernel
        out["efi-disk"] = qemu.Machine(console=Path("/run/console.log"), arch=arch, name="ntsync-run", mem=2048,
                                       smp=2, firmware=qemu.Firmware("/fw/code.fd", "/run/efi-vars.fd", secure=False),
                                       drives=[qemu.Drive("/run/disk.qcow2", "qcow2", bootindex=1,
                                                          opts="discard=unmap,cache=unsafe")])
    if sb:
        out["secure-boot"] = qemu.Machine(console=Path("/run/console.log"), arch=arch, name="ntsync-sb", mem=2048,
                                          smp=2, drives=[qemu.Drive("/run/disk.qcow2", "qcow2", bootindex=1)], **sb)
    return out


def recorded(arch):
    """{'CASE ACCEL': argv} of test_data/argv/ARCH.txt."""
    f = HERE / "test_data" / "argv" / f"{arch}.txt"
    out = {}
    for line in f.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, cmd = line.partition(": ")
            out[key] = shlex.split(cmd)
    return out


class ArchTable(unittest.TestCase):
    def setUp(self):
        self.saved = os.environ.pop("NTSYNC_QEMU", None)

    def tearDown(self):
        if self.saved is not None:
            os.environ["NTSYNC_QEMU"] = self.saved

    def test_every_row_has_recorded_command_lines(self):
        for name, arch in arches.ARCHES.items():
            f = HERE / "test_data" / "argv" / f"{name}.txt"
            if arch.qemu is None:
                # a build-only row (the W=1 matrix alone) says why, and has no command lines
                self.assertTrue(arch.build_only, name)
                self.assertFalse(f.exists(), f"{name} boots no guest: {f} should not exist")
                continue
            self.assertTrue(f.is_file(), f"{name}: record its command lines (test_tables.py --record {name})")
            want = recorded(name)
            got = {f"{case} {accel}": qemu.argv(m, accel) for case, m in machines(arch).items()
                   for accel in ("tcg", "kvm")}
            self.assertEqual(sorted(got), sorted(want), name)
            for key in want:
                self.assertEqual(got[key], want[key], f"{name} {key}")

    def test_rows(self):
        for name, a in arches.ARCHES.items():
            self.assertEqual(a.name, name)
            self.assertIn(a.endian, ("little", "big"), name)
            self.assertIn(a.word_bits, (32, 64), name)
            self.assertIn(a.ioc_encoding, ("generic", "powerpc"), name)
            self.assertIn(a.boot, ("bios-grub", "efi", "none"), name)
            self.assertEqual(a.boot == "none", a.grub_platform is None, name)
            for f in (a.static_cross, a.compat_cross):
                if f:
                    self.assertTrue((REPO / f).is_file(), f"{name}: {f}")
            # a compat ABI's static programs exist once the architecture's own do
            if a.static_cross:
                self.assertEqual(bool(a.compat), bool(a.compat_cross), name)
            self.assertFalse(a.compat_cross and not a.compat, name)
            if a.compat:
                self.assertIn(a.compat, arches.ARCHES, name)
                self.assertEqual(arches.get(a.compat).word_bits, 32, name)
            self.assertEqual(arches.static_names(a)[0], a.debian_arch)
            self.assertEqual(a.qemu is None, bool(a.build_only), name)
            self.assertTrue(a.headers_flavour, name)
            # ./check's boots on other architectures: initramfs jobs ./check runs, on a row that boots
            for j in a.check:
                self.assertEqual(jobs.get(j, "initramfs").kind, "initramfs", name)
                self.assertIn(j, jobs.checked(), name)
                self.assertIsNone(arches.why_no_guests(a), name)
        self.assertIn(arches.DEFAULT, arches.ARCHES)
        amd64 = arches.get("amd64")
        self.assertEqual(amd64.kernel_packages("/trixie-backports"),
                         ["linux-image-cloud-amd64/trixie-backports", "linux-headers-cloud-amd64/trixie-backports"])
        self.assertEqual(amd64.cross_gcc(14), "gcc-14-x86-64-linux-gnu")
        with self.assertRaisesRegex(Usage, "unknown architecture 'vax'"):
            arches.get("vax")
        # guests boot only where a QEMU machine and the static programs exist; the rest build
        self.assertIn(arches.DEFAULT, arches.guest_names())
        for name, a in arches.ARCHES.items():
            if name not in arches.guest_names():
                with self.assertRaisesRegex(Usage, f"--arch {name}: .*kbuild builds for it"):
                    arches.for_guests(name)
        # cloud guests (image roots): the host's architecture, and the rows whose foreign root
        # runs through qemu-user on a disk image.py writes (arm64: efi); initramfs guests of every
        # row with a QEMU machine and a static cross file
        host = (arches.host() or arches.get()).name
        self.assertEqual(arches.guest_names("cloud"),
                         [n for n, a in arches.ARCHES.items() if a.qemu and a.static_cross and (
                             n == host or a.qemu_user and (a.boot == "bios-grub" or a.boot == "efi" and a.uefi))])
        self.assertIn("arm64", arches.guest_names("cloud"))
        for name, a in arches.ARCHES.items():
            if a.boot == "efi" and a.uefi:
                self.assertTrue(a.efi_boot_file and a.grub_platform.endswith("-efi"), name)
        self.assertEqual(arches.guest_names(), [n for n, a in arches.ARCHES.items() if a.qemu and a.static_cross])
        for name in arches.guest_names():
            if name not in arches.guest_names("cloud"):
                with self.assertRaisesRegex(Usage, f"--arch {name}: no cloud guests of {name} yet"):
                    arches.for_guests(name, "cloud")

    def test_nothing_else_names_an_architecture(self):
        # the issue's grep: only the table (and the Wine build, whose PE side is x86-64) names one;
        # a suite row says which architectures it has, by name; cloud.py's --no-i386 option is
        # older than the table
        hits = subprocess.run(["grep", "-rnE", r"x86_64|amd64|ttyS0|cloud-amd64|aarch64|arm64|armhf|armel|"
                               r"ppc64|powerpc|s390|riscv|mips|ttyAMA0|hvc0|ttysclp0|gnueabi", str(PKG)],
                              capture_output=True, text=True).stdout.splitlines()
        hits = [h for h in hits if "/arches.py:" not in h and "/wine.py:" not in h and "__pycache__" not in h
                and not re.search(r"/suites\.py:\d+: +(architectures=|# )", h)]
        self.assertEqual(hits, [])

    def test_the_issue_37_facts(self):
        # issue 37: the other ioctl encoding, big-endian, the compat ABIs, the consoles
        enc = {n: a.ioc_encoding for n, a in arches.ARCHES.items()}
        self.assertEqual(sorted(n for n, e in enc.items() if e == "powerpc"), ["mips64el", "ppc64el"])
        self.assertEqual([n for n, a in arches.ARCHES.items() if a.endian == "big"], ["s390x"])
        self.assertEqual({n: a.compat for n, a in arches.ARCHES.items() if a.compat},
                         {"amd64": "i386", "arm64": "armhf", "arm64-16k": "armhf"})
        self.assertEqual(arches.get("s390x").qemu.virtio, "ccw")
        self.assertEqual(arches.get("s390x").device("virtio-blk"), "virtio-blk-ccw")
        self.assertEqual({n: a.console for n, a in arches.ARCHES.items() if a.qemu},
                         {"amd64": "ttyS0", "arm64": "ttyAMA0", "arm64-16k": "ttyAMA0", "armhf": "ttyAMA0",
                          "i386": "ttyS0",
                          "ppc64el": "hvc0", "s390x": "ttysclp0", "mips64el": "ttyS0", "riscv64": "ttyS0"})
        self.assertEqual([n for n, a in arches.ARCHES.items() if a.build_only], ["armel"])

    def test_cross_compilers(self):
        # Debian's cross compiler packages: gcc-N-TRIPLET, the triplet's _ as -
        want = {"amd64": "gcc-14-x86-64-linux-gnu", "arm64": "gcc-14-aarch64-linux-gnu",
                "arm64-16k": "gcc-14-aarch64-linux-gnu",
                "armhf": "gcc-14-arm-linux-gnueabihf", "armel": "gcc-14-arm-linux-gnueabi",
                "i386": "gcc-14-i686-linux-gnu", "ppc64el": "gcc-14-powerpc64le-linux-gnu",
                "s390x": "gcc-14-s390x-linux-gnu", "mips64el": "gcc-14-mips64el-linux-gnuabi64",
                "riscv64": "gcc-14-riscv64-linux-gnu"}
        self.assertEqual({n: a.cross_gcc(14) for n, a in arches.ARCHES.items()}, want)
        self.assertEqual(arches.get("arm64").cross_compile, "aarch64-linux-gnu-")
        self.assertEqual(arches.get("arm64").cross_gcc(12), "gcc-12-aarch64-linux-gnu")

    def test_kernel_flavour_rows(self):
        # a row that is a kernel flavour of a Debian architecture (arm64-16k): that architecture's
        # in everything but the kernel, its packages and programs the architecture's
        flavours = {n: a for n, a in arches.ARCHES.items() if a.dpkg_arch}
        self.assertEqual(sorted(flavours), ["arm64-16k"])
        for name, a in arches.ARCHES.items():
            self.assertEqual(a.debian_arch, a.dpkg_arch or name, name)
        for name, a in flavours.items():
            base = arches.get(a.dpkg_arch)
            self.assertIsNone(base.dpkg_arch, name)
            for field in ("uname", "gnu_type", "kernel_arch", "kernel_image", "qemu", "static_cross",
                          "word_bits", "endian", "ioc_encoding", "boot", "grub_packages", "uefi", "qemu_user"):
                self.assertEqual(getattr(a, field), getattr(base, field), f"{name} {field}")
            self.assertNotEqual(a.headers_flavour, base.headers_flavour, name)
            self.assertEqual(arches.static_names(a), arches.static_names(base), name)
        a16 = arches.get("arm64-16k")
        self.assertEqual(a16.kernel_packages(), ["linux-image-arm64-16k", "linux-headers-arm64-16k"])
        self.assertEqual(a16.headers_flavour, "arm64-16k")
        # Debian's arm64-16k kernel has CONFIG_COMPAT (and EXPERT, which a 16K kernel needs for it)
        self.assertEqual(arches.static_names(a16), ["arm64", "armhf"])
        self.assertIn("arm64-16k", arches.guest_names())
        self.assertIn("arm64-16k", arches.guest_names("cloud"))


class SuiteArchitectures(unittest.TestCase):
    def test_every_suites_architectures_are_rows(self):
        for name, s in suites.SUITES.items():
            self.assertTrue(s.architectures, name)
            self.assertEqual(s.architectures[0], arches.DEFAULT, name)
            self.assertEqual(len(set(s.architectures)), len(s.architectures), name)
            for a in s.architectures:
                self.assertIn(a, arches.ARCHES, f"suite {name}: architecture {a} has no row in arches.py")
            self.assertIn(s.gcc, range(10, 30), name)

    def test_the_release_architectures(self):
        # issue 37: every release architecture of bookworm and trixie; sid and trixie-backports
        # have what the archive has (no armel, no i386 kernel), arm64 at least
        self.assertEqual(set(suites.SUITES["bookworm"].architectures),
                         {"amd64", "arm64", "armhf", "armel", "i386", "ppc64el", "s390x", "mips64el"})
        self.assertEqual(set(suites.SUITES["trixie"].architectures),
                         {"amd64", "arm64", "arm64-16k", "armhf", "armel", "ppc64el", "riscv64", "s390x"})
        for name in ("sid", "trixie-backports"):
            self.assertLessEqual({"amd64", "arm64", "arm64-16k"}, set(suites.SUITES[name].architectures), name)
        self.assertEqual({n: s.gcc for n, s in suites.SUITES.items()},
                         {"bookworm": 12, "trixie": 14, "sid": 16, "trixie-backports": 14})

    def test_cross_root_packages(self):
        # a cross root has the host's tools and one cross compiler of the suite's gcc per other
        # architecture of the suite (what roots.xroot asks mmdebstrap for)
        from ntsync_vm import roots
        native = roots.native_arch()
        for name, s in suites.SUITES.items():
            foreign = roots.foreign_arches(s)
            self.assertNotIn(native, foreign)
            self.assertEqual(len(foreign), len(s.architectures) - (native.name in s.architectures))
            for a in foreign:
                self.assertRegex(a.cross_gcc(s.gcc), rf"^gcc-{s.gcc}-[a-z0-9-]+-linux-gnu[a-z0-9]*$")
            # apt and the cross compilers see Debian architectures, each once (arm64-16k is arm64)
            debs = roots.foreign_debian_arches(s)
            self.assertEqual(len(debs), len(set(debs)), name)
            self.assertEqual(set(debs), {a.debian_arch for a in foreign}, name)
            self.assertNotIn("arm64-16k", debs, name)
        self.assertEqual(roots.xroot_dir("trixie-7x").name, "trixie-backports-cross")


class Kbuild(unittest.TestCase):
    def test_plan_is_every_suite_and_architecture(self):
        from ntsync_vm import kbuild
        everything = kbuild.plan(suites.names(), set())
        self.assertEqual(len(everything), sum(len(s.architectures) for s in suites.SUITES.values()))
        self.assertEqual({(n, a.name) for n, a in everything},
                         {(n, a) for n, s in suites.SUITES.items() for a in s.architectures})
        self.assertEqual([(n, a.name) for n, a in kbuild.plan(suites.names(), {"riscv64"})],
                         [("trixie", "riscv64"), ("sid", "riscv64"), ("trixie-backports", "riscv64")])
        self.assertEqual(kbuild.plan(["bookworm"], {"riscv64"}), [])

    def test_rows_are_what_check_counts(self):
        # ./check: rows start with the kernel release; a clean one ends ' ok +0'
        from ntsync_vm import kbuild
        clean = kbuild.row("7.3.4+deb13-powerpc64le-64k", "ppc64el", "trixie-backports", "ok", 0)
        self.assertRegex(clean, r"^[0-9].* ok +0$")
        self.assertNotRegex(kbuild.row("6.12-?-s390x", "s390x", "trixie", "FAILED", "-"), r" ok +0$")
        self.assertRegex(kbuild.row("6.12-?-s390x", "s390x", "trixie", "FAILED", "-"), r"^[0-9]")
        self.assertNotRegex(kbuild.row("kernel", "arch", "target", "result", "warnings"), r"^[0-9]")

    def test_the_kernels_gcc_is_the_suite_rows(self):
        from ntsync_vm import kbuild
        with tempfile.TemporaryDirectory() as t:
            k = Path(t, "usr/src/linux-headers-6.12.118+deb13-arm64")
            k.mkdir(parents=True)
            (k / ".config").write_text('CONFIG_CC_VERSION_TEXT="aarch64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0"\n')
            kdir = "/usr/src/linux-headers-6.12.118+deb13-arm64"
            self.assertIsNone(kbuild.compiler_problem(t, kdir, suites.SUITES["trixie"]))
            self.assertIn("the suite table says gcc-16", kbuild.compiler_problem(t, kdir, suites.SUITES["sid"]))

    def test_header_candidates_from_the_archive(self):
        # the meta package leads to the versioned headers, their -common and the host's
        # linux-kbuild; newest first, only the suite's series (trixie-backports: 7.3, not 6.12)
        from ntsync_vm import roots

        def versioned(v, name, arch="s390x"):
            return {"Package": f"linux-headers-{name}-s390x", "Version": v, "Architecture": arch,
                    "Depends": f"linux-headers-{name}-common (= {v}), linux-kbuild-{name}, gcc-14 | gcc-14-for-host"}
        offered = {"linux-headers-6.12.118+deb13-s390x:s390x": [versioned("6.12.118-1", "6.12.118+deb13")],
                   "linux-headers-6.12.107+deb13-s390x:s390x": [versioned("6.12.107-1", "6.12.107+deb13")],
                   "linux-headers-6.12.117+deb13-s390x:s390x": [versioned("6.12.117-1", "6.12.117+deb13")]}

        class FakeApt:
            def pkgnames(self, prefix):
                assert prefix == "linux-headers-6.", prefix
                return sorted(n.split(":")[0] for n in offered) + ["linux-headers-6.12.118+deb13-s390x-dbg",
                                                                   "linux-headers-6.12.118+deb13-common"]

            def stanzas(self, *pkgs):
                return [st for p in pkgs for st in offered.get(p, [])]
        h = roots.CrossHeaders("trixie", "/nonexistent")
        h._apt = FakeApt()
        native = roots.native_arch().name
        self.assertEqual(h.candidates(arches.get("s390x")), [
            ("6.12.118-1", ["linux-headers-6.12.118+deb13-s390x:s390x=6.12.118-1",
                            "linux-headers-6.12.118+deb13-common=6.12.118-1",
                            f"linux-kbuild-6.12.118+deb13:{native}=6.12.118-1"]),
            ("6.12.117-1", ["linux-headers-6.12.117+deb13-s390x:s390x=6.12.117-1",
                            "linux-headers-6.12.117+deb13-common=6.12.117-1",
                            f"linux-kbuild-6.12.117+deb13:{native}=6.12.117-1"]),
            ("6.12.107-1", ["linux-headers-6.12.107+deb13-s390x:s390x=6.12.107-1",
                            "linux-headers-6.12.107+deb13-common=6.12.107-1",
                            f"linux-kbuild-6.12.107+deb13:{native}=6.12.107-1"])])
        # a kernel flavour row: its own flavour's headers, asked for and taken as its Debian
        # architecture's packages (arm64-16k: linux-headers-*-arm64-16k:arm64), never the
        # architecture's other flavour

        def arm64(v, name, flavour):
            return {"Package": f"linux-headers-{name}-{flavour}", "Version": v, "Architecture": "arm64",
                    "Depends": f"linux-headers-{name}-common (= {v}), linux-kbuild-{name}"}
        offered.clear()
        offered.update({"linux-headers-6.12.118+deb13-arm64:arm64": [arm64("6.12.118-1", "6.12.118+deb13", "arm64")],
                        "linux-headers-6.12.118+deb13-arm64-16k:arm64": [
                            arm64("6.12.118-1", "6.12.118+deb13", "arm64-16k")]})
        self.assertEqual(h.candidates(arches.get("arm64-16k")), [
            ("6.12.118-1", ["linux-headers-6.12.118+deb13-arm64-16k:arm64=6.12.118-1",
                            "linux-headers-6.12.118+deb13-common=6.12.118-1",
                            f"linux-kbuild-6.12.118+deb13:{native}=6.12.118-1"])])
        self.assertEqual(h.candidates(arches.get("arm64"))[0][1][0],
                         "linux-headers-6.12.118+deb13-arm64:arm64=6.12.118-1")
        self.assertEqual(roots.CrossHeaders("trixie-backports", "/x").series_versions(
            ["6.12.118-1", "7.3.4-1~bpo13+1"]), ["7.3.4-1~bpo13+1"])
        # the archive lacks 7.3.4's files for some architectures: 7.2's backports come next
        self.assertEqual(roots.CrossHeaders("trixie-backports", "/x").series_versions(
            ["7.2.9-1~bpo13+1", "6.12.118-1", "7.3.4-1~bpo13+1", "7.2.12-1~bpo13+1"]),
            ["7.3.4-1~bpo13+1", "7.2.12-1~bpo13+1", "7.2.9-1~bpo13+1"])
        self.assertEqual(roots.CrossHeaders("bookworm", "/x").series_versions(["6.1.192-3", "6.12.118-1"]),
                         ["6.1.192-3"])


class JobTable(unittest.TestCase):
    def test_rules(self):
        jobs._check()
        for j in jobs.JOBS:
            self.assertTrue(j.help, j.name)
            self.assertTrue(j.default in jobs.ROLES or j.default in suites.SUITES, j.name)

    def test_every_script_has_a_row_and_every_row_its_script(self):
        owned = {j.script for j in jobs.JOBS if j.script}
        for j in jobs.JOBS:
            if j.script:
                self.assertTrue(j.script.is_file(), f"job {j.kind} {j.name}: no {j.script}")
        for s in jobs.scripts():
            self.assertIn(s, owned, f"{s}: a guest script with no row in vm/ntsync_vm/jobs.py")

    def test_command_lines_offer_the_table(self):
        def help_of(*args):
            p = subprocess.run([str(REPO / "vm/ntsync-vm"), *args, "--help"], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            return p.stdout
        top = help_of()
        for j in jobs.of_kind("cloud", "command", cli_only=True):
            self.assertRegex(top, rf"(?m)^  {re.escape(j.name)} +{re.escape(j.help[:30])}", j.name)
        offered = re.search(r"(?m)^  \{([a-z,-]+)\}$", top).group(1).split(",")
        self.assertEqual(offered, [j.name for j in jobs.of_kind("cloud", "command", cli_only=True)])
        for j in jobs.of_kind("cloud"):
            self.assertEqual(j.name in offered, j.cli, j.name)
        self.assertIn(f"--job {'|'.join(j.name for j in jobs.of_kind('initramfs', cli_only=True))}", top)
        text = help_of("boot")
        for j in jobs.of_kind("initramfs", cli_only=True):
            self.assertIn(f"  {j.name}", text)
            self.assertIn(f"({suites.default_for(j)})", text)

    def test_check_runs_the_table(self):
        # ./check's guest lists are `ntsync-vm suites --job JOB`: the jobs the table marks
        self.assertEqual(jobs.checked(), ["test", "secure-boot", "smoke", "wine-gate"])
        for name in jobs.checked():
            self.assertTrue(suites.for_job(name), name)
        with self.assertRaisesRegex(Usage, "unknown job 'demo'"):
            suites.for_job("demo")

    def test_a_job_without_a_runner_of_its_own_boots_like_smoke(self):
        self.assertEqual(set(boot.RUNNERS) <= {j.name for j in jobs.of_kind("initramfs")}, True)
        job = jobs.Job("made-up", "initramfs", "x")
        with self.assertRaisesRegex(Failure, "its script .*init/made-up.sh is missing"):
            boot.init_files(job, {})


class Requests(unittest.TestCase):
    def parse(self, *argv):
        # the command line's parser, stopped where it would run a guest
        captured = {}

        def grab(req):
            captured["req"] = req
            return 0
        saved = cloud.job_single, cloud.job_matrix, cloud.job_secure_boot
        cloud.job_single = grab
        cloud.job_matrix = lambda req, only: grab(req)
        cloud.job_secure_boot = grab
        try:
            cmd = []
            if "--" in argv:
                i = argv.index("--")
                argv, cmd = argv[:i], list(argv[i:])
            self.assertEqual(cloud.main(list(argv) + cmd), 0)
        finally:
            cloud.job_single, cloud.job_matrix, cloud.job_secure_boot = saved
        return captured["req"]

    def test_from_the_command_line(self):
        r = self.parse("bench", "--cpus", "4")
        self.assertEqual((r.job.name, r.suite, r.vcpus, r.counts_instructions), ("bench", suites.bench_default(), 4,
                                                                                 True))
        self.assertEqual(r.bench_args, cloud.BENCH_CONTENTION)
        r = self.parse("test", "--no-i386", "--suite", "bookworm")
        self.assertEqual((r.job.name, r.suite, r.compat, r.vcpus, r.counts_instructions), ("test", "bookworm", False, 2,
                                                                                           False))
        r = self.parse("demo", "--no-icount")
        self.assertEqual((r.vcpus, r.counts_instructions, r.echo), (1, False, True))
        r = self.parse("exec", "--", "make", "run")
        self.assertEqual((r.cmd, r.cmd_string), (("make", "run"), "make run"))
        with self.assertRaises(dataclasses.FrozenInstanceError):
            r.suite = "bookworm"

    def test_usage_is_raised_not_exited(self):
        for argv, says in ((["bench", "--cpus", "9"], "give 2 to 8"), (["exec"], "exec needs a command"),
                           (["test", "--driver", "in-tree"], "has no in-tree ntsync"),
                           (["test", "--debs", "/nonexistent"], "not a folder")):
            with self.assertRaisesRegex(Usage, says):
                cloud.main(argv)

    def test_wine_builds_a_request(self):
        from ntsync_vm import wine
        self.assertIn("cloud.Request(", Path(wine.__file__).read_text())
        self.assertNotIn("SimpleNamespace", Path(wine.__file__).read_text())

    def test_library_code_neither_exits_nor_reads_options_loosely(self):
        for f in sorted(PKG.glob("*.py")):
            text = f.read_text()
            self.assertNotIn("getattr(opts", text, f.name)
            self.assertNotIn("die(", text, f.name)
            if f.name not in ("__main__.py", "cli.py"):
                self.assertNotRegex(text, r"\bsys\.exit\(", f"{f.name}: only the command line exits")


class Results(unittest.TestCase):
    def result(self, **kw):
        base = dict(job="test", suite="trixie", driver="ours", run_dir=Path("/r"), console=Path("/r/c"),
                    results=Path("/r/out"), kernel="6.12", accel="tcg")
        return cloud.Result(**dict(base, **kw))

    def test_verdict(self):
        self.assertEqual(self.result(job_rc=0).verdict(), (0, []))
        self.assertEqual(self.result(job_rc=2, problems=("kernel Oops",)).verdict(),
                         (1, ["the job exited 2", "kernel Oops"]))

    def test_one_table_printer_reads_fields(self):
        ok = cloud.row_of(self.result(job_rc=0, summary=cloud.Summary(10, 0, 1)), 0, 61)
        bad = cloud.failed_row(cloud.Request(job=jobs.get("test", "cloud"), suite="bookworm"),
                               Failure("the guest stalled\nmore"), 5)
        from contextlib import redirect_stdout
        from io import StringIO
        buf = StringIO()
        with redirect_stdout(buf):
            rc = cloud.print_table([ok, bad], (("suite", lambda r: r.suite), *cloud.COUNTS,
                                               ("gates", lambda r: r.gates), *cloud.END))
        text = buf.getvalue()
        self.assertEqual(rc, 1)
        self.assertIn("trixie    10      0       1        clean              1m01s  PASS", text)
        self.assertIn("bookworm  -       -       -        the guest stalled  5s     FAIL", text)
        self.assertTrue(text.rstrip().endswith("10 passed, 1 failed, 1 skipped"))

    def test_a_failing_matrix_row_fails_that_row_and_the_matrix_goes_on(self):
        calls = []

        def run_guest(req, prep):
            calls.append((req.suite, req.driver))
            if req.suite == "bookworm":
                raise Failure("stage 'boot' stalled")
            return self.result(suite=req.suite, driver=req.driver, job_rc=0, summary=cloud.Summary(5, 0, 0))
        saved = cloud.run_guest, cloud.prepare, cloud.build_debs, cloud.build_compat_suite, cloud.differential
        cloud.run_guest, cloud.prepare = run_guest, lambda req, **kw: cloud.Prepared()
        cloud.build_debs, cloud.build_compat_suite = lambda arch=None: [], lambda arch: None
        cloud.differential = lambda res: "-"
        try:
            from contextlib import redirect_stdout
            from io import StringIO
            buf = StringIO()
            with redirect_stdout(buf):
                rc = cloud.job_matrix(cloud.Request(job=jobs.get("test", "cloud"), suite="trixie"))
        finally:
            cloud.run_guest, cloud.prepare, cloud.build_debs, cloud.build_compat_suite, cloud.differential = saved
        self.assertEqual(rc, 1)
        self.assertEqual(calls, suites.matrix_plan())
        self.assertIn("stage 'boot' stalled", buf.getvalue())
        self.assertTrue(buf.getvalue().rstrip().endswith(f"{5 * (len(calls) - 1)} passed, 1 failed, 0 skipped"))

    def test_the_matrix_has_an_architecture_dimension(self):
        calls, debs_for = [], []

        def run_guest(req, prep):
            calls.append((req.arch.name, req.suite, req.driver))
            return self.result(suite=req.suite, driver=req.driver, job_rc=0, summary=cloud.Summary(5, 0, 0))

        def build_debs(arch=None):
            debs_for.append(arch.name)
            return []
        saved = (cloud.run_guest, cloud.prepare, cloud.build_debs, cloud.build_compat_suite, cloud.differential,
                 cloud.arch_rows)
        cloud.run_guest, cloud.prepare, cloud.build_debs = run_guest, lambda req, **kw: cloud.Prepared(), build_debs
        cloud.build_compat_suite, cloud.differential = lambda arch: None, lambda res: "-"
        cloud.arch_rows = lambda names, only: [
            cloud.Row(suite="trixie", kernel="6.12", arch=n, guest="initramfs", summary=cloud.Summary(3, 0, 0), ok=True,
                      smoke="9 passed, 0 failed") for n in names]
        try:
            from contextlib import redirect_stdout
            from io import StringIO
            buf = StringIO()
            req = cloud.Request(job=jobs.get("test", "cloud"), suite="trixie")
            with redirect_stdout(buf):
                rc = cloud.job_matrix(req, "trixie", ["arm64", "armhf"])
            self.assertEqual(rc, 0)
            # cloud rows: amd64's (--arch), then arm64's (cloud guests boot for it), each with its own
            # packages; armhf has initramfs rows only
            self.assertEqual(calls, [("amd64", "trixie", "ours"), ("arm64", "trixie", "ours")])
            self.assertEqual(debs_for, ["amd64", "arm64"])
            text = buf.getvalue()
            self.assertRegex(text, r"\narm64 +cloud +trixie ")
            self.assertRegex(text, r"\narmhf +initramfs +trixie .*9 passed, 0 failed +3 +0 +0 ")
            self.assertTrue(text.rstrip().endswith("16 passed, 0 failed, 0 skipped"))
            calls.clear()
            with redirect_stdout(buf):
                cloud.job_matrix(req, "trixie", ["arm64", "arm64-16k"], cloud_rows=False)
            # a kernel flavour's row has initramfs rows only, unless --arch names it
            self.assertEqual(calls, [("arm64", "trixie", "ours")])
        finally:
            (cloud.run_guest, cloud.prepare, cloud.build_debs, cloud.build_compat_suite, cloud.differential,
             cloud.arch_rows) = saved

    def test_a_matrix_row_time_leaves_out_the_guest_lock_queue(self):
        from ntsync_vm import lock
        saved = lock.WAITED[0]
        try:
            t, w = cloud.time.monotonic() - 100, lock.WAITED[0]
            lock.WAITED[0] += 60
            self.assertAlmostEqual(cloud.since(t, w), 40, delta=5)
        finally:
            lock.WAITED[0] = saved

    def test_matrix_plan_per_architecture(self):
        has = [n for n in suites.names(True) if "arm64" in suites.SUITES[n].architectures]
        self.assertEqual(suites.matrix_plan("arm64"),
                         [(n, "ours") for n in has] + [(n, "in-tree") for n in has if suites.SUITES[n].in_tree])
        self.assertNotIn("bookworm", [n for n, _ in suites.matrix_plan("riscv64")])

    def test_dkms_verdict_from_the_guest_install_log(self):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d)
            self.assertEqual(cloud.dkms_verdict(out), "-")
            (out / "uname").write_text("6.12.118+deb13-cloud-arm64\n")
            log = ("[   53.70] Setting up ntsync-dkms (1.1.0-1) ...\n"
                   "[   54.00] Loading new ntsync/1.1.0 DKMS files...\n"
                   "[   96.63] Building module(s).............. done.\n"
                   "[  179.50] ntsync-dkms: Linux 6.12.118+deb13-cloud-arm64: ntsync 1.1.0 built and installed "
                   "by DKMS.\n"
                   "[  180.01] Setting up ntsync-tests (1.1.0-1) ...\n")
            (out / "install.log").write_text(log)
            self.assertEqual(cloud.dkms_verdict(out), "built in 126 s")
            # another kernel's line (a second kernel installed) is not the running one's
            (out / "install.log").write_text(log.replace("6.12.118+deb13-cloud-arm64:", "6.12.99-arm64:"))
            self.assertEqual(cloud.dkms_verdict(out), "FAIL: no verdict from the postinst")
            (out / "uname").write_text("7.3.4+deb13-cloud-arm64\n")
            setup = "[ 50.0] Setting up ntsync-dkms (1.1.0-1) ...\n[ 51.0] ntsync-dkms: Linux 7.3.4+deb13-cloud-arm64: "
            (out / "install.log").write_text(setup + "has its own ntsync driver (the complete in-tree one, Linux 6.14 "
                                             "and later); nothing built, the kernel's module is used.\n")
            self.assertEqual(cloud.dkms_verdict(out), "not built: in-tree driver")
            (out / "install.log").write_text(setup + "not built, its headers are missing (apt-get install "
                                             "linux-headers-7.3.4+deb13-cloud-arm64).\n")
            self.assertEqual(cloud.dkms_verdict(out), "FAIL: not built")


class SmokeInSuiteBoot(unittest.TestCase):
    def lines(self, *body):
        text = "\n".join(body)
        return console.clean_lines(text), console.marks(text)

    def test_smoke_line(self):
        self.assertEqual(boot.smoke_line(*self.lines("##ntsync## insmod")), "-")
        self.assertEqual(boot.smoke_line(*self.lines("##ntsync## smoke", "ok 1 x", "smoke: 111 passed, 0 failed",
                                                     "##ntsync## smoke-exit 0")), "111 passed, 0 failed")
        self.assertEqual(boot.smoke_line(*self.lines("##ntsync## smoke", "smoke: 110 passed, 1 failed",
                                                     "##ntsync## smoke-exit 1")), "110 passed, 1 failed FAIL (exit 1)")
        self.assertEqual(boot.smoke_line(*self.lines("##ntsync## smoke", "Segmentation fault",
                                                     "##ntsync## smoke-exit 139")), "FAIL (no result line, exit 139)")
        # a zero exit with failures printed is still a failure
        self.assertEqual(boot.smoke_line(*self.lines("##ntsync## smoke", "smoke: 110 passed, 1 failed",
                                                     "##ntsync## smoke-exit 0")), "110 passed, 1 failed FAIL (exit 0)")


class Import(unittest.TestCase):
    def test_nothing_is_read_from_disk_at_import(self):
        # every module imported with file reads forbidden: a read at import time raises
        code = f"""
import builtins, io, pathlib, sys
sys.path.insert(0, {str(REPO / 'vm')!r})
def no(*a, **k):
    raise AssertionError(f"read at import time: {{a[:1]}}")
builtins.open = no
io.open = no
pathlib.Path.read_text = no
pathlib.Path.read_bytes = no
pathlib.Path.open = no
import importlib
for m in {sorted(p.stem for p in PKG.glob('*.py') if p.stem not in ('__main__',))!r}:
    importlib.import_module("ntsync_vm." + m if m != "__init__" else "ntsync_vm")
print("ok")
"""
        with tempfile.TemporaryDirectory() as t:
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=t)
        self.assertEqual(p.stdout.strip(), "ok", p.stderr[-2000:])


def record(name):
    """`test_tables.py --record ARCH`: write test_data/argv/ARCH.txt from the table, for a new
    row (read it before committing it: it is the expectation from then on)."""
    arch = arches.get(name)
    lines = [f"# QEMU command lines of {name} guests, recorded with test_tables.py --record {name};",
             "# test_tables.py builds them from arches.py alone and compares. CASE ACCEL: ARGV"]
    for case, m in machines(arch).items():
        for accel in ("tcg", "kvm"):
            lines.append(f"{case} {accel}: {shlex.join(qemu.argv(m, accel))}")
    out = HERE / "test_data" / "argv" / f"{name}.txt"
    out.write_text("\n".join(lines) + "\n")
    print(out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--record"] and len(sys.argv) == 3:
        os.environ.pop("NTSYNC_QEMU", None)
        record(sys.argv[2])
    else:
        unittest.main(verbosity=2)
