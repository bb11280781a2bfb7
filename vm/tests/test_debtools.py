#!/usr/bin/python3
"""Host tests of debtools.py (ntsync-vm piuparts, autopkgtest, reprotest): the verdicts read
from piuparts' log and autopkgtest's summary (recorded shapes of both tools' output), the
command lines' refusals, and the piuparts custom script. No chroot, no guest, no root; runs
in `meson test`."""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "vm"))

from ntsync_vm import debtools, jobs  # noqa: E402
from ntsync_vm.util import Usage  # noqa: E402

PIUPARTS_OK = """\
0m0.0s INFO: piuparts version 1.1.7 starting up.
2m1.2s DEBUG: Command ok: ['chroot', '/tmp/x', 'apt-get', '-y', 'install', 'linux-headers-cloud-amd64']
3m0.0s DUMP: ntsync-dkms: Linux 6.12.57+deb13-cloud-amd64: ntsync 1.1.0 built and installed by DKMS.
4m0.0s INFO: PASS: Installation and purging test.
6m0.0s INFO: PASS: Installation, upgrade and purging tests.
6m1.0s INFO: PASS: All tests.
"""

PIUPARTS_LEFTOVER = """\
0m0.0s INFO: piuparts version 1.1.7 starting up.
4m0.0s ERROR: FAIL: Package purging left files on system:
  /usr/lib/modules/6.1.0-41-cloud-amd64/modules.dep\t not owned
4m0.1s ERROR: FAIL: Installation and purging test.
"""

SUMMARY = """\
suite                PASS
dkms-lifecycle       PASS
dkms-new-kernel      SKIP exit status 77 and marked as skippable
"""


class Piuparts(unittest.TestCase):
    def test_clean_run(self):
        verdicts, problems = debtools.judge_piuparts(PIUPARTS_OK, 0, upgrade=True)
        self.assertEqual([v for v, _, _ in verdicts], ["PASS", "PASS"])
        self.assertEqual(problems, [])

    def test_leftovers_fail_and_are_named(self):
        verdicts, problems = debtools.judge_piuparts(PIUPARTS_LEFTOVER, 1, upgrade=True)
        self.assertEqual(verdicts[0][0], "FAIL")
        self.assertEqual(verdicts[1], ("FAIL", "upgrade from the previous version and purge",
                                       "no verdict (piuparts stopped before it)"))
        self.assertTrue(any("left files" in p for p in problems), problems)

    def test_no_upgrade_known_is_a_failure(self):
        text = PIUPARTS_OK.replace("INFO: PASS: Installation, upgrade and purging tests.",
                                   "INFO: Can't test upgrade: packages not known by apt-get.")
        verdicts, _ = debtools.judge_piuparts(text, 0, upgrade=True)
        self.assertEqual(verdicts[1][0], "FAIL")
        self.assertIn("not known to apt", verdicts[1][2])

    def test_exit_status_counts(self):
        verdicts, _ = debtools.judge_piuparts(PIUPARTS_OK, 1, upgrade=False)
        self.assertEqual(verdicts[-1], ("FAIL", "piuparts' exit status", "1"))

    def test_warnings_each_once(self):
        text = ("0m1.0s ERROR: WARN: Broken symlinks:\n  /usr/share/doc/perl/Changes.gz -> changelog.gz (perl)\n"
                "0m2.0s INFO: x\n"
                "0m3.0s ERROR: WARN: Broken symlinks:\n  /usr/share/doc/perl/Changes.gz -> changelog.gz (perl)\n")
        self.assertEqual(debtools.piuparts_warnings(text),
                         ["Broken symlinks: /usr/share/doc/perl/Changes.gz -> changelog.gz (perl)"])
        self.assertEqual(debtools.piuparts_warnings(PIUPARTS_OK), [])

    def test_command_line(self):
        self.assertEqual(debtools.piuparts_from_args([]).suites, debtools.DEFAULT_SUITES)
        with self.assertRaises(Usage):
            debtools.piuparts_from_args(["trixie-backports"])
        with self.assertRaises(Usage):
            debtools.piuparts_from_args(["bullseye"])
        with self.assertRaises(Usage):
            debtools.piuparts_from_args(["--debs", "/nonexistent-ntsync"])

    def test_headers_script(self):
        script = debtools.PIUPARTS_SCRIPTS / "pre_install_ntsync_kernel_headers"
        self.assertTrue(os.access(script, os.X_OK), f"{script} must be executable (piuparts runs it)")
        with tempfile.TemporaryDirectory() as t:
            # outside the install phase it does nothing; without the package name it says why
            env = {"PATH": f"{t}:/usr/bin:/bin", "PIUPARTS_PHASE": "upgrade"}
            self.assertEqual(subprocess.run([script], env=env).returncode, 0)
            env["PIUPARTS_PHASE"] = "install"
            r = subprocess.run([script], env=env, capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("ntsync-vm piuparts", r.stderr)
            Path(t, "apt-get").write_text("#!/bin/sh\necho \"apt-get $*\"\n")
            Path(t, "apt-get").chmod(0o755)
            env["NTSYNC_PIUPARTS_HEADERS"] = "linux-headers-cloud-amd64"
            r = subprocess.run([script], env=env, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("apt-get -y install linux-headers-cloud-amd64", r.stdout)


class Autopkgtest(unittest.TestCase):
    def test_summary(self):
        lines, p, f, s = debtools.judge_autopkgtest(SUMMARY, 2)
        self.assertEqual((p, f, s), (2, 0, 1))
        self.assertEqual(lines[0], "PASS autopkgtest suite")

    def test_failures(self):
        _, p, f, _ = debtools.judge_autopkgtest(SUMMARY.replace("dkms-lifecycle       PASS",
                                                                "dkms-lifecycle       FAIL non-zero exit status 1"), 4)
        self.assertEqual((p, f), (1, 1))
        lines, _, f, _ = debtools.judge_autopkgtest("", 16)
        self.assertEqual(f, 1)
        self.assertIn("the testbed failed", lines[0])
        _, _, f, _ = debtools.judge_autopkgtest("suite PASS\n", 12)
        self.assertEqual(f, 1, "an exit status that says something failed fails the run")

    def test_command_line(self):
        self.assertEqual(debtools.autopkgtest_from_args([]).suite, "trixie")
        with self.assertRaises(Usage):
            debtools.autopkgtest_from_args(["--test", "no-such-test"])
        with self.assertRaises(Usage):
            debtools.autopkgtest_from_args(["--suite", "sid"])


class Table(unittest.TestCase):
    def test_rows(self):
        for name in ("piuparts", "autopkgtest", "reprotest"):
            j = jobs.get(name, "tool")
            self.assertIsNone(j.script)
            self.assertFalse(j.check, f"{name}: ./check does not run it (its time is in doc/results.md)")
        self.assertTrue(os.access(REPO / "debian/reprotest", os.X_OK))


if __name__ == "__main__":
    unittest.main()
