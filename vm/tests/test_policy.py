#!/usr/bin/python3
"""Host tests of the judging policy written once (no guest, no root): the allowed taint flags
and the KCSAN exemption are the @ directives of tests/kernel-log-gates, read by
vm/ntsync_vm/gates.py, ntsync-run-tests and tests/fuzz/guest-abuse.sh alike, and none of those
writes the numbers again; and the debug kernel's build root and finished build age under the
one cache policy (roots.stale, NTSYNC_MAX_AGE_DAYS). Runs in `meson test` (suite vm)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "vm"))

from ntsync_vm import gates, kernel, roots  # noqa: E402
from ntsync_vm.util import Failure  # noqa: E402

GATES = REPO / "tests" / "kernel-log-gates"
# Every reader of the policy; none may write its values itself.
CONSUMERS = [REPO / "vm" / "ntsync_vm" / "gates.py", REPO / "tests" / "ntsync-run-tests.in",
             REPO / "tests" / "fuzz" / "guest-abuse.sh"]


def directives(path=GATES):
    """{NAME: VALUE} of the @NAME<TAB>VALUE<TAB>what lines, parsed here independently."""
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.startswith("@"):
            name, value, _ = line[1:].split("\t", 2)
            out[name] = value
    return out


def letters(mask):
    return "".join(gates.TAINT_LETTERS[b] for b in range(len(gates.TAINT_LETTERS)) if mask >> b & 1)


class Policy(unittest.TestCase):
    def test_file_says(self):
        d = directives()
        self.assertEqual(set(d), {"taint-allowed", "taint-allowed-secure-boot", "kcsan-report"})
        self.assertEqual(letters(int(d["taint-allowed"])), "OE", "O (out-of-tree) and E (unsigned module)")
        self.assertEqual(letters(int(d["taint-allowed-secure-boot"])), "O", "under Secure Boot only O")
        self.assertEqual(d["kcsan-report"], "BUG: KCSAN: ")

    def test_gates_py_reads_the_file(self):
        d = directives()
        self.assertEqual(gates.TAINT_ALLOWED, int(d["taint-allowed"]))
        self.assertEqual(gates.TAINT_ALLOWED_SECURE_BOOT, int(d["taint-allowed-secure-boot"]))
        self.assertTrue(gates.KCSAN_REPORT.search("[ 3.0] " + d["kcsan-report"] + "data-race in x / y"))
        self.assertFalse(gates.KCSAN_REPORT.search("[ 3.0] BUG: KASAN: use-after-free"))
        # the directives are not gates
        self.assertFalse(any(rx.pattern.startswith("@") for rx, _ in gates.load()))

    def test_other_values_are_taken(self):
        text = GATES.read_text()
        text = re.sub(r"(?m)^@taint-allowed\t[0-9]+", "@taint-allowed\t512", text)
        text = re.sub(r"(?m)^@kcsan-report\t[^\t]*", "@kcsan-report\tRACE: ", text)
        with tempfile.NamedTemporaryFile("w", suffix="gates") as f:
            f.write(text)
            f.flush()
            p = gates.policy(f.name)
        self.assertEqual(p["TAINT_ALLOWED"], 512)
        self.assertTrue(p["KCSAN_REPORT"].search("RACE: x"))
        self.assertFalse(p["KCSAN_REPORT"].search("BUG: KCSAN: x"))
        # the judging follows the list's values (the module's cache of them, swapped)
        with mock.patch.dict(gates._policy, p):
            self.assertIsNone(gates.taint_problem(512))
            self.assertEqual(gates.taint_problem(4096 | 512), "kernel tainted: O (tainted=4608)")
            self.assertEqual(gates.judge(["[ 1.0] BUG: KCSAN: data-race in a / b"], kcsan=True),
                             ["kernel BUG (KASAN, lockup and other BUG: reports): "
                              "[ 1.0] BUG: KCSAN: data-race in a / b (console)"])
            self.assertEqual(gates.judge(["[ 1.0] BUG: RACE: in a"], kcsan=True), [])

    def test_bad_directives(self):
        good = GATES.read_text()
        cases = [
            (re.sub(r"(?m)^@taint-allowed\t.*\n", "", good), "no @taint-allowed directive"),
            (re.sub(r"(?m)^@kcsan-report\t.*\n", "", good), "no @kcsan-report directive"),
            (re.sub(r"(?m)^@taint-allowed\t[0-9]+", "@taint-allowed\t0x3000", good), "not a decimal number"),
            (good + "@taint-forbidden\t1\tno such rule\n", "not '@NAME<TAB>VALUE<TAB>what it means'"),
            (good + "@taint-allowed\t12288\n", "not '@NAME<TAB>VALUE<TAB>what it means'"),
        ]
        for text, msg in cases:
            with self.subTest(msg=msg), tempfile.NamedTemporaryFile("w", suffix="gates") as f:
                f.write(text)
                f.flush()
                with self.assertRaisesRegex(Failure, re.escape(msg)):
                    gates.policy(f.name)

    def test_no_consumer_writes_the_values(self):
        # the numbers (decimal, hex or as shifts) and the KCSAN header belong to the list only
        forbidden = re.compile(r"\b(4096|8192|12288)\b|0x[13]000\b|1 *<< *1[23]\b|BUG: *KCSAN")
        for path in CONSUMERS:
            for n, line in enumerate(path.read_text().splitlines(), 1):
                with self.subTest(file=str(path.relative_to(REPO)), line=n):
                    self.assertIsNone(forbidden.search(line), f"{path.relative_to(REPO)}:{n}: {line.strip()}")

    def test_guest_abuse_reads_the_same(self):
        # guest-abuse.sh's own reader, run by the shells it runs under (busybox ash, dash)
        text = (REPO / "tests" / "fuzz" / "guest-abuse.sh").read_text()
        m = re.search(r"(?ms)^tab=.*?^taint_allowed=.*?\n^kcsan_report=.*?\n", text)
        self.assertIsNotNone(m, "guest-abuse.sh: no 'tab=... directive() ... taint_allowed=... kcsan_report=...'")
        script = "set -eu\ngates=$1\n" + m.group(0) + 'printf "%s|%s\\n" "$taint_allowed" "$kcsan_report"\n'
        d = directives()
        shells = [[s] for s in ("sh", "dash") if shutil.which(s)]
        if shutil.which("busybox"):
            shells.append(["busybox", "sh"])
        for sh in shells:
            with self.subTest(shell=" ".join(sh)):
                r = subprocess.run([*sh, "-c", script, "sh", str(GATES)], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout, f"{d['taint-allowed']}|{d['kcsan-report']}\n")
        with tempfile.NamedTemporaryFile("w", suffix="gates") as f:
            f.write(re.sub(r"(?m)^@kcsan-report\t.*\n", "", GATES.read_text()))
            f.flush()
            r = subprocess.run(["sh", "-c", script, "sh", f.name], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("has no '@kcsan-report", r.stderr)


class DebugKernelAge(unittest.TestCase):
    """kernel.py's build root and finished build under roots.stale's rule, in a temporary
    NTSYNC_CACHE (never the real cache: its debug kernel takes 40 minutes to build)."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="ntsync-test-cache."))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        env = mock.patch.dict(os.environ, {"NTSYNC_CACHE": str(self.tmp)})
        env.start()
        self.addCleanup(env.stop)
        os.environ.pop("NTSYNC_MAX_AGE_DAYS", None)
        os.environ.pop("NTSYNC_IMAGE_MAX_AGE_DAYS", None)
        self.base = self.tmp / "debug-kernel"
        self.base.mkdir()
        # The age rule compares a stamp's mtime (the file system's clock) with time.time()
        # (the process's): under faketime (reprotest's time variation) they differ by a year.
        skew = time.time() - self.base.stat().st_mtime
        if abs(skew) > 3600:
            self.skipTest(f"this process's clock is {skew / 86400:+.0f} days off the file system's (faketime?): "
                          "cache ages cannot be judged")
        self.built = []
        self.said = []

        def fake_mmdebstrap(release, target, sources, packages, logf, **kw):
            self.assertTrue(str(target).startswith(str(self.tmp)), target)
            self.built.append((release, Path(target).name, tuple(packages)))
            (Path(target) / "usr/src").mkdir(parents=True)
            (Path(target) / "usr/src/linux-source-6.12.tar.xz").write_text("")

        for mod, name, fake in ((roots, "mmdebstrap", fake_mmdebstrap), (roots, "require_root", lambda *a: None),
                                (roots, "_add_missing", lambda *a: None), (roots, "say", self.said.append),
                                (kernel, "say", self.said.append), (kernel, "require_root", lambda *a: None)):
            p = mock.patch.object(mod, name, fake)
            p.start()
            self.addCleanup(p.stop)

    def age(self, path, days):
        t = time.time() - days * 86400
        os.utime(path, (t, t))

    def test_root_built_then_kept_then_aged(self):
        self.assertEqual(kernel.cache(), self.tmp)
        root = kernel.build_root(self.base)
        self.assertEqual(root, self.base / "root")
        self.assertEqual(len(self.built), 1)
        self.assertEqual(self.built[0][0], "trixie")
        self.assertIn("linux-source-6.12", self.built[0][2])
        self.assertTrue((root / ".complete").is_file())
        (root / "build").mkdir()
        kernel.build_root(self.base)
        self.assertEqual(len(self.built), 1, "a fresh root is kept")
        self.age(root / ".complete", 13)
        kernel.build_root(self.base)
        self.assertEqual(len(self.built), 1, "13 days: still fresh")
        self.age(root / ".complete", 15)
        kernel.build_root(self.base)
        self.assertEqual(len(self.built), 2, "15 days: older than 14, built again")
        self.assertFalse((root / "build").exists(), "the old root is gone")
        self.assertIsNone(roots.stale(root / ".complete"))
        self.age(root / ".complete", 3)
        with mock.patch.dict(os.environ, {"NTSYNC_MAX_AGE_DAYS": "2"}):
            kernel.build_root(self.base)
        self.assertEqual(len(self.built), 3, "NTSYNC_MAX_AGE_DAYS moves the limit")

    def test_unstamped_root_is_built(self):
        # a root of the time before the rule (no .complete) is made again once
        (self.base / "root/usr/bin").mkdir(parents=True)
        kernel.build_root(self.base)
        self.assertEqual(len(self.built), 1)
        self.assertTrue((self.base / "root/.complete").is_file())

    def test_finished_build_ages(self):
        self.assertEqual(kernel.cached_build(self.base), "no linux-image-*.deb in debs/")
        (self.base / "debs").mkdir()
        (self.base / "debs/linux-image-6.12.117-ntsync-debug_1_amd64.deb").write_text("")
        self.assertEqual(kernel.cached_build(self.base), "not built yet")
        (self.base / "stamp").write_text("kernel=6.12.117-ntsync-debug\n")
        self.assertIsNone(kernel.cached_build(self.base))
        self.age(self.base / "stamp", 20)
        self.assertRegex(kernel.cached_build(self.base), r"^20 days old \(NTSYNC_MAX_AGE_DAYS=14\)$")

    def test_main_reuses_a_fresh_build_only(self):
        (self.base / "debs").mkdir()
        (self.base / "debs/linux-image-x.deb").write_text("")
        (self.base / "stamp").write_text("kernel=x\n")
        with mock.patch.object(kernel, "build_root", side_effect=Failure("stop here")) as br:
            out = StringIO()
            with redirect_stdout(out):
                self.assertEqual(kernel.main([]), 0)
            self.assertIn("cached build", out.getvalue())
            br.assert_not_called()
            self.age(self.base / "stamp", 20)
            with self.assertRaisesRegex(Failure, "stop here"):
                kernel.main([])
            br.assert_called_once()
            self.assertIn("the debug kernel in", self.said[0])
            self.assertIn("is built again: 20 days old", self.said[0])
            self.assertTrue((self.base / "debs/linux-image-x.deb").exists(), "the old build stays until a new one")


if __name__ == "__main__":
    unittest.main()
