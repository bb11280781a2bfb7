#!/usr/bin/python3
"""Host tests of vm/ntsync_vm (no guest, no root, no /dev/kvm): the suite table, QEMU
command lines, the initramfs writer, console parsing and the boot jobs' verdicts against
recorded console logs (test_data/), the kernel-log gates (tests/kernel-log-gates, the KCSAN
exemption, taint), stage time-outs, the boot-crash retry rule and the guest lock. Runs in
`meson test` (suite vm)."""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import unittest.mock
import uuid
import zlib
from contextlib import redirect_stdout, redirect_stderr
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DATA = HERE / "test_data"
sys.path.insert(0, str(REPO / "vm"))

from ntsync_vm import arches, boot, cloud, console, gates, image, initramfs, jobs, lifecycle, lock, qemu, run, \
    suites  # noqa: E402
from ntsync_vm.util import Failure, Usage  # noqa: E402


def quiet(fn, *a, **kw):
    out, err = StringIO(), StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        r = fn(*a, **kw)
    return r, out.getvalue(), err.getvalue()


def replaying(test, *consoles, **env):
    """A recorded guest for TEST: vm/tests/qemu-standin plays CONSOLES, one per boot, under
    TCG, in a scratch cache; nothing of the caller's NTSYNC_/STANDIN_ environment leaks in.
    Returns (the scratch folder, the stand-in's log of QEMU calls)."""
    t = tempfile.TemporaryDirectory()
    test.addCleanup(t.cleanup)
    saved = dict(os.environ)
    test.addCleanup(lambda: (os.environ.clear(), os.environ.update(saved)))
    for k in list(os.environ):
        if k.startswith(("NTSYNC_", "STANDIN_")):
            del os.environ[k]
    log = Path(t.name) / "calls"
    log.write_text("")
    os.environ.update({"NTSYNC_CACHE": t.name, "NTSYNC_ACCEL": "tcg", "NTSYNC_VM_PARALLEL": "1",
                       "NTSYNC_QEMU": str(HERE / "qemu-standin"), "STANDIN_LOG": str(log),
                       "STANDIN_CONSOLE": ":".join(str(c) for c in consoles), **env})
    return Path(t.name), log


class Suites(unittest.TestCase):
    def test_table(self):
        # (no list of suites here: the table is the one list; these are its rules)
        self.assertIn(suites.DEFAULT, suites.SUITES)
        self.assertTrue(suites.SUITES[suites.bench_default()].in_tree)
        for name, s in suites.SUITES.items():
            self.assertTrue(s.sources[0].startswith("deb "), name)
            self.assertTrue(any("linux-headers" in p for p in s.kernel_packages()), name)
            self.assertTrue(set(s.check) <= set(jobs.checked()), name)
            self.assertTrue(set(s.architectures) <= set(arches.ARCHES), name)
            if s.check:
                self.assertTrue(s.image, f"{name}: ./check boots its cloud image")
            # a kernel either gets ours from DKMS or has mainline's driver, never both or neither
            self.assertNotEqual(suites.builds_ours(s.series + ".0"), s.in_tree, name)
        self.assertEqual(suites.matrix_plan()[:1], [(suites.names(True)[0], "ours")])

    def test_kernel_range_has_one_source(self):
        # dkms.conf's BUILD_EXCLUSIVE_KERNEL is the range; the launcher's rule is derived from it
        rx = suites.dkms_range()
        self.assertEqual(suites.kernel_with_driver(), suites.first_in_tree(rx))
        for major, minor in ((6, m) for m in range(1, 30)):
            series = f"{major}.{minor}"
            ours = bool(rx.search(f"{series}.0-27-cloud-amd64"))
            self.assertEqual(ours, (6, 1) <= (major, minor) < suites.kernel_with_driver(), series)
            if (major, minor) >= (6, 1):
                self.assertNotEqual(ours, suites.has_in_tree_driver(series), series)
        self.assertFalse(rx.search("6.100.0"))  # 6.100 is no 6.10
        # a range whose end moved is followed, not contradicted
        with tempfile.TemporaryDirectory() as t:
            conf = Path(t) / "dkms.conf"
            conf.write_text('BUILD_EXCLUSIVE_KERNEL="^6\\.([1-9]|1[0-4])([.+-]|$)"\n')
            self.assertEqual(suites.first_in_tree(suites.dkms_range(conf)), (6, 15))
            conf.write_text("nothing\n")
            with self.assertRaisesRegex(Failure, "BUILD_EXCLUSIVE_KERNEL"):
                suites.dkms_range(conf)

    def test_check_lists_come_from_the_table(self):
        for job in jobs.checked():
            p = subprocess.run([str(REPO / "vm/ntsync-vm"), "suites", "--job", job], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.split(), suites.for_job(job))
        text = (REPO / "check").read_text() + (REPO / "tests/wine-gate-check").read_text()
        for name in suites.SUITES:
            self.assertNotRegex(text, rf"(for s in|suites=\(|--suite) {name}\b", "a suite list by hand")

    def test_alias_and_errors(self):
        r, _, err = quiet(suites.resolve, "trixie-7x")
        self.assertEqual(r, "trixie-backports")
        self.assertIn("deprecated", err)
        self.assertEqual(suites.resolve("unstable"), "sid")
        with self.assertRaisesRegex(Usage, "unknown suite 'jessie': use one of bookworm"):
            suites.resolve("jessie")
        with self.assertRaisesRegex(Usage, "no cloud guest image"):
            suites.resolve("sid", image_only=True)


class Argv(unittest.TestCase):
    def machine(self, **kw):
        return qemu.Machine(console=Path("/tmp/c.log"), **kw)

    def test_tcg_multi_and_kvm(self):
        m = self.machine(smp=2, kernel="/k", initrd="/i", append="console=ttyS0")
        tcg = qemu.argv(m, "tcg")
        self.assertEqual(tcg[tcg.index("-accel") + 1], "tcg,thread=multi")
        self.assertEqual(tcg[tcg.index("-cpu") + 1], "max")
        self.assertEqual(tcg[tcg.index("-append") + 1], "console=ttyS0")
        self.assertIn("-no-reboot", tcg)
        self.assertEqual(tcg[tcg.index("-nic") + 1], "none")
        self.assertIn("chardev:ser0", tcg)
        self.assertIn("file,id=ser0,path=/tmp/c.log", tcg)
        kvm = qemu.argv(m, "kvm")
        self.assertEqual(kvm[kvm.index("-accel") + 1:kvm.index("-accel") + 4], ["kvm", "-cpu", "host"])

    def test_icount_bench(self):
        m = self.machine(smp=1, cpu="qemu64", icount=True, nice=10)
        a = qemu.argv(m, "tcg")
        self.assertEqual(a[:3], ["nice", "-n", "10"])
        self.assertEqual(a[a.index("-accel") + 1], "tcg")
        self.assertEqual(a.count("-cpu"), 1)
        self.assertEqual(a[a.index("-cpu") + 1], "qemu64")
        self.assertEqual(a[a.index("-icount") + 1], "shift=0,sleep=off")
        self.assertNotIn("-icount", qemu.argv(m, "kvm"))

    def test_drives_and_net(self):
        m = self.machine(net=True, drives=[qemu.Drive("/d.qcow2", "qcow2", bootindex=1, opts="cache=unsafe"),
                                           qemu.Drive("/in.tar", serial="ntsync-in", readonly=True)])
        a = qemu.argv(m, "tcg")
        self.assertIn("file=/d.qcow2,if=none,id=d0,format=qcow2,cache=unsafe", a)
        self.assertIn("virtio-blk-pci,drive=d0,bootindex=1", a)
        self.assertIn("file=/in.tar,if=none,id=d1,format=raw,readonly=on", a)
        self.assertIn("virtio-blk-pci,drive=d1,serial=ntsync-in", a)
        self.assertEqual(a[a.index("-nic") + 1], "user,model=virtio-net-pci")

    def test_secure_boot_firmware(self):
        m = self.machine(firmware=qemu.Firmware("/fw/code.fd", "/run/vars.fd"))
        for accel in ("tcg", "kvm"):
            a = qemu.argv(m, accel)
            self.assertEqual(a[a.index("-machine") + 1], "q35,smm=on")
            self.assertEqual(a[a.index("-global") + 1], "driver=cfi.pflash01,property=secure,value=on")
            self.assertIn("if=pflash,format=raw,unit=0,readonly=on,file=/fw/code.fd", a)
            self.assertIn("if=pflash,format=raw,unit=1,file=/run/vars.fd", a)
        plain = qemu.argv(self.machine(firmware=qemu.Firmware("/c", "/v", secure=False)), "tcg")
        self.assertEqual(plain[plain.index("-machine") + 1], "q35")
        self.assertNotIn("-global", plain)
        self.assertNotIn("-global", qemu.argv(self.machine(), "tcg"))

    def test_gpt(self):
        with tempfile.NamedTemporaryFile() as f:
            f.truncate(64 * 1024 * 1024)
            sectors = 64 * 2048
            image.write_gpt(f.name, [(image.ESP_GUID, "EFI system partition", 2048, 4095),
                                     (image.LINUX_GUID, "root", 4096, sectors - 2049)])
            d = Path(f.name).read_bytes()
        self.assertEqual(d[510:512], b"\x55\xaa")
        self.assertEqual(d[450], 0xee)
        for hdr_lba, entries_lba, other in ((1, 2, sectors - 1), (sectors - 1, sectors - 33, 1)):
            h = bytearray(d[hdr_lba * 512:hdr_lba * 512 + 92])
            self.assertEqual(h[:8], b"EFI PART")
            crc = int.from_bytes(h[16:20], "little")
            h[16:20] = bytes(4)
            self.assertEqual(zlib.crc32(h), crc)
            self.assertEqual(int.from_bytes(h[24:32], "little"), hdr_lba)
            self.assertEqual(int.from_bytes(h[32:40], "little"), other)
            self.assertEqual(int.from_bytes(h[72:80], "little"), entries_lba)
            entries = d[entries_lba * 512:entries_lba * 512 + 128 * 128]
            self.assertEqual(zlib.crc32(entries), int.from_bytes(h[88:92], "little"))
            self.assertEqual(uuid.UUID(bytes_le=entries[:16]), uuid.UUID(image.ESP_GUID))
            self.assertEqual(int.from_bytes(entries[32:40], "little"), 2048)
            self.assertEqual(entries[56:56 + 40].decode("utf-16-le"), "EFI system partition")
            self.assertEqual(int.from_bytes(entries[128 + 40:128 + 48], "little"), sectors - 2049)
        with tempfile.NamedTemporaryFile() as f:
            f.truncate(1024 * 1024)
            with self.assertRaises(Exception):
                image.write_gpt(f.name, [(image.LINUX_GUID, "too big", 2048, 4096)])

    def test_interactive(self):
        a = qemu.argv(self.machine(interactive=True), "tcg")
        self.assertIn("stdio,id=ser0,mux=on,signal=off,logfile=/tmp/c.log", a)
        self.assertIn("-mon", a)


class Initramfs(unittest.TestCase):
    def test_build_and_read(self):
        with tempfile.TemporaryDirectory() as t:
            t = Path(t)
            bb = t / "busybox"
            bb.write_bytes(b"\x7fELF" + b"\0" * 100)
            tool = t / "dir" / "ntsync-fuzz"
            tool.parent.mkdir()
            tool.write_bytes(b"fuzz")
            tool.chmod(0o755)
            initramfs.build(t / "i.gz", "#!/bin/sh\necho hi\n", {"amd64": t / "dir", "bench-args": "--quick "},
                            busybox=bb)
            got = initramfs.read(t / "i.gz")
            self.assertEqual(got["init"], (0o100755, b"#!/bin/sh\necho hi\n"))
            self.assertEqual(got["bin/sh"], (0o120777, b"busybox"))
            self.assertEqual(got["amd64/ntsync-fuzz"], (0o100755, b"fuzz"))
            self.assertEqual(got["bench-args"][1], b"--quick ")
            self.assertEqual(got["amd64"][0], 0o040755)
            names = list(got)
            self.assertLess(names.index("bin"), names.index("bin/busybox"), "folders before their files")
            with self.assertRaisesRegex(Failure, "missing"):
                initramfs.build(t / "j.gz", "x", {"nope": t / "nope"}, busybox=bb)


class Gates(unittest.TestCase):
    def test_file_is_read(self):
        g = gates.load()
        self.assertGreaterEqual(len(g), 20)
        whats = [w for _, w in g]
        self.assertIn("kernel Oops", whats)

    def test_judge(self):
        lines = ["[ 1.0] RCU lockdep checking is enabled.", "[ 1.1] KernelAddressSanitizer initialized",
                 "[ 2.0] WARNING: CPU: 1 PID: 3 at drivers/misc/ntsync.c:100", "[ 2.1] BUG: KASAN: use-after-free"]
        p = gates.judge(lines)
        self.assertTrue(any(x.startswith("kernel WARNING") for x in p), p)
        self.assertTrue(any(x.startswith("KASAN report") for x in p), p)
        self.assertEqual(gates.judge(lines[:2]), [])

    def test_bad_file(self):
        with tempfile.NamedTemporaryFile("w", suffix="gates") as f:
            f.write("# c\nno tab here\n")
            f.flush()
            with self.assertRaisesRegex(Failure, "not 'PATTERN<TAB>what"):
                gates.load(f.name)

    def test_kcsan(self):
        lines = (DATA / "kcsan-reports.console").read_text().splitlines()
        ours, via, own = gates.kcsan_reports(lines)
        self.assertEqual(ours, ["BUG: KCSAN: data-race in ntsync_obj_ioctl [ntsync] / ntsync_wait_any [ntsync]"])
        self.assertEqual(len(via), 1)
        self.assertIn("hrtimer_wakeup", via[0])
        self.assertEqual(len(own), 1)
        # the KCSAN exemption: on a KCSAN kernel its reports are not the list's \bBUG:
        self.assertEqual(gates.judge(lines, kcsan=True), [])
        self.assertTrue(gates.judge(lines, kcsan=False))
        rc, out, err = quiet(boot.judge_fuzz, "\n".join(lines), kcsan=True)
        self.assertEqual(rc, 1)
        self.assertIn("in ntsync's code: 1", err)
        # the kernel's own reports alone pass
        own_only = [x for x in lines if "ntsync" not in x or "guest-abuse" in x]
        self.assertEqual(quiet(boot.judge_fuzz, "\n".join(own_only), kcsan=True)[0], 0)

    def test_recorded_fuzz(self):
        text = (DATA / "fuzz-trixie.console").read_text(errors="replace")
        rc, out, err = quiet(boot.judge_fuzz, text)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("11 passed, 0 failed, 1 skipped", out)
        bad = text.replace("##ntsync## guest-abuse-exit 0",
                           "[  99.0] Oops: general protection fault\n##ntsync## guest-abuse-exit 0")
        self.assertEqual(quiet(boot.judge_fuzz, bad)[0], 1)
        self.assertEqual(quiet(boot.judge_fuzz, text.replace("guest-abuse-exit 0", "guest-abuse-exit 1"))[0], 1)

    def test_taint(self):
        self.assertIsNone(gates.taint_problem(4096 | 8192))
        self.assertEqual(gates.taint_problem(4096 | 512), "kernel tainted: W (tainted=4608)")
        self.assertIsNone(gates.taint_problem(512, start=512))
        sb = gates.TAINT_ALLOWED_SECURE_BOOT
        self.assertIsNone(gates.taint_problem(4096, allowed=sb))
        self.assertEqual(gates.taint_problem(4096 | 8192, allowed=sb), "kernel tainted: E (tainted=12288)")

    def test_secure_boot_facts(self):
        from ntsync_vm import cloud
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            self.assertEqual(cloud.judge_secure_boot(d, "enrolled")[0],
                             ["the guest reported no Secure Boot state (secure-boot.txt missing)"])
            good = ("sb_state=SecureBoot enabled\nlockdown=none [integrity] confidentiality\n"
                    "dkms_key=/var/lib/dkms/mok.pub is already enrolled\nsigner=DKMS module signing key\n")
            (d / "secure-boot.txt").write_text(good)
            problems, notes = cloud.judge_secure_boot(d, "enrolled")
            self.assertEqual(problems, [])
            self.assertIn("module signed by: DKMS module signing key", notes)
            problems, _ = cloud.judge_secure_boot(d, "not-enrolled")
            self.assertEqual(len(problems), 1)
            self.assertIn("expected '... is not enrolled'", problems[0])
            (d / "secure-boot.txt").write_text("sb_state=SecureBoot disabled\nlockdown=[none] integrity\n"
                                               "dkms_key=/var/lib/dkms/mok.pub is not enrolled\n")
            problems, _ = cloud.judge_secure_boot(d, "not-enrolled")
            self.assertEqual(len(problems), 2)
            self.assertIn("Secure Boot is not on", problems[0])
            self.assertIn("not locked down", problems[1])


class SmokeVerdict(unittest.TestCase):
    def setUp(self):
        self.text = (DATA / "smoke-trixie.console").read_text(errors="replace")
        self.tmp = tempfile.TemporaryDirectory()
        os.environ["NTSYNC_CACHE"] = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_recorded_pass(self):
        marks = console.marks(self.text)
        self.assertEqual(console.mark(marks, "taint"), "12288")
        rc, out, err = quiet(boot.judge_smoke, self.text, "trixie")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("smoke: 111 passed, 0 failed", out.splitlines())
        self.assertIn("== rmmod ok", out.splitlines())

    def test_recorded_other_architectures(self):
        # the launcher's own initramfs guests of issue 37 (TCG, cross-built module, that
        # architecture's busybox and static ntsync-smoke): each console judged as amd64's is
        for arch in ("arm64", "armhf", "ppc64el", "s390x", "riscv64"):
            text = (DATA / f"smoke-trixie-{arch}.console").read_text(errors="replace")
            self.assertFalse(console.boot_crash(DATA / f"smoke-trixie-{arch}.console"), arch)
            rc, out, err = quiet(boot.judge_smoke, text, "trixie")
            self.assertEqual(rc, 0, arch + out + err)
            self.assertIn("smoke: 111 passed, 0 failed", out.splitlines(), arch)

    def test_each_gate_fails_it(self):
        cases = {
            "rmmod": self.text.replace("##ntsync## rmmod ok", "rmmod: can't unload module"),
            "taint": self.text.replace("##ntsync## taint 12288", "##ntsync## taint 12800"),
            "report": self.text.replace("##ntsync## end",
                                        "[    3.1] WARNING: CPU: 0 PID: 1 at ntsync.c:1\n##ntsync## end"),
            "smoke": self.text.replace("##ntsync## smoke-exit 0", "##ntsync## smoke-exit 1"),
            "truncated": self.text.split("##ntsync## smoke")[0],
        }
        for name, text in cases.items():
            rc, out, err = quiet(boot.judge_smoke, text, "trixie")
            self.assertEqual(rc, 1, f"{name}: {out}{err}")

    def test_bench_compare_in_guest(self):
        text = ("M json-begin intree\n{\"a\": 1}\nM json-end intree\nM json-begin ntsync\n{\"a\": 2}\n"
                "M json-end ntsync\nM compare-begin\nwait-any  1.00  0.95\nM compare-exit 0\n"
                "M rmmod ok\nM taint 12288\nM smoke-exit 0\n").replace("M ", "##ntsync## ")
        text = text.replace("smoke-exit", "bench-exit")
        rc, out, _ = quiet(boot.judge_smoke, text, "trixie-backports", bench=True, exit_mark="bench-exit")
        self.assertEqual(rc, 0)
        self.assertIn("wait-any  1.00  0.95", out)
        self.assertEqual((Path(self.tmp.name) / "logs/bench-trixie-backports-ntsync.json").read_text(),
                         "{\"a\": 2}\n")
        rc, _, _ = quiet(boot.judge_smoke, text.replace("compare-exit 0", "compare-exit 1"), "x", bench=True,
                         exit_mark="bench-exit")
        self.assertEqual(rc, 1)
        # the exit marker is the job's own: a bench console is no smoke pass
        self.assertEqual(quiet(boot.judge_smoke, text, "x", bench=True)[0], 1)


class SuiteVerdict(unittest.TestCase):
    """The suite job's verdict (boot.judge_suite): cmocka's totals per program, per ABI."""

    def console(self, compat=True, sem_failed=0, crash=False, skip77=False):
        out = ["M uptime init 1.50", "M insmod", "M dev crw------- 1 0 0 10, 125 /dev/ntsync"]
        for abi in ("native", "compat") if compat else ("native",):
            out += [f"M suite-group {abi} test-sem", "[==========] tests: Running 3 test(s).",
                    f"[  PASSED  ] {3 - sem_failed} test(s)."]
            if sem_failed:
                out += [f"[  FAILED  ] {sem_failed} test(s), listed below:", "[  FAILED  ] release"]
            out += [f"M suite-exit {abi} test-sem {sem_failed}", f"M suite-group {abi} test-time"]
            if skip77:
                out += [f"M suite-exit {abi} test-time 77"]
            elif crash:
                out += ["Segmentation fault", f"M suite-exit {abi} test-time 139"]
            else:
                out += ["[  PASSED  ] 2 test(s).", "[  SKIPPED ] 1 test(s), listed below:",
                        f"M suite-exit {abi} test-time 0"]
        out += ["M uptime suite 61.50", "M rmmod ok", "M taint 12288", "M end"]
        return "\n".join(out).replace("M ", "##ntsync## ") + "\n"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        os.environ["NTSYNC_CACHE"] = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_pass_both_abis(self):
        rc, out, err = quiet(boot.judge_suite, self.console(), ["arm64", "armhf"], 70)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("arm64 (native): 5 passed, 0 failed, 1 skipped", out.splitlines())
        self.assertIn("armhf (compat): 5 passed, 0 failed, 1 skipped", out.splitlines())
        self.assertIn("times: kernel to /init 1.5 s, suite 60.0 s (guest clock), whole guest run 70 s", out)
        counts = boot.suite_counts(console.clean_lines(self.console(compat=False, skip77=True)))
        self.assertEqual(counts, {"native": [3, 0, 1, []]})

    def test_recorded_s390x(self):
        # the launcher's s390x guest (big-endian, trixie 6.12.113, TCG): the whole suite
        text = (DATA / "suite-trixie-s390x.console").read_text(errors="replace")
        rc, out, err = quiet(boot.judge_suite, text, ["s390x"], 72)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("s390x (native): 193 passed, 0 failed, 1 skipped", out.splitlines())
        rc, out, _ = quiet(boot.judge_suite, text, ["s390x", "armhf"])
        self.assertEqual(rc, 1, "a compat ABI that never ran fails the verdict")

    def test_failures(self):
        cases = {
            "a failed case": (self.console(sem_failed=1), ["s390x", "x"]),
            "a crash": (self.console(crash=True), ["s390x", "x"]),
            "the compat ABI never ran": (self.console(compat=False), ["arm64", "armhf"]),
            "rmmod": (self.console().replace("##ntsync## rmmod ok", "rmmod: busy"), ["arm64", "armhf"]),
            "unfinished": (self.console().split("##ntsync## end")[0], ["arm64", "armhf"]),
        }
        for name, (text, names) in cases.items():
            rc, out, err = quiet(boot.judge_suite, text, names)
            self.assertEqual(rc, 1, f"{name}: {out}{err}")
        rc, out, _ = quiet(boot.judge_suite, self.console(sem_failed=1, compat=False), ["s390x"])
        self.assertIn("s390x (native): 4 passed, 1 failed, 1 skipped (test-sem)", out.splitlines())


class UpstreamVerdict(unittest.TestCase):
    NEW_CASES = boot.new_cases(boot.upstream_series())

    def console(self, unpatched_fails=NEW_CASES, patched_fail=0):
        out = []
        for v in ("unpatched", "patched"):
            out += [f"M selftest-begin {v}", "ok 1 ntsync.semaphore"]
            for i, c in enumerate(unpatched_fails if v == "unpatched" else ()):
                out.append(f"not ok {i + 2} ntsync.{c}")
            out += [f"M selftest-end {v}", f"M suite-group {v} test-sem", "[  PASSED  ] 12 test(s).",
                    f"[  FAILED  ] {patched_fail if v == 'patched' else 0} test(s), listed below:",
                    f"M suite-exit {v} test-sem 0", f"M rmmod {v} ok"]
        return "\n".join(out + ["M taint 12288", "M end"]).replace("M ", "##ntsync## ")

    def test_new_cases_come_from_the_series(self):
        # every driver fix in upstream/ brings a selftest case that must fail unpatched
        self.assertEqual(self.NEW_CASES, ("wait_any_duplicate_reports_lowest_index", "alert_must_be_event",
                                          "wait_all_objects_take_priority_over_alert",
                                          "objects_charged_to_memcg"))

    def test_verdicts(self):
        rc, out, _ = quiet(boot.judge_upstream, self.console())
        self.assertEqual(rc, 0, out)
        self.assertIn("patched: selftest 1 passed, 0 failed; suite (NTSYNC_STRICT=1) 12 passed, 0 failed", out)
        self.assertEqual(quiet(boot.judge_upstream, self.console(unpatched_fails=()))[0], 1)
        self.assertEqual(quiet(boot.judge_upstream, self.console(unpatched_fails=self.NEW_CASES[:2]))[0], 1)
        self.assertEqual(quiet(boot.judge_upstream, self.console(patched_fail=1))[0], 1)
        with self.assertRaisesRegex(Failure, "did not finish"):
            quiet(boot.judge_upstream, "##ntsync## selftest-begin unpatched\n")


class Lifecycle(unittest.TestCase):
    TESTS = [("dkms-lifecycle", {"needs-reboot"}), ("dkms-new-kernel", {"skippable"})]

    def test_control_of_the_tree(self):
        tests = lifecycle.parse_control(REPO / "debian/tests/control")
        self.assertIn("dkms-lifecycle", [n for n, _ in tests])
        self.assertTrue(all(r <= lifecycle.SUPPORTED for _, r in tests))
        with tempfile.TemporaryDirectory() as t:
            (Path(t) / "control").write_text("Tests: x\nRestrictions: needs-magic\n")
            (Path(t) / "x").write_text("")
            with self.assertRaisesRegex(Usage, "needs-magic"):
                lifecycle.parse_control(Path(t) / "control")

    def test_judge(self):
        text = ("[    1.0] Linux version 6.12\r\n##ntsync## | dkms-lifecycle PASS built: dkms built ntsync\n"
                "root@lc:~# ##ntsync## | dkms-lifecycle PASS loaded: postinst loaded ntsync\n"
                "##ntsync## result dkms-lifecycle PASS exit 0\n##ntsync## | dkms-new-kernel skipped\n"
                "##ntsync## result dkms-new-kernel SKIP exit 77\n##ntsync## taint 12288\n##ntsync## done\n")
        out, p, f, s = lifecycle.judge(text, self.TESTS)
        self.assertEqual((p, f, s), (3, 0, 1), out)
        out, p, f, s = lifecycle.judge(text.replace("taint 12288", "taint 12800"), self.TESTS)
        self.assertEqual(f, 1)
        # a test that fails without a FAIL line of its own, and a run that stops early
        out, p, f, s = lifecycle.judge(text.replace("result dkms-lifecycle PASS", "result dkms-lifecycle FAIL")
                                       .replace("##ntsync## done\n", ""), self.TESTS)
        self.assertEqual(f, 2, out)
        out, p, f, s = lifecycle.judge(text + "[   99.0] BUG: unable to handle page fault\n", self.TESTS)
        self.assertEqual(f, 1)
        self.assertTrue(any("kernel BUG" in x for x in out))


class Console(unittest.TestCase):
    def test_stage_timeouts_scale(self):
        os.environ["NTSYNC_TIMEOUT_SCALE"] = "2"
        try:
            self.assertEqual(console.timeout_for("boot"), 600)
            self.assertEqual(console.timeout_for("job", 100), 200)
        finally:
            del os.environ["NTSYNC_TIMEOUT_SCALE"]

    def test_boot_crash_rule(self):
        crash = DATA / "boot-crash.console"
        self.assertTrue(console.boot_crash(crash))
        with tempfile.NamedTemporaryFile("w", suffix=".console") as f:
            # the same crash with our module loaded is the driver's, not QEMU's: no retry
            f.write(crash.read_text().replace("Modules linked in:", "Modules linked in: ntsync(OE)"))
            f.flush()
            self.assertFalse(console.boot_crash(f.name))
        self.assertFalse(console.boot_crash(DATA / "smoke-trixie.console"))

    def test_boot_job_boots_again_after_a_boot_crash(self):
        t, calls = replaying(self, DATA / "boot-crash.console", DATA / "smoke-trixie.console")
        m = qemu.Machine(console=t / "c.log", kernel=t / "vmlinuz")
        (text, _), _, err = quiet(boot.boot, m, 60)
        self.assertEqual(len(calls.read_text().splitlines()), 2)
        self.assertIn("booting it once more", err)
        self.assertIn("smoke: 111 passed, 0 failed", text)
        self.assertTrue((t / "c.log.crash").exists())
        # a crash after the job began (or a second crash) is judged, not retried
        after = t / "after-insmod.console"
        after.write_text("##ntsync## insmod\n" + (DATA / "boot-crash.console").read_text())
        calls.write_text("")
        os.environ["STANDIN_CONSOLE"] = str(after)
        quiet(boot.boot, m, 60)
        self.assertEqual(len(calls.read_text().splitlines()), 1)

    def test_recorded_cloud_guest(self):
        t, _ = replaying(self, DATA / "test-trixie.console")
        w = cloud.StageWatch({}, False, 60)
        r, out, _ = quiet(run.guest, qemu.Machine(console=t / "console.log"), w)
        times, stage, done = w.finish()
        self.assertEqual((r.rc, stage, done), (0, "poweroff", "rc=0"))
        for s in ("install", "driver", "job", "unload", "collect", "boot_to_first_test"):
            self.assertIn(s, times)
        self.assertIn("running 12 test programs against ours (dkms)", out)

    def test_watch_stages_and_markers(self):
        t, _ = replaying(self)
        c = t / "recorded"
        c.write_text("[ 1.0] Linux\n##ntsync## stage start\n##ntsync## stage install\n##ntsync## stage job\n"
                     "PASS sem: create\n##ntsync## done 0\n")
        os.environ["STANDIN_CONSOLE"] = str(c)
        w = cloud.StageWatch({}, False, 60)
        quiet(run.guest, qemu.Machine(console=t / "console.log"), w)
        times, stage, done = w.finish()
        self.assertEqual((stage, done), ("poweroff", "0"))
        self.assertIn("install", times)
        self.assertIn("boot_to_first_test", times)
        self.assertEqual(w.counts["PASS"], 1)


class FailingRuns(unittest.TestCase):
    """Recorded consoles of real failing runs (vm/tests/test_data/failing/README.md says how
    each was made), replayed through the one guest loop by vm/tests/qemu-standin: each must
    give the verdict the run gave."""

    FAIL = DATA / "failing"

    def smoke(self, name):
        t, calls = replaying(self, self.FAIL / name)
        m = qemu.Machine(console=t / "c.log", kernel=t / "vmlinuz")
        (text, _), _, err = quiet(boot.boot, m, 60)
        rc, out, err2 = quiet(boot.judge_smoke, text, "trixie")
        return rc, out + err + err2, len(calls.read_text().splitlines())

    def test_module_oopses(self):
        rc, out, boots = self.smoke("smoke-oops.console")
        self.assertEqual(rc, 1)
        self.assertEqual(boots, 1, "our module is in the oops: the driver's fault, not booted again")
        for said in ("rmmod failed or never ran", "unexpected kernel taint 'none'",
                     "kernel Oops: [    5.166476] Oops: Oops: 0002 [#1] PREEMPT SMP NOPTI (console)",
                     "kernel panic: [    5.203771] Kernel panic - not syncing: Fatal exception (console)",
                     "kernel log shows a report"):
            self.assertIn(said, out)

    def test_suite_fails_a_case(self):
        rc, out, boots = self.smoke("smoke-case.console")
        self.assertEqual((rc, boots), (1, 1))
        self.assertIn("FAIL test_sem:107: release returned prev 0", out)
        self.assertIn("smoke: 110 passed, 1 failed", out.splitlines())
        self.assertIn("== rmmod ok", out.splitlines())  # the gates themselves were clean
        self.assertNotIn("kernel log shows a report", out)

    def test_stalls_at_boot(self):
        t, _ = replaying(self, self.FAIL / "test-stall.console", STANDIN_HANG="1", NTSYNC_TIMEOUT_SCALE="0.005")
        w = cloud.StageWatch({}, False, 600)
        start = time.monotonic()
        r, _, _ = quiet(run.guest, qemu.Machine(console=t / "console.log"), w)
        self.assertLess(time.monotonic() - start, 20, "the stalled QEMU is stopped")
        self.assertEqual((r.rc, r.stalled, w.stage, w.done), (124, "stage 'boot'", "boot", None))
        msg = r.stall_message()
        self.assertIn("stage 'boot' stalled: no progress for 2s under TCG", msg)
        self.assertIn("Begin: Loading essential drivers ... done.", msg)  # the tail shows where

    def test_kvm_dies(self):
        # Not a recording: this machine has no /dev/kvm. The stand-in prints what a real QEMU
        # printed on machines whose KVM failed (vm/ntsync_vm/accel.py's docstring), then the
        # TCG boot replays a real passing console.
        t, calls = replaying(self, DATA / "smoke-trixie.console", STANDIN_KVM="internal-error")
        del os.environ["NTSYNC_ACCEL"]
        kvm = t / "kvm"
        kvm.write_bytes(b"")
        os.environ["NTSYNC_KVM_DEV"] = str(kvm)
        from ntsync_vm import accel
        accel.remember("kvm", "the probe said so")
        m = qemu.Machine(console=t / "c.log", kernel=t / "vmlinuz")
        (text, _), _, err = quiet(boot.boot, m, 60)
        accels = [c[c.index("-accel") + 1] for c in map(json.loads, calls.read_text().splitlines())]
        self.assertEqual(accels, ["kvm", "tcg,thread=multi"])
        self.assertIn("KVM could not run this guest (QEMU: KVM internal error. Suberror: 1)", err)
        self.assertEqual(accel.remembered()["accel"], "tcg")
        self.assertEqual(quiet(boot.judge_smoke, text, "trixie")[0], 0)


class Wine(unittest.TestCase):
    def test_no_source_says_where_to_get_one(self):
        p = subprocess.run([str(REPO / "vm/ntsync-vm"), "wine"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no Wine source given", p.stderr)
        self.assertIn("dl.winehq.org", p.stderr)
        with tempfile.TemporaryDirectory() as t:
            p = subprocess.run([str(REPO / "vm/ntsync-vm"), "wine", "--source", t], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, 2)
            self.assertIn("no Wine source there", p.stderr)

    def test_judge_log(self):
        # the lines include/wine/test.h prints: failures, todos, and one summary per process
        from ntsync_vm import wine
        with tempfile.TemporaryDirectory() as t:
            log = Path(t) / "ours-kernel32-sync.log"
            log.write_text("sync.c:393: Test failed: got 0\nsync.c:100: Test marked todo: x\n"
                           "0104:sync: 7 tests executed (0 marked as todo, 0 as flaky, 0 failures), 0 skipped.\n"
                           "0024:sync: 100 tests executed (2 marked as todo, 0 as flaky, 1 failure), 3 skipped.\n"
                           "exit 1\n")
            c = wine.judge_log(log)
            self.assertEqual((c["executed"], c["todo"], c["failures"], c["skipped"], c["exit"]), (107, 2, 1, 3, 1))
            self.assertEqual(c["fails"], ["sync.c:393: got 0"])
            self.assertFalse(wine.judge_log(Path(t) / "missing.log")["summary"])

    def test_judge_snapshot(self):
        # part 4: ntsync-info's JSON while Wine ran, with the driver and without
        from ntsync_vm import wine
        with tempfile.TemporaryDirectory() as t:
            def snap(cfg, users, without=()):
                (Path(t) / f"{cfg}-ntsync-info.json").write_text(json.dumps({"processes": {
                    "using": len(users), "users": users, "wineservers_without_device": list(without)}}))
            server = {"pid": 10, "comm": "wineserver", "device_fds": 1, "object_fds": 300, "wineserver": True}
            client = {"pid": 11, "comm": "kernel32_test.e", "device_fds": 1, "object_fds": 4, "wineserver": False}
            snap("ours", [server, client])
            self.assertEqual(wine.judge_snapshot(t, "ours"), [])
            self.assertIn("kernel32_test.e (1 device, 4 objects)", wine.snapshot_line(t, "ours"))
            snap("ours", [server])
            self.assertIn("no Windows process", wine.judge_snapshot(t, "ours")[0])
            snap("ours", [client], without=[10])
            self.assertEqual(len(wine.judge_snapshot(t, "ours")), 2)
            snap("none", [], without=[10])
            self.assertEqual(wine.judge_snapshot(t, "none"), [])
            snap("none", [])
            self.assertIn("does not name the wineserver", wine.judge_snapshot(t, "none")[0])
            snap("none", [server], without=[10])
            self.assertIn("lists 1 users", wine.judge_snapshot(t, "none")[0])
            self.assertIn("no ntsync-info snapshot", wine.judge_snapshot(t, "in-tree")[0])

    def test_winbench_table(self):
        from ntsync_vm import wine
        with tempfile.TemporaryDirectory() as t:
            w = Path(t) / "wine"
            w.mkdir()
            head = "row                       ns/op        ops\n"

            def out(*rows, done=True):
                return head + "".join(f"{n:18} {v:12d} {5000:10d}\n" for n, v in rows) + \
                    ("ntsync-winbench: done\n" if done else "")
            (w / "in-tree-winbench.txt").write_text(out(("sem.wait-release", 1000), ("wait-any.64", 32000),
                                                        ("sem.wait-release", 1004), ("wait-any.64", 32100)))
            (w / "in-tree-winbench.2.txt").write_text(out(("sem.wait-release", 1000), ("wait-any.64", 32000)))
            (w / "ours-winbench.txt").write_text(out(("sem.wait-release", 990), ("wait-any.64", 16700),
                                                     ("sem.wait-release", 990), ("wait-any.64", 16690)))
            (w / "ours-winbench.2.txt").write_text(out(("sem.wait-release", 990), ("wait-any.64", 28900)))
            (w / "none-winbench.txt").write_text(out(("sem.wait-release", 30000), done=False))
            self.assertEqual(wine.winbench_rows(w / "ours-winbench.txt"),
                             {"sem.wait-release": [990, 990], "wait-any.64": [16700, 16690]})
            self.assertEqual(wine.winbench_rows(w / "none-winbench.txt"), {})  # it did not finish
            self.assertEqual([f.name for f in wine.winbench_files(w, "ours")],
                             ["ours-winbench.txt", "ours-winbench.2.txt"])
            res = SimpleNamespace(results=t, suite="trixie-backports", kernel="7.3")
            lines, bad = wine.bench_table(res)
            self.assertEqual(bad, ["none"])
            self.assertIn("median of 3 runs in 2 processes", lines[0])
            # the steady row is shown with its ratio; wait-any.64 (ours bimodal between its
            # processes) is not, and its runs are listed process by process
            self.assertRegex(lines[2], r"sem.wait-release +1,000 +990 +0.990x  none$")
            self.assertFalse(any(re.match(r"  wait-any.64 ", x) for x in lines))
            self.assertIn("16,700 16,690 | 28,900", lines[-1])
            self.assertIn("medians of the processes differ by more than 1%", lines[-3])
            # one run far off in one process moves neither median: shown, and counted
            (w / "ours-winbench.2.txt").write_text(out(("sem.wait-release", 990), ("wait-any.64", 16695),
                                                       ("sem.wait-release", 1200), ("wait-any.64", 16705),
                                                       ("sem.wait-release", 990), ("wait-any.64", 16700)))
            lines, bad = wine.bench_table(res)
            self.assertRegex(lines[2], r"sem.wait-release +1,000 +990 +0.990x  ours 1/5$")
            self.assertRegex(lines[3], r"wait-any.64 +32,000 +16,700 +0.522x  none$")
            (w / "none-winbench.txt").write_text(out(("sem.wait-release", 30000), ("wait-any.64", 90000)))
            lines, bad = wine.bench_table(res)
            self.assertEqual(bad, [])
            self.assertRegex(lines[2], r"1,000 +990 +30,000 +30.0x +30.3x +0.990x")

    def test_links_judged_on_a_recorded_run(self):
        # issue 39: the links guest's results (test_data/wine-links/links/, as the guest wrote
        # them), judged as `ntsync-vm wine --links` does; then each kind of wrong verdict
        import shutil
        from ntsync_vm import wine
        rec = DATA / "wine-links"
        rows, checks, bad = wine.judge_links(rec)
        self.assertEqual(bad, [])
        self.assertEqual([r[0] for r in rows], [c.name for c in wine.LINK_CASES])
        by = {r[0]: r for r in rows}
        for c in wine.LINK_CASES:
            self.assertEqual(by[c.name][4], c.rc, c.name)
            if c.link:
                self.assertTrue(by[c.name][2].startswith(f"NOT USING ntsync: {c.link} "), by[c.name])
                self.assertTrue(by[c.name][3], c.name)  # a fix printed
        self.assertTrue(by["whole"][2].startswith("USING ntsync"))
        self.assertTrue(by["bwrap-bound"][2].startswith("USING ntsync"))
        self.assertIn("exit 0", checks[0])
        self.assertIn("exit 1", checks[1])
        table = wine.links_table(rows)
        self.assertEqual(table[0], "| case | link broken | verdict | fix printed | exit |")
        self.assertEqual(len(table), 2 + len(wine.LINK_CASES))
        with tempfile.TemporaryDirectory() as t:
            def fresh():
                shutil.rmtree(Path(t) / "links", ignore_errors=True)
                shutil.copytree(rec / "links", Path(t) / "links")
                return Path(t) / "links"

            def edit(name, fn):
                f = fresh() / f"{name}.json"
                d = json.loads(f.read_text())
                fn(d)
                f.write_text(json.dumps(d))
                return wine.judge_links(t)[2]

            def say_using(d):
                d["processes"][0].update(status="using", verdict="USING ntsync: pid 1", fix=None)
            bad = edit("stub", say_using)
            self.assertTrue(any(b.startswith("stub: status 'using'") for b in bad), bad)
            bad = edit("bwrap-dev", lambda d: d["processes"][0].update(
                verdict="NOT USING ntsync: 1 driver: the ntsync driver is not loaded"))
            self.assertTrue(any("does not name link 5" in b for b in bad), bad)
            bad = edit("unloaded", lambda d: d["processes"][0].update(fix=None))
            self.assertIn("unloaded: no fix printed", bad)
            bad = edit("proton-var", lambda d: d["processes"][0]["links"][3].update(found="no ntsync variable set"))
            self.assertTrue(any("PROTON_NO_NTSYNC=1" in b for b in bad), bad)
            bad = edit("user", lambda d: d.update(error="not-wine"))
            self.assertTrue(any(b.startswith("user: no report (not-wine") for b in bad), bad)
            # without root, a report whose status is unknown is as honest as no report
            whole = json.loads((rec / "links" / "whole.json").read_text())

            def as_user(status, verdict):
                def fn(d):
                    d.clear()
                    d.update(whole)
                    d["processes"][0].update(status=status, verdict=verdict)
                return fn
            self.assertEqual(edit("user", as_user("unknown", "UNKNOWN: cannot read /proc/5/fd")), [])
            bad = edit("user", as_user("using", "USING ntsync: pid 5"))
            self.assertEqual(len(bad), 2, bad)
            (fresh() / "early-server.json").unlink()
            self.assertIn("early-server: no ntsync-info --json output", wine.judge_links(t)[2])
            (fresh() / "whole.rc").write_text("1\n")
            self.assertIn("whole: ntsync-info exited 1, expected 0", wine.judge_links(t)[2])
            (fresh() / "check-wine-stub.rc").write_text("0\n")
            self.assertIn("--check-wine on the stub build exited 0, expected 1", wine.judge_links(t)[2])

    def test_figures_keep_the_verdict(self):
        # FIGURES (the demo's wine-figures.txt): the --bench table and the links verdict are
        # written by two runs, and neither loses the other's part
        from ntsync_vm import wine
        with tempfile.TemporaryDirectory() as t:
            old = os.environ.get("NTSYNC_CACHE")
            os.environ["NTSYNC_CACHE"] = t
            try:
                (Path(t) / "wine").mkdir()
                wine.write_figures(verdict=["# Wine 11.10 (abc)", "verdict: USING ntsync: pid 5"])
                wine.write_figures(bench=["# Wine 11.10 (abc), bench", "  row 1 2"])
                text = (Path(t) / "wine" / wine.FIGURES).read_text()
                self.assertEqual(wine.figures_parts(text), (["# Wine 11.10 (abc), bench", "  row 1 2"],
                                                            ["# Wine 11.10 (abc)", "verdict: USING ntsync: pid 5"]))
                wine.write_figures(bench=["new"])
                self.assertEqual(wine.figures_parts((Path(t) / "wine" / wine.FIGURES).read_text())[1][1],
                                 "verdict: USING ntsync: pid 5")
                self.assertEqual(wine.figures_parts("a\nb\n"), (["a", "b"], []))
            finally:
                if old is None:
                    del os.environ["NTSYNC_CACHE"]
                else:
                    os.environ["NTSYNC_CACHE"] = old
            # the demo splits the file the same way (sed on the marker line)
            demo = (REPO / "vm/guest/jobs/demo.sh").read_text()
            self.assertIn(f"/^{wine.VERDICT_MARK}$/", demo)

    def test_summarize_emptied(self):
        from ntsync_vm import wine
        self.assertEqual(wine.summarize([]), "none")
        self.assertEqual(wine.summarize(["fonts/a.fon", "fonts/b.fon", "dlls/x/y.dll"]),
                         "2 in fonts/, 1 in dlls/x/ (y.dll)")


class BenchCpus(unittest.TestCase):
    def test_cpus_is_checked(self):
        # bench --cpus N: 2..8 vCPUs, the bench job only, not with another --smp
        for args, says in ((["bench", "--cpus", "1"], "give 2 to 8 vCPUs"),
                           (["bench", "--cpus", "9"], "give 2 to 8 vCPUs"),
                           (["demo", "--cpus", "2"], "only for the bench job"),
                           (["bench", "--cpus", "2", "--smp", "4"], "drop --smp")):
            p = subprocess.run([str(REPO / "vm/ntsync-vm"), *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(says, p.stderr, args)

    def test_contention_rows_exist(self):
        # every --only prefix of bench --cpus names a row of ntsync-bench
        rows = re.findall(r'^\t\{ "([a-z0-9.]+)", "', (REPO / "tools/bench/scenarios.c").read_text(), re.M)
        prefixes = cloud.BENCH_CONTENTION.split()[1].split(",")
        for p in prefixes:
            self.assertTrue(any(r.startswith(p) for r in rows), p)
        self.assertIn("contend.waitall8", rows)
        self.assertIn("contend.waitany64", rows)


class KernelDebs(unittest.TestCase):
    def test_the_extra_kernel_boots_even_when_older(self):
        # bookworm's 6.1 in a trixie image: the --kernel-debs kernel, not the newest
        with tempfile.TemporaryDirectory() as t:
            root = Path(t)
            (root / "boot").mkdir()
            for rel in ("6.12.57+deb13-cloud-amd64", "6.1.0-57-cloud-amd64"):
                (root / "boot" / f"vmlinuz-{rel}").write_text("")
                (root / "boot" / f"initrd.img-{rel}").write_text("")
            self.assertEqual(image.newest_kernel(root), "6.12.57+deb13-cloud-amd64")
            debs = ["linux-image-6.1.0-57-cloud-amd64_6.1.192-3_amd64.deb", "linux-kbuild-6.1_6.1.192-3_amd64.deb",
                    "linux-headers-6.1.0-57-cloud-amd64_6.1.192-3_amd64.deb"]
            self.assertEqual(image.deb_kernel_releases(debs), ["6.1.0-57-cloud-amd64"])
            self.assertEqual(image.newest_kernel(root, debs), "6.1.0-57-cloud-amd64")
            with self.assertRaises(Failure):
                image.newest_kernel(root, ["linux-image-6.6.0-1-amd64_6.6.1-1_amd64.deb"])


class Lock(unittest.TestCase):
    def test_one_guest_at_a_time(self):
        # the caller's NTSYNC_VM_PARALLEL=1 (guests run beside others) must not turn the
        # lock under test off
        with tempfile.TemporaryDirectory() as t, unittest.mock.patch.dict(os.environ, {"NTSYNC_CACHE": t}):
            os.environ.pop("NTSYNC_VM_PARALLEL", None)
            order = []

            def second():
                with lock.guest():
                    order.append("second")
            with lock.guest():
                self.assertIn(f"pid {os.getpid()}", (Path(t) / "guest.lock").read_text())
                th = threading.Thread(target=lambda: quiet(second))
                th.start()
                time.sleep(0.5)
                order.append("first")
            th.join(10)
            self.assertEqual(order, ["first", "second"])
            os.environ["NTSYNC_VM_PARALLEL"] = "1"
            try:
                with lock.guest() as g:
                    self.assertIsNone(g.f)
            finally:
                del os.environ["NTSYNC_VM_PARALLEL"]

    def test_timings_leave_out_only_this_runs_queueing(self):
        # The secure-boot job runs two guests in one process; lock.WAITED adds up both queues.
        from ntsync_vm import cloud
        times = {"boot_to_job": 50, "job": 190}
        saved = lock.WAITED[0]
        lock.WAITED[0] = 664.0
        try:
            _, out, _ = quiet(cloud.print_timings, times, whole=694.0, waited=341.0)
            self.assertIn("whole run 5m53s not counting 5m41s queued", out)
            _, out, _ = quiet(cloud.print_timings, times, whole=694.0)
            self.assertIn("whole run 30s not counting 11m04s queued", out)
        finally:
            lock.WAITED[0] = saved


class GuestLoadDriver(unittest.TestCase):
    """guest.sh's load_driver on the host, its commands stubbed: which module it loads and what
    LOADED_BY (the driver named in the console and job.log) says."""

    def load_ours(self, modinfo_path):
        text = (REPO / "vm/guest/guest.sh").read_text()
        fn = re.search(r"^load_driver\(\) \{\n.*?^\}\n", text, re.M | re.S)
        self.assertIsNotNone(fn, "no load_driver() in vm/guest/guest.sh")
        stubs = (f"modinfo() {{ echo '{modinfo_path}'; }}\n"
                 "modprobe() { echo \"modprobe $*\" >&2; }\n"
                 "insmod() { echo \"insmod $*\" >&2; }\n"
                 "udevadm() { :; }\n"
                 "say() { echo \"say: $*\"; }\n"
                 "build_ours_directly() { echo 'built again' >&2; return 1; }\n")
        script = stubs + fn.group(0) + 'load_driver ours || exit 1\necho "LOADED_BY=$LOADED_BY"\n'
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)

    def test_ours_built_here_is_not_called_dkms(self):
        # A kernel with the in-tree driver (7.x): DKMS built nothing, guest.sh built ours into
        # updates/ntsync-vm/; reloading it after the in-tree one (differential, bench) says so.
        ko = "/lib/modules/7.3.4+deb13-cloud-arm64/updates/ntsync-vm/ntsync.ko"
        p = self.load_ours(ko)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"LOADED_BY=ours (built here) {ko}", p.stdout)
        self.assertIn("modprobe ntsync", p.stderr)
        self.assertNotIn("built again", p.stderr)

    def test_ours_by_dkms(self):
        ko = "/lib/modules/6.12.118+deb13-cloud-arm64/updates/dkms/ntsync.ko.xz"
        p = self.load_ours(ko)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"LOADED_BY=ours (dkms) {ko}", p.stdout)
        self.assertNotIn("built again", p.stderr)


class Cli(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([str(REPO / "vm/ntsync-vm"), *args], capture_output=True, text=True, timeout=60)

    def test_usage_errors(self):
        p = self.run_cli("boot", "jessie", "--job", "smoke")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown suite 'jessie'", p.stderr)
        p = self.run_cli("boot", "trixie", "--job", "smoke", "--", "x")
        self.assertEqual(p.returncode, 2)
        p = self.run_cli("boot", "debug", "--job", "smoke")
        self.assertIn("only --job fuzz boots the debug kernels", p.stderr)
        p = self.run_cli("in-root", "trixie")
        self.assertEqual(p.returncode, 2)
        p = self.run_cli("test", "--suite", "sid")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no cloud guest image", p.stderr)
        self.assertIn("kbuild", self.run_cli("--help").stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
