#!/usr/bin/python3
"""Host tests of `ntsync-vm coverage` and the gcov kernel flavour (no guest, no root): the
flavour's configuration asks for what coverage needs and nothing it must not have, the guest
script runs the groups of the host's table in its order, the counters come back from a console
intact or are refused, and the coverage figures are read right from recorded lcov tracefiles
of a real run (test_data/coverage/). Runs in `meson test` (suite vm)."""

import base64
import hashlib
import re
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "vm"))

from ntsync_vm import boot, coverage, jobs, kernel  # noqa: E402
from ntsync_vm.util import Failure  # noqa: E402

DATA = HERE / "test_data" / "coverage"
CONFIG = REPO / "tests" / "debug-kernel" / "config"


def fragment(name):
    """{OPTION: value} of a config fragment (CONFIG_X=v lines)."""
    out = {}
    for line in (CONFIG / f"{name}.config").read_text().splitlines():
        m = re.match(r"^CONFIG_(\w+)=(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


class Flavour(unittest.TestCase):
    def test_gcov_is_a_flavour_with_its_fragment(self):
        self.assertIn("gcov", kernel.WANTED)
        self.assertIn("gcov", boot.DEBUG_FLAVOURS)
        self.assertTrue((CONFIG / "gcov.config").is_file())
        # every flavour of the table has its fragment, and the other way round
        self.assertEqual(set(kernel.WANTED), {p.stem for p in CONFIG.glob("*.config")} - {"guest"})

    def test_gcov_fragment_sets_what_the_build_checks(self):
        frag = {**fragment("guest"), **fragment("gcov")}  # merged in this order (kernel.py)
        for opt in kernel.WANTED["gcov"].split() + kernel.ALWAYS.split():
            self.assertEqual(frag.get(opt), "y", f"guest.config + gcov.config do not set CONFIG_{opt}=y")
        for opt in ("GCOV_KERNEL", "FAULT_INJECTION", "FAILSLAB", "FAULT_INJECTION_DEBUG_FS", "PROVE_LOCKING",
                    "DEBUG_ATOMIC_SLEEP", "DEBUG_FS"):
            self.assertEqual(frag.get(opt), "y", opt)

    def test_gcov_fragment_keeps_out_what_it_must(self):
        frag = fragment("gcov")
        for opt in kernel.UNWANTED["gcov"].split():
            self.assertEqual(frag.get(opt), "n", f"gcov.config must say CONFIG_{opt}=n")
        # only the objects that ask for it (module/Kbuild) are instrumented
        self.assertIn("GCOV_PROFILE_ALL", kernel.UNWANTED["gcov"])
        self.assertIn("KASAN", kernel.UNWANTED["gcov"])

    def test_kbuild_asks_for_coverage(self):
        kbuild = (REPO / "module" / "Kbuild").read_text()
        self.assertRegex(kbuild, r"(?m)^GCOV_PROFILE := y$")


class GuestScript(unittest.TestCase):
    def test_groups_in_the_tables_order(self):
        script = jobs.get("coverage", "initramfs").script.read_text()
        loop = re.search(r"(?m)^for g in ([a-z0-9 ]+); do$", script)
        self.assertIsNotNone(loop, "coverage.sh: no 'for g in ...; do' loop over the groups")
        after = re.findall(r"(?m)^group ([a-z0-9]+)$", script)
        ran = ["load"] + loop.group(1).split() + after
        self.assertEqual(ran, [g for g, _ in coverage.GROUPS])
        for g in loop.group(1).split() + after:
            self.assertRegex(script, rf"(?m)^group_{g}\(\) {{$", f"coverage.sh has no group_{g}")

    def test_the_guest_looks_for_the_build_folders_the_host_uses(self):
        script = jobs.get("coverage", "initramfs").script.read_text()
        ours, mainline = (p.rsplit("/", 1)[1] + "-" for p in (coverage.OURS_PREFIX, coverage.MAINLINE_PREFIX))
        self.assertIn(f'dump "$1" {ours}\n', script)
        self.assertIn(f"dump mainline {mainline}\n", script)
        # neither finds the other's counters
        self.assertNotIn(ours, coverage.run_dir(coverage.MAINLINE_PREFIX))
        self.assertNotIn(mainline, coverage.run_dir(coverage.OURS_PREFIX))

    def test_restamp(self):
        gcda = b"adcg" + b"B14*" + b"\x01\x02\x03\x04" + b"rest"
        gcno = b"oncg" + b"B14*" + b"\x09\x08\x07\x06" + b"notes"
        self.assertEqual(coverage.restamp(gcda, gcno), b"adcgB14*\x09\x08\x07\x06rest")
        with self.assertRaises(Failure):
            coverage.restamp(gcno, gcda)


def dump_lines(group, data, size=None, md5=None, chunk=76):
    b = base64.b64encode(data).decode()
    out = [f"##ntsync## gcda-begin {group} {len(data) if size is None else size} "
           f"{hashlib.md5(data).hexdigest() if md5 is None else md5} /sys/kernel/debug/gcov/x/ntsync.gcda"]
    out += [f"##ntsync## gcda {group} {b[i:i + chunk]}" for i in range(0, len(b), chunk)]
    out.append(f"##ntsync## gcda-end {group}")
    return out


class Console(unittest.TestCase):
    def test_counters_come_back_intact(self):
        a, b = bytes(range(256)) * 7, b"adcg" + bytes(100)
        lines = ["[    1.0] some kernel line"] + dump_lines("suite64", a) + dump_lines("smoke", b)
        dumps, bad = coverage.gcda_dumps(lines)
        self.assertEqual(dumps, {"suite64": a, "smoke": b})
        self.assertEqual(bad, {})

    def test_a_damaged_dump_is_refused(self):
        a = bytes(range(256)) * 3
        lines = dump_lines("fuzz", a)
        lines[2] = lines[2][:-4] + "AAAA"   # a chunk changed on the way
        dumps, bad = coverage.gcda_dumps(lines)
        self.assertEqual(dumps, {})
        self.assertIn("fuzz", bad)
        dumps, bad = coverage.gcda_dumps(dump_lines("abuse", a, size=len(a) + 1))
        self.assertEqual(dumps, {})
        self.assertIn("abuse", bad)

    def test_a_dump_without_its_end_is_not_taken(self):
        dumps, bad = coverage.gcda_dumps(dump_lines("load", b"x" * 99)[:-1])
        self.assertEqual((dumps, bad), ({}, {}))

    def test_recorded_build_folders(self):
        lines = ["##ntsync## gcda-begin load 10 x /sys/kernel/debug/gcov/tmp/ntsync-cov-ours-42/module/ntsync.gcda",
                 "##ntsync## gcda-begin mainline 10 x /sys/kernel/debug/gcov/tmp/ntsync-cov-mainline-42/ntsync.gcda",
                 "##ntsync## gcda-begin odd 10 x /elsewhere/ntsync.gcda"]
        self.assertEqual(coverage.recorded_dirs(lines), {"load": "/tmp/ntsync-cov-ours-42/module",
                                                         "mainline": "/tmp/ntsync-cov-mainline-42"})

    def test_program_results(self):
        lines = ["##ntsync## cov-prog suite64 test-sem 0", "##ntsync## cov-prog failslab ntsync-abuse 1",
                 "##ntsync## cov-skip differential needs mainline's in-tree driver (7.x)"]
        progs, skips = coverage.program_results(lines)
        self.assertEqual(progs, [("suite64", "test-sem", 0), ("failslab", "ntsync-abuse", 1)])
        self.assertEqual(skips, {"differential": "needs mainline's in-tree driver (7.x)"})


class Tracefiles(unittest.TestCase):
    """Recorded lcov tracefiles of one real run (see test_data/coverage/README)."""

    def load(self, name):
        return coverage.parse_info((DATA / f"{name}.info").read_text())

    def expected(self):
        """{group: (lines hit, lines found, branches taken, branches found)}: lcov's own
        summary records (LH, LF, BRH, BRF) of the recorded tracefiles, read independently."""
        out = {}
        for p in sorted(DATA.glob("*.info")):
            rec, inside = {}, False
            for line in p.read_text().splitlines():
                if line.startswith("SF:"):
                    inside = line.endswith("/ntsync.c")
                elif inside and ":" in line:
                    k, v = line.split(":", 1)
                    if k in ("LH", "LF", "BRH", "BRF"):
                        rec[k] = rec.get(k, 0) + int(v)
            out[p.stem] = (rec["LH"], rec["LF"], rec.get("BRH", 0), rec.get("BRF", 0))
        return out

    def test_summary_agrees_with_lcov(self):
        exp = self.expected()
        self.assertGreaterEqual(len(exp), 2)
        for name, want in exp.items():
            self.assertEqual(self.load(name).summary(), want, name)

    def test_union_is_at_least_each_group_and_at_most_the_sum(self):
        covs = {p.stem: self.load(p.stem) for p in DATA.glob("*.info")}
        total = coverage.FileCov()
        for c in covs.values():
            total.merge(c)
        lh, lf, bh, bf = total.summary()
        for name, c in covs.items():
            clh, clf, cbh, cbf = c.summary()
            self.assertEqual((clf, cbf), (lf, bf), f"{name}: another set of lines or branches")
            self.assertGreaterEqual(lh, clh)
            self.assertGreaterEqual(bh, cbh)
        self.assertLessEqual(lh, sum(c.summary()[0] for c in covs.values()))

    def test_unreached_lists_exactly_the_lines_missed(self):
        for p in DATA.glob("*.info"):
            cov = self.load(p.stem)
            lh, lf, bh, bf = cov.summary()
            miss = cov.unreached()
            self.assertEqual(sum(1 for _, n, _, _ in miss if n == 0), lf - lh, p.stem)
            self.assertEqual(sum(m for _, _, m, _ in miss), bf - bh, p.stem)

    def test_the_union_written_as_a_tracefile_reads_back(self):
        total = coverage.FileCov()
        for p in DATA.glob("*.info"):
            total.merge(self.load(p.stem))
        text = total.to_info("/tmp/ntsync-cov/module/ntsync.c")
        back = coverage.parse_info(text)
        self.assertEqual((back.lines, back.branches), (total.lines, total.branches))
        lh, lf, bh, bf = total.summary()
        self.assertIn(f"\nLF:{lf}\nLH:{lh}\n", text)
        self.assertIn(f"\nBRF:{bf}\nBRH:{bh}\n", text)

    def test_other_files_are_left_out(self):
        text = ("SF:/usr/src/x/include/linux/list.h\nDA:10,5\nDA:11,0\nend_of_record\n"
                "SF:/tmp/ntsync-cov/module/ntsync.c\nDA:1,1\nDA:2,0\nBRDA:2,0,0,-\nBRDA:2,0,1,3\nend_of_record\n")
        cov = coverage.parse_info(text)
        self.assertEqual(cov.summary(), (1, 2, 1, 2))
        self.assertEqual(cov.unreached(), [(2, 0, 1, 2)])
        self.assertIsNone(coverage.parse_info("SF:/a/b.c\nDA:1,1\nend_of_record\n"))

    def test_compat_header_reported_apart(self):
        text = ("SF:/m/module/ntsync.c\nDA:1,1\nend_of_record\n"
                "SF:/m/module/compat.h\nDA:44,3\nDA:46,3\nDA:47,0\nBRDA:46,0,0,3\nBRDA:46,0,1,0\n"
                "end_of_record\n")
        self.assertEqual(coverage.parse_info(text).summary(), (1, 1, 0, 0))
        cov = coverage.parse_info(text, "/" + coverage.COMPAT)
        self.assertEqual(cov.summary(), (2, 3, 1, 2))
        with tempfile.TemporaryDirectory() as d:
            Path(d, coverage.COMPAT).write_text("\n" * 45 + "if (offset > 0 && t < offset)\n\treturn 0;\n")
            out = coverage.compat_report(cov, Path(d))
        self.assertIn("2 of 3 lines, 1 of 2 branches:", out[0])
        self.assertIn("compat.h:46: 1 of 2 branches never taken: if (offset > 0 && t < offset)", out[1])
        self.assertIn("compat.h:47: never run: return 0;", out[1])
        self.assertIn("none of its lines", coverage.compat_report(coverage.FileCov(), Path("/nonexistent"))[0])

    def test_table(self):
        cov = coverage.parse_info("SF:/m/ntsync.c\nDA:1,1\nDA:2,0\nBRDA:1,0,0,1\nBRDA:1,0,1,0\nend_of_record\n")
        text = coverage.table([("suite64", cov, "the suite"), ("differential", None, "not run: 6.12")])
        self.assertRegex(text, r"suite64 +1/2 +50\.0 % +1/2 +50\.0 %  the suite")
        self.assertRegex(text, r"differential +- +- +not run: 6\.12")


if __name__ == "__main__":
    unittest.main()
