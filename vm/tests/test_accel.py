#!/usr/bin/python3
"""Host tests of the accelerator decision (vm/ntsync_vm/accel.py) and of the launcher's KVM
fallback, against vm/tests/qemu-standin, which reproduces what real QEMUs did on machines of
this project: a KVM internal error at the kernel's first instructions, a failed MSR write at
start, silence, and a working boot.  No guest, no /dev/kvm needed: runs in `meson test`."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "vm"))

from ntsync_vm import accel, cloud, qemu, run  # noqa: E402


class Host(unittest.TestCase):
    """A made-up host: stand-in QEMU on PATH, a writable "/dev/kvm", a cache with a kernel."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="ntsync-accel-test-"))
        self.bin = self.tmp / "bin"
        self.bin.mkdir()
        (self.bin / "qemu-system-x86_64").symlink_to(HERE / "qemu-standin")
        busybox = self.tmp / "busybox"
        busybox.write_bytes(b"\x7fELF" + b"\0" * 4092)  # "static": no ld-linux inside
        kvm = self.tmp / "kvm"
        kvm.write_bytes(b"")
        self.cache = self.tmp / "cache"
        self.kernel = self.cache / "kroots" / "trixie" / "boot" / "vmlinuz-6.12.0-standin"
        self.kernel.parent.mkdir(parents=True)
        self.kernel.write_bytes(b"not really a kernel")
        self.calls = self.tmp / "calls"
        self.env = {
            "PATH": f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "NTSYNC_CACHE": str(self.cache), "NTSYNC_KVM_DEV": str(kvm),
            "NTSYNC_BUSYBOX": str(busybox), "STANDIN_LOG": str(self.calls),
        }
        self.saved_env = dict(os.environ)
        # Nothing of the caller's leaks in (a run of ./check with the stand-in on PATH).
        for k in list(os.environ):
            if k.startswith(("NTSYNC_", "STANDIN_")):
                del os.environ[k]
        os.environ.update(self.env)
        self.saved = (accel.PROBE_SECONDS, accel.KVM_SILENCE_SECONDS, accel.HOST_BOOT)
        accel.PROBE_SECONDS, accel.KVM_SILENCE_SECONDS = 8.0, 1.5
        accel.HOST_BOOT = self.tmp / "boot"  # never the real host's kernels

    def tearDown(self):
        accel.PROBE_SECONDS, accel.KVM_SILENCE_SECONDS, accel.HOST_BOOT = self.saved
        os.environ.clear()
        os.environ.update(self.saved_env)
        subprocess.run(["rm", "-rf", str(self.tmp)], check=False)

    def qemu_calls(self):
        if not self.calls.exists():
            return []
        return [json.loads(line) for line in self.calls.read_text().splitlines()]

    def decide(self, mode):
        os.environ["STANDIN_KVM"] = mode
        said = []
        t = time.monotonic()
        result = accel.decide(say=said.append, probe=run.probe)
        return result, said, time.monotonic() - t


class Probe(Host):
    def test_internal_error_means_tcg(self):
        (acc, why), said, secs = self.decide("internal-error")
        self.assertEqual(acc, "tcg")
        self.assertIn("KVM internal error", why)
        self.assertIn("emulation failure", why)
        self.assertLess(secs, accel.PROBE_SECONDS, "an error on stderr ends the probe at once")
        self.assertEqual(len(said), 1)
        self.assertIn("using TCG", said[0])
        self.assertIn("NTSYNC_ACCEL", said[0])
        # the probe boots a real kernel with an initramfs, as the jobs do
        cmd = self.qemu_calls()[0]
        self.assertEqual(cmd[cmd.index("-kernel") + 1], str(self.kernel))
        self.assertIn("-initrd", cmd)
        self.assertEqual(cmd[cmd.index("-accel") + 1], "kvm")

    def test_msr_failure_means_tcg(self):
        (acc, why), said, _ = self.decide("msr")
        self.assertEqual(acc, "tcg")
        self.assertIn("failed to set MSR", why)

    def test_silence_means_tcg(self):
        accel.PROBE_SECONDS = 2.0
        (acc, why), said, secs = self.decide("silence")
        self.assertEqual(acc, "tcg")
        self.assertIn("no console output", why)
        self.assertGreaterEqual(secs, accel.PROBE_SECONDS)
        self.assertLess(secs, accel.PROBE_SECONDS + 8, "the silent QEMU is stopped")

    def test_working_kvm_is_used(self):
        (acc, why), said, _ = self.decide("works")
        self.assertEqual(acc, "kvm")
        self.assertIn("userspace", why)
        self.assertIn("using KVM", said[0])

    def test_remembered_per_boot_of_the_host(self):
        (acc, _), _, _ = self.decide("works")
        self.assertEqual(acc, "kvm")
        n = len(self.qemu_calls())
        (acc, _), said, _ = self.decide("msr")  # not asked again this boot
        self.assertEqual((acc, said, len(self.qemu_calls())), ("kvm", [], n))
        # another QEMU binary has its own entry
        other = self.bin / "qemu-other"
        other.write_bytes((HERE / "qemu-standin").read_bytes())
        other.chmod(0o755)
        os.environ["NTSYNC_QEMU"] = str(other)
        (acc, _), _, _ = self.decide("msr")
        self.assertEqual((acc, len(self.qemu_calls())), ("tcg", n + 1))
        del os.environ["NTSYNC_QEMU"]
        self.assertEqual(self.decide("msr")[0][0], "kvm")
        self.assertEqual(len(self.qemu_calls()), n + 1)
        n += 1
        memo = json.loads((self.cache / accel.MEMO_NAME).read_text())
        memo["boot_id"] = "another-boot"
        (self.cache / accel.MEMO_NAME).write_text(json.dumps(memo))
        (acc, why), _, _ = self.decide("msr")  # the host rebooted: probe again
        self.assertEqual(acc, "tcg")
        self.assertEqual(len(self.qemu_calls()), n + 1)

    def test_override(self):
        os.environ["NTSYNC_ACCEL"] = "kvm"
        (acc, why), _, _ = self.decide("msr")
        self.assertEqual((acc, self.qemu_calls()), ("kvm", []))
        os.environ["NTSYNC_ACCEL"] = "fast"
        with self.assertRaisesRegex(ValueError, "NTSYNC_ACCEL=kvm or NTSYNC_ACCEL=tcg"):
            accel.decide()

    def test_no_kvm_device(self):
        os.environ["NTSYNC_KVM_DEV"] = str(self.tmp / "no-such-kvm")
        (acc, why), _, _ = self.decide("works")
        self.assertEqual(acc, "tcg")
        self.assertIn("missing", why)
        self.assertEqual(self.qemu_calls(), [])

    def test_no_kernel_yet_is_not_remembered(self):
        self.kernel.unlink()
        (acc, why), _, _ = self.decide("works")
        self.assertEqual(acc, "tcg")
        self.assertIn("no Linux kernel", why)
        self.assertFalse((self.cache / accel.MEMO_NAME).exists())
        self.kernel.write_bytes(b"a kernel now")
        (acc, _), _, _ = self.decide("works")
        self.assertEqual(acc, "kvm")

    def test_guest_kernel_preferred(self):
        own = self.tmp / "vmlinuz-own"
        own.write_bytes(b"the image's kernel")
        os.environ["STANDIN_KVM"] = "works"
        accel.decide([own], probe=run.probe)
        cmd = self.qemu_calls()[0]
        self.assertEqual(cmd[cmd.index("-kernel") + 1], str(own))

    def test_classify(self):
        c = accel.classify
        self.assertTrue(c(accel.MARKER + "\n", "", None, False, 20)[0])
        self.assertIn("exited with status 1", c("", "oops\n", 1, False, 20)[1])
        self.assertIn("did not reach userspace", c("[0.0] Linux version\n", "", None, True, 20)[1])

    def test_initramfs_is_newc(self):
        out = self.tmp / "i.gz"
        accel.make_probe_initramfs(out, self.env["NTSYNC_BUSYBOX"])
        import gzip
        data = gzip.open(out).read()
        self.assertTrue(data.startswith(b"070701"))
        for name in (b"bin/busybox\0", b"bin/sh\0", b"init\0", b"TRAILER!!!\0"):
            self.assertIn(name, data)
        self.assertIn(accel.MARKER.encode(), data)


class Runtime(Host):
    """A guest that passed the probe and still fails under KVM is booted again under TCG."""

    def remember_kvm(self):
        accel.remember("kvm", "probe said so")

    def run_cli(self, *args, timeout=60):
        return subprocess.run([str(REPO / "vm" / "ntsync-vm"), *args], capture_output=True, text=True,
                              env=dict(os.environ), timeout=timeout)

    def test_runner_falls_back_on_internal_error(self):
        self.remember_kvm()
        os.environ["STANDIN_KVM"] = "internal-error"
        console = self.tmp / "console.log"
        t = time.monotonic()
        p = self.run_cli("qemu", "--console", str(console), "--timeout", "60", "--",
                         "-m", "256", "-smp", "2", "-kernel", str(self.kernel), "-nic", "none")
        self.assertLess(time.monotonic() - t, 20)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("KVM could not run this guest", p.stderr)
        self.assertIn("KVM internal error", p.stderr)
        self.assertIn("Linux version", console.read_text())
        calls = self.qemu_calls()
        self.assertEqual([c[c.index("-accel") + 1] for c in calls], ["kvm", "tcg,thread=multi"])
        # the raw arguments are the machine: no -machine of the launcher's own
        self.assertTrue(all("-machine" not in c for c in calls), calls)
        self.assertEqual(accel.remembered()["accel"], "tcg")

    def test_runner_forced_kvm_does_not_fall_back(self):
        os.environ["NTSYNC_ACCEL"] = "kvm"
        os.environ["STANDIN_KVM"] = "internal-error"
        p = self.run_cli("qemu", "--console", str(self.tmp / "console.log"), "--timeout", "60", "--",
                         "-m", "256", "-kernel", str(self.kernel))
        self.assertEqual(p.returncode, 3, p.stderr)  # infrastructure, as every guest job says it
        self.assertIn("NTSYNC_ACCEL=kvm is set", p.stderr)
        self.assertEqual(len(self.qemu_calls()), 1)

    def test_runner_falls_back_on_silence(self):
        self.remember_kvm()
        os.environ["STANDIN_KVM"] = "silence"
        os.environ["NTSYNC_KVM_SILENCE_SECONDS"] = "1.5"
        console = self.tmp / "console.log"
        p = self.run_cli("qemu", "--console", str(console), "--timeout", "60", "--",
                         "-m", "256", "-kernel", str(self.kernel), "-icount", "shift=0")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("console stayed empty", p.stderr)
        self.assertEqual(self.qemu_calls()[1][self.qemu_calls()[1].index("-accel") + 1], "tcg")

    def test_runner_tcg_only_and_timeout(self):
        os.environ["STANDIN_KVM"] = "works"
        console = self.tmp / "console.log"
        p = self.run_cli("qemu", "--tcg-only", "--console", str(console), "--timeout", "30", "--",
                         "-cpu", "qemu64", "-kernel", str(self.kernel))
        self.assertEqual(p.returncode, 0, p.stderr)
        cmd = self.qemu_calls()[0]
        self.assertEqual(cmd[cmd.index("-accel") + 1], "tcg")
        self.assertEqual(cmd.count("-cpu"), 1, "the caller's -cpu is kept")
        # a guest that outlives its time-out: 124, as timeout(1) says it
        with open(self.bin / "qemu-system-x86_64.sh", "w") as f:
            f.write("#!/bin/sh\nexec sleep 30\n")
        os.chmod(self.bin / "qemu-system-x86_64.sh", 0o755)
        os.environ["NTSYNC_QEMU"] = str(self.bin / "qemu-system-x86_64.sh")
        t = time.monotonic()
        p = self.run_cli("qemu", "--tcg-only", "--console", str(console), "--timeout", "1", "--", "-m", "64")
        self.assertEqual(p.returncode, 124, p.stderr)
        self.assertLess(time.monotonic() - t, 15)

    def test_accel_cli(self):
        os.environ["STANDIN_KVM"] = "internal-error"
        p = self.run_cli("accel", "--why")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "tcg\n")
        self.assertIn("KVM internal error", p.stderr)
        os.environ["NTSYNC_ACCEL"] = "bogus"
        p = self.run_cli("accel")
        self.assertEqual(p.returncode, 2)
        self.assertIn("NTSYNC_ACCEL", p.stderr)

    def watch(self, mode, accel_name="kvm"):
        """A cloud guest's Watch in the one loop, pinned to ACCEL_NAME, no fallback: what
        the loop found (the fallback itself is test_runner_falls_back_*)."""
        os.environ["STANDIN_KVM"] = mode
        m = qemu.Machine(console=self.tmp / "console.log", name="t", mem=64, smp=1, rng=False)
        w = cloud.StageWatch({}, False, 600)
        t = time.monotonic()
        r = run.guest(m, w, accel=accel_name, fallback=False, take_lock=False, retry_crash=False)
        return r, w, time.monotonic() - t

    def test_launcher_watch_internal_error(self):
        self.assertIn("KVM internal error", self.watch("internal-error")[0].kvm_trouble)

    def test_launcher_watch_late_error(self):
        self.assertIn("KVM internal error", self.watch("late-error")[0].kvm_trouble)

    def test_launcher_watch_msr(self):
        self.assertIn("failed to set MSR", self.watch("msr")[0].kvm_trouble)

    def test_launcher_watch_silence(self):
        r, _, secs = self.watch("silence")
        self.assertIn("console stayed empty", r.kvm_trouble)
        self.assertLess(secs, 10)

    def test_launcher_watch_tcg_untouched(self):
        r, w, _ = self.watch("internal-error", "tcg")
        self.assertIsNone(r.kvm_trouble)
        self.assertEqual(w.stage, "boot")  # the stand-in "booted" and exited; no KVM verdict

    def test_stall_names_accelerator_and_override(self):
        os.environ["NTSYNC_TIMEOUT_SCALE"] = "0.005"  # boot stage: 1.5 s
        hang = self.bin / "qemu-hang"
        hang.write_text("#!/bin/sh\nfor a; do case $a in file,*) p=${a#*path=};; esac; done\n"
                        "echo '[    0.0] Linux version' >\"$p\"\nexec sleep 30\n")
        hang.chmod(0o755)
        os.environ["NTSYNC_QEMU"] = str(hang)
        m = qemu.Machine(console=self.tmp / "console.log", name="t", mem=64, smp=1, rng=False)
        t = time.monotonic()
        r = run.guest(m, cloud.StageWatch({}, False, 600), accel="tcg", take_lock=False)
        self.assertLess(time.monotonic() - t, 10)
        self.assertEqual((r.rc, r.stalled), (124, "stage 'boot'"))
        msg = r.stall_message()
        self.assertIn("stage 'boot' stalled", msg)
        self.assertIn("under TCG", msg)
        self.assertIn("NTSYNC_ACCEL=tcg|kvm", msg)
        self.assertIn("Linux version", msg)


if __name__ == "__main__":
    unittest.main(verbosity=2)
