"""`ntsync-vm coverage`: measured line and branch coverage of module/ntsync.c.

The gcov kernel (`ntsync-vm build-kernel --flavour gcov`: trixie's 6.12 with
CONFIG_GCOV_KERNEL, failslab and lockdep) boots an initramfs whose /init is
vm/guest/init/coverage.sh. Our module is built against it with module/Kbuild's
GCOV_PROFILE; the guest runs the test groups one after another (GROUPS), resets the
kernel's counters before each and sends the module's ntsync.gcda to the host after it.
On the host, gcov of the kernel's own gcc and Debian's lcov (both in the gcov kernel's
build root, lcov added to it on first use) turn each group's counters into line and
branch coverage of module/ntsync.c: a table per group and for all groups together, the
lines and branches no group reached, and HTML (genhtml) in the run's folder under
$NTSYNC_CACHE/runs/.

Mainline's driver (drivers/misc/ntsync.c of Debian's linux-source-7.3, unmodified, with
the 6.12 shims of tests/coverage/mainline-on-6.12.h) is built the same way and measured
under mainline's kselftest in the same boot, for comparison (--no-mainline: not).

The differential group is test-diff against mainline 7.3's recorded answers
(tests/differential/reference-7.3.txt); the live comparison of both drivers in one boot
needs mainline's in-tree driver of a 7.x kernel and cannot run on the 6.12 gcov kernel:
the report says so.

Exit: 0 every group passed and the kernel log is clean, 1 a test failed or the kernel log
shows a report (lockdep...), 2 bad usage, 3 infrastructure.
"""

import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import arches, artifacts, boot, console, initramfs, jobs, qemu, roots, static
from .util import REPO, Failed, Failure, Usage, cache, ensure_host_tools, require_root, say

# The groups of coverage.sh, in the order it runs them: (name, what it runs).
GROUPS = (
    ("load", "insmod: the module's init"),
    ("suite64", "the conformance suite, 64-bit (every test-* but test-diff)"),
    ("suite32", "the conformance suite, i386: the compat ioctls (every test-* but test-diff)"),
    ("smoke", "ntsync-smoke"),
    ("abuse", "ntsync-abuse: kill-blocked, signal-storm, close-device, emfile, cycles (64-bit and i386)"),
    ("failslab", "ntsync-abuse failslab: slab failures injected into creates and waits (64-bit and i386)"),
    ("fuzz", "ntsync-fuzz: the model fuzzer and the concurrent fuzzer"),
    ("linearize", "ntsync-linearize: concurrent histories checked against the model"),
    ("differential", "test-diff: the matrix and walks against mainline 7.3's recorded answers, 64-bit and i386"),
    ("unload", "rmmod: the module's exit"),
    ("initfail", "insmod with its Nth slab allocation failed (fail-nth), N = 1, 2, ... until it loads"),
)
MAINLINE = "mainline"
SOURCE = "ntsync.c"
# the header whose inline code (the time-namespace arithmetic of kernels before 7.2) gcov
# counts in ntsync.c's notes: reported beside it, not in its figures
COMPAT = "compat.h"
# Where the modules are built in the gcov kernel's root, a folder of each run's own (PREFIX-PID:
# two runs at once must not overwrite each other's .gcno): the .gcda's path in the guest's
# debugfs is this build folder's, which coverage.sh finds by the prefix.
OURS_PREFIX = "/tmp/ntsync-cov-ours"
MAINLINE_PREFIX = "/tmp/ntsync-cov-mainline"
WORK_PREFIX = "/tmp/ntsync-cov-work"
CLEANUP = []  # build folders of an earlier run made again (--from-console), removed at the end


def run_dir(prefix):
    return f"{prefix}-{os.getpid()}"


def restamp(gcda, gcno):
    """GCDA (bytes) with the stamp of notes file GCNO (bytes): for counters of an earlier
    build of the same source (--from-console), whose notes are gone; gcov still checks each
    function's checksums against the notes. The stamp is the third 32-bit word of both."""
    if len(gcda) < 12 or len(gcno) < 12 or gcda[:4] != b"adcg" or gcno[:4] != b"oncg":
        raise Failure("not a .gcda and a .gcno of this machine's byte order")
    return gcda[:8] + gcno[8:12] + gcda[12:]


LCOV_RC = ["--rc", "branch_coverage=1"]


# ------------------------------------------------------------------ lcov tracefiles

@dataclass
class FileCov:
    """One source file of an lcov tracefile: hits by line, and by branch
    {(line, block, branch): taken or None (the branch's block never ran: lcov's '-')}."""
    lines: dict = field(default_factory=dict)
    branches: dict = field(default_factory=dict)

    def merge(self, other):
        for ln, n in other.lines.items():
            self.lines[ln] = self.lines.get(ln, 0) + n
        for k, n in other.branches.items():
            if n is None:
                self.branches.setdefault(k, None)
            else:
                self.branches[k] = (self.branches.get(k) or 0) + n
        return self

    def summary(self):
        """(lines hit, lines found, branches taken, branches found)."""
        return (sum(1 for n in self.lines.values() if n), len(self.lines),
                sum(1 for n in self.branches.values() if n), len(self.branches))

    def to_info(self, path):
        """This file's coverage as an lcov tracefile record of source PATH."""
        out = ["TN:", f"SF:{path}"]

        def order(kv):
            (ln, block, br), _ = kv
            return ln, int(block), int(br)
        for (ln, block, br), n in sorted(self.branches.items(), key=order):
            out.append(f"BRDA:{ln},{block},{br},{'-' if n is None else n}")
        lh, lf, bh, bf = self.summary()
        out += [f"BRF:{bf}", f"BRH:{bh}"]
        out += [f"DA:{ln},{n}" for ln, n in sorted(self.lines.items())]
        out += [f"LF:{lf}", f"LH:{lh}", "end_of_record"]
        return "\n".join(out) + "\n"

    def unreached(self):
        """[(line, lines count or None, branches not taken, branches on the line)], by line:
        every line never run and every line with a branch never taken."""
        by_line = {}
        for (ln, _, _), n in self.branches.items():
            tot, miss = by_line.get(ln, (0, 0))
            by_line[ln] = (tot + 1, miss + (0 if n else 1))
        out = []
        for ln in sorted(set(self.lines) | set(by_line)):
            tot, miss = by_line.get(ln, (0, 0))
            if self.lines.get(ln, 1) == 0 or miss:
                out.append((ln, self.lines.get(ln), miss, tot))
        return out


def parse_info(text, suffix="/" + SOURCE):
    """The FileCov of the source file whose path ends in SUFFIX in lcov tracefile TEXT
    (DA and BRDA records; the summary records are recomputed), or None if it has none."""
    cov, cur = None, None
    for line in text.splitlines():
        if line.startswith("SF:"):
            cur = FileCov() if line[3:].endswith(suffix) or line[3:] == suffix.lstrip("/") else None
            if cur is not None:
                cov = cov.merge(cur) if cov else cur
                cur = cov
        elif cur is None:
            continue
        elif line.startswith("DA:"):
            ln, n = line[3:].split(",")[:2]
            cur.lines[int(ln)] = cur.lines.get(int(ln), 0) + int(n)
        elif line.startswith("BRDA:"):
            ln, block, br, n = line[5:].split(",")[:4]
            key = (int(ln), block, br)
            if n == "-":
                cur.branches.setdefault(key, None)
            else:
                cur.branches[key] = (cur.branches.get(key) or 0) + int(n)
        elif line == "end_of_record":
            cur = None
    return cov


def pct(hit, found):
    return f"{100.0 * hit / found:5.1f} %" if found else "    - "


def table(rows):
    """The text table of ROWS [(group, FileCov or None, note)]."""
    out = [f"{'group':<14}{'lines':>16}{'':>9}{'branches':>16}{'':>9}  note",
           f"{'-' * 14}{'-' * 16}{'-' * 9}{'-' * 16}{'-' * 9}  {'-' * 4}"]
    for name, cov, note in rows:
        if cov is None:
            out.append(f"{name:<14}{'-':>16}{'':>9}{'-':>16}{'':>9}  {note}")
            continue
        lh, lf, bh, bf = cov.summary()
        out.append(f"{name:<14}{f'{lh}/{lf}':>16}{pct(lh, lf):>9}{f'{bh}/{bf}':>16}{pct(bh, bf):>9}  {note}")
    return "\n".join(out)


def unreached_text(cov, source_lines, name=SOURCE):
    """Each line never run or with a branch never taken, with its source text."""
    out = []
    for ln, count, miss, tot in cov.unreached():
        what = "never run" if count == 0 else f"{miss} of {tot} branches never taken"
        src = source_lines[ln - 1].strip() if 0 < ln <= len(source_lines) else ""
        out.append(f"{name}:{ln}: {what}: {src}")
    return "\n".join(out)


def compat_report(cov, build_dir):
    """The report's lines on module/compat.h's inline code, all groups together."""
    if not cov.lines:
        return [f"module/{COMPAT}: gcov counted none of its lines (no inline code of it in this build)", ""]
    lh, lf, bh, bf = cov.summary()
    src = build_dir / COMPAT
    text = src.read_text().splitlines() if src.exists() else []
    miss = unreached_text(cov, text, COMPAT)
    return [f"module/{COMPAT} (inlined into {SOURCE}; not in the figures above), all groups: "
            f"{lh} of {lf} lines, {bh} of {bf} branches" + (":" if miss else ", every one reached"),
            *([miss] if miss else []), ""]


# ------------------------------------------------------------------ the console

def gcda_dumps(lines):
    """{group: bytes} of a coverage boot's console LINES: each group's base64 between
    gcda-begin (size, md5) and gcda-end, checked; a dump that does not check is an error
    ({group: Failure text} in the second dict)."""
    dumps, bad, cur = {}, {}, None
    for line in lines:
        mk = console.parse_mark(line)
        if not mk:
            continue
        key, rest = mk
        if key == "gcda-begin":
            f = rest.split()
            cur = (f[0], int(f[1]), f[2], [])
        elif key == "gcda" and cur and rest.split(" ", 1)[0] == cur[0]:
            cur[3].append(rest.split(" ", 1)[1].strip() if " " in rest else "")
        elif key == "gcda-end" and cur and rest == cur[0]:
            name, size, md5, chunks = cur
            try:
                data = base64.b64decode("".join(chunks), validate=True)
            except ValueError as e:
                bad[name] = f"its base64 does not decode ({e})"
                data = None
            if data is not None:
                if len(data) != size or hashlib.md5(data).hexdigest() != md5:
                    bad[name] = f"{len(data)} bytes, md5 {hashlib.md5(data).hexdigest()}; the guest sent {size}, {md5}"
                else:
                    dumps[name] = data
            cur = None
    return dumps, bad


def recorded_dirs(lines):
    """{group: the build folder (in the kernel's root) whose ntsync.gcda the guest sent}, from
    the gcda-begin markers' debugfs paths."""
    out = {}
    for mk in filter(None, map(console.parse_mark, lines)):
        if mk[0] == "gcda-begin":
            f = mk[1].split()
            if len(f) >= 4 and f[3].startswith("/sys/kernel/debug/gcov/") and f[3].endswith("/ntsync.gcda"):
                out[f[0]] = f[3][len("/sys/kernel/debug/gcov"):-len("/ntsync.gcda")]
    return out


def program_results(lines):
    """[(group, program, exit status)] of the cov-prog markers, and {group: why skipped}."""
    progs, skips = [], {}
    for mk in filter(None, map(console.parse_mark, lines)):
        k, rest = mk
        if k == "cov-prog":
            f = rest.split()
            if len(f) >= 3:
                progs.append((f[0], f[1], int(f[2]) if f[2].lstrip("-").isdigit() else -1))
        elif k == "cov-skip":
            g, _, why = rest.partition(" ")
            skips[g] = why
    return progs, skips


# ------------------------------------------------------------------ the builds

def gcov_root():
    """The gcov kernel (boot.Kernel) and its build root with lcov added (once)."""
    k = boot.Kernel("gcov")
    roots.add_packages(k.root, ["lcov"], "gcov kernel's build root")
    return k


def build_ours(k, work, dest=None):
    """Our module with GCOV_PROFILE against the gcov kernel, in K's root at this run's
    OURS_PREFIX folder (kept until the end: its ntsync.gcno and ntsync.c are what gcov
    reads); the .ko copied to WORK."""
    logf = work / "build-ours.log"
    dest = dest or run_dir(OURS_PREFIX)
    if dest.endswith("/module"):
        dest = dest[:-len("/module")]
    ok, ko = roots.build_module(k.root, k.kdir, logf, dest=dest, flags=["W=1"])
    if not ok:
        print(logf.read_text(errors="replace"), end="")
        raise Failed(f"the module did not build against the gcov kernel ({k.kdir})")
    if not (ko.parent / "ntsync.gcno").exists():
        raise Failure(f"no ntsync.gcno beside {ko}: the module was built without GCOV_PROFILE "
                      "(module/Kbuild) or the kernel is not a CONFIG_GCOV_KERNEL one")
    shutil.copy2(ko, work / "ntsync.ko")
    return ko.parent


MAINLINE_KBUILD = """\
# mainline's drivers/misc/ntsync.c as an out-of-tree module on 6.12 (vm/ntsync-vm coverage)
obj-m := ntsync.o
ccflags-y := -include $(src)/tests/coverage/mainline-on-6.12.h
GCOV_PROFILE := y
"""


def build_mainline(k, work, mdir=None):
    """Mainline's driver and kselftest from linux-source-7.3, built in K's root: (ko,
    selftest binary, build folder in the root), or a reason why not (a str)."""
    try:
        src = boot.mainline_source()
    except Failure as e:
        return f"linux-source-7.3 could not be fetched: {e}"
    mdir = mdir or run_dir(MAINLINE_PREFIX)
    host_dir = Path(str(k.root) + mdir)
    roots.safe_rm(host_dir)
    host_dir.mkdir(parents=True)
    shutil.copy2(src / "drivers/misc/ntsync.c", host_dir / SOURCE)
    # the shim and the ABI header where they are in this tree: the shim includes the header
    # by its path relative to itself
    for f in ("tests/coverage/mainline-on-6.12.h", "include/uapi/linux/ntsync.h"):
        (host_dir / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, host_dir / f)
    (host_dir / "Kbuild").write_text(MAINLINE_KBUILD)
    logf = work / "build-mainline.log"
    with open(logf, "w") as lf:
        r = roots.in_root(k.root, ["make", "-s", "-C", k.kdir, f"M={mdir}", "modules"],
                          stdout=lf, stderr=subprocess.STDOUT)
    if r.returncode or not (host_dir / "ntsync.ko").exists():
        return ("mainline's ntsync.c did not build against 6.12 with the shims; log:\n"
                + logf.read_text(errors="replace"))
    sel = host_dir / "selftest"
    shutil.copytree(src / "tools/testing/selftests", sel / "selftests")
    (sel / "uapi/linux").mkdir(parents=True)
    shutil.copy2(REPO / "include/uapi/linux/ntsync.h", sel / "uapi/linux/ntsync.h")
    d = f"{mdir}/selftest"
    with open(logf, "a") as lf:
        r = roots.in_root(k.root, ["gcc", "-O2", "-static", "-pthread", "-I", f"{d}/uapi", "-I", f"{d}/selftests",
                                   "-o", f"{d}/ntsync-selftest", f"{d}/selftests/drivers/ntsync/ntsync.c"],
                          stdout=lf, stderr=subprocess.STDOUT)
    if r.returncode:
        return f"mainline's kselftest did not build; log:\n{logf.read_text(errors='replace')}"
    shutil.copy2(host_dir / "ntsync.ko", work / "mainline.ko")
    shutil.copy2(sel / "ntsync-selftest", work / "ntsync-selftest")
    return work / "mainline.ko", work / "ntsync-selftest", host_dir


# ------------------------------------------------------------------ gcov and lcov

def lcov_group(k, build_dir, name, data, out, stamp=False):
    """The lcov tracefile of group NAME's counters DATA (a .gcda), made in K's root beside
    the build's .gcno: gcov of the kernel's own gcc, through lcov. Saved in OUT/NAME.info.
    STAMP: DATA is of an earlier build of the same source (restamp())."""
    inside = f"{run_dir(WORK_PREFIX)}/groups/{build_dir.name}/{name}"
    host = Path(str(k.root) + inside)
    roots.safe_rm(host)
    host.mkdir(parents=True)
    gcno = (build_dir / "ntsync.gcno").read_bytes()
    (out / f"{name}.gcda").write_bytes(data)
    (host / "ntsync.gcda").write_bytes(restamp(data, gcno) if stamp else data)
    (host / "ntsync.gcno").write_bytes(gcno)
    rel = "/" + str(build_dir.relative_to(k.root))
    logf = out / f"{name}.lcov.log"
    with open(logf, "w") as lf:
        r = roots.in_root(k.root, ["lcov", "--quiet", "--capture", "--directory", inside, "--base-directory", rel,
                                   "--gcov-tool", "gcov", *LCOV_RC, "--ignore-errors", "inconsistent,unused,source",
                                   "--include", f"*/{SOURCE}", "--include", f"*/{COMPAT}",
                                   "--output-file", f"{inside}/cov.info"],
                          stdout=lf, stderr=subprocess.STDOUT)
    info = host / "cov.info"
    if r.returncode or not info.exists():
        raise Failure(f"lcov failed on group {name}; see {logf}")
    shutil.copy2(info, out / f"{name}.info")
    return info.read_text()


def genhtml(k, build_dir, infos, out, title):
    """HTML of the tracefiles INFOS ({name: text}) into OUT/html (genhtml, in K's root)."""
    inside = f"{run_dir(WORK_PREFIX)}/html/{build_dir.name}"
    host = Path(str(k.root) + inside)
    roots.safe_rm(host)
    host.mkdir(parents=True)
    args = []
    for name, text in infos.items():
        (host / f"{name}.info").write_text(text)
        args.append(f"{inside}/{name}.info")
    logf = out / "genhtml.log"
    with open(logf, "w") as lf:
        r = roots.in_root(k.root, ["genhtml", "--quiet", *LCOV_RC, "--ignore-errors", "inconsistent,unused,source",
                                   "--title", title, "--output-directory", f"{inside}/html", *args],
                          stdout=lf, stderr=subprocess.STDOUT)
    if r.returncode:
        say(f"genhtml failed (see {logf}); no HTML")
        return None
    shutil.rmtree(out / "html", ignore_errors=True)
    shutil.copytree(host / "html", out / "html")
    roots.safe_rm(host)
    return out / "html" / "index.html"


# ------------------------------------------------------------------ the run

def main(argv):
    ap = argparse.ArgumentParser(prog="ntsync-vm coverage", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2] + "\ngroups:\n" + "\n".join(
                                     f"  {n:<14}{w}" for n, w in GROUPS))
    ap.add_argument("--fuzz-seconds", type=boot.whole, default=60,
                    help="seconds of each of the two 64-bit fuzz runs (60; the i386 model run a third of it)")
    ap.add_argument("--linearize-seconds", type=boot.whole, default=60, help="seconds of ntsync-linearize (60)")
    ap.add_argument("--cycles", type=boot.whole, default=2000, help="create/close cycles of ntsync-abuse (2000)")
    ap.add_argument("--no-mainline", action="store_true", help="do not measure mainline's driver and kselftest")
    ap.add_argument("--from-console", metavar="LOG", help="no guest: analyse the console log of an earlier run "
                    "(the modules are built again from this tree: it must be the tree that run measured)")
    o = ap.parse_args(argv)
    require_root("coverage (the module is built in a chroot)")
    arch = arches.get()
    if arch.name != roots.native_arch().name:
        raise Usage("coverage runs on the host's architecture only (the gcov kernel is built for it)")
    k = gcov_root()
    runs = cache() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-") + "coverage-", dir=runs))
    artifacts.prune_runs(runs)
    say(f"results in {out}")
    with tempfile.TemporaryDirectory(prefix="ntsync-cov-") as w:
        try:
            return measure(o, k, arch, out, Path(w))
        finally:
            for prefix in (OURS_PREFIX, MAINLINE_PREFIX, WORK_PREFIX):
                roots.safe_rm(Path(str(k.root) + run_dir(prefix)))
            for d in CLEANUP:
                roots.safe_rm(Path(str(k.root) + d))


def measure(o, k, arch, out, work):
    # --from-console: the modules are built again where that run built them, so that gcov's
    # per-function checksums (which include the source's path) match its counters
    recorded = recorded_dirs(console.clean_lines(Path(o.from_console).read_text(errors="replace"))) \
        if o.from_console else {}
    ours_rec = next((d for g, d in recorded.items() if g != MAINLINE), None)
    for d in (ours_rec, recorded.get(MAINLINE)):
        if d and not re.fullmatch(r"/tmp/ntsync-cov-(ours|mainline)-[0-9]+(/module)?", d):
            raise Usage(f"--from-console: the run built in {d}, not a folder of this tool's (an older run?)")
    CLEANUP.extend(d for d in (ours_rec, recorded.get(MAINLINE)) if d)
    ours_dir = build_ours(k, work, ours_rec)
    ml = None if o.no_mainline else build_mainline(k, work, recorded.get(MAINLINE))
    if isinstance(ml, str):
        say(f"mainline's driver is not measured: {ml}")
        (out / "mainline-not-measured.txt").write_text(ml + "\n")
    consolef = out / "console.log"
    if o.from_console:
        shutil.copy2(o.from_console, consolef)
        text = consolef.read_text(errors="replace")
    else:
        ensure_host_tools([arch.qemu.binary, "busybox", "unshare"])
        names = arches.static_names(arch)
        bins = static.build(names)
        files = {"ntsync.ko": work / "ntsync.ko", "native": bins / names[0],
                 "coverage-args": f"FUZZ_SECONDS={o.fuzz_seconds} LINEARIZE_SECONDS={o.linearize_seconds} "
                                  f"CYCLES={o.cycles}\n"}
        if len(names) > 1:
            files["compat"] = bins / names[1]
        if isinstance(ml, tuple):
            files["mainline.ko"] = ml[0]
            files["ntsync-selftest"] = ml[1]
        job = jobs.get("coverage", "initramfs")
        # find, base64 and md5sum send each group's counters to the host
        initramfs.build(work / "initrd.gz", *boot.init_files(job, files), busybox=k.busybox,
                        applets=initramfs.APPLETS + ["find", "base64", "md5sum"])
        limit = 3 * (o.fuzz_seconds * 2 + o.linearize_seconds) + o.cycles // 20 + job.timeout
        m = qemu.Machine(console=consolef, arch=arch, name="ntsync-coverage", mem=2048, smp=2,
                         kernel=k.vmlinuz, initrd=work / "initrd.gz", rng=False, nice=10,
                         append=f"{arch.console_arg()} panic=-1 loglevel=4")
        text, _ = boot.boot(m, limit, who=f"{k.release} (gcov), guest limit {limit} s")
    return judge(k, text, ours_dir, ml if isinstance(ml, tuple) else None, out, stamp=bool(o.from_console))


def judge(k, text, ours_dir, ml, out, stamp=False):
    lines = console.clean_lines(text)
    marks = console.marks(text)
    rc = 0
    for line in map(console.shown, lines):
        if re.match(r"^(== (uname|version|dev|cov-group|cov-prog |cov-skip|cov-initfail|gcda-missing|no-gcov|lockdep|"
                    r"taint)|"
                    r"\[  (FAILED|ERROR) |not ok |FAIL )", line):
            print(line)
    progs, skips = program_results(lines)
    failed = [(g, p, r) for g, p, r in progs if r not in (0, 77)]
    for g, p, r in failed:
        note = " (mainline's driver: reported, not judged)" if g == MAINLINE else ""
        say(f"coverage: group {g}: {p} failed (exit {r}){note}")
    rc |= 1 if any(g != MAINLINE for g, _, _ in failed) else 0
    if console.mark(marks, "end") is None:
        say("coverage: the guest did not finish")
        rc = 1
    rc |= boot.judge_taint(marks, "coverage")
    if boot.kernel_log_problems(lines):
        say("coverage: the kernel log shows a report (above): lockdep, a WARNING, ...")
        rc = 1
    dumps, bad = gcda_dumps(lines)
    for g, why in bad.items():
        say(f"coverage: the counters of group {g} came back damaged: {why}")
        rc = 1
    source = (ours_dir / SOURCE).read_text().splitlines()
    rows, total, infos, compat = [], None, {}, FileCov()
    for name, what in GROUPS:
        if name in skips:
            rows.append((name, None, f"not run: {skips[name]}"))
            continue
        if name not in dumps:
            rows.append((name, None, "no counters came back"))
            rc = 1
            continue
        info = lcov_group(k, ours_dir, name, dumps[name], out, stamp)
        cov = parse_info(info)
        if cov is None:
            raise Failure(f"group {name}: lcov's tracefile has no {SOURCE} (see {out / (name + '.info')})")
        if not cov.summary()[0]:
            raise Failure(f"group {name}: gcov counted no line at all: its counters do not belong to this "
                          f"build's notes ({ours_dir / 'ntsync.gcno'}), a different build of the module")
        infos[name] = info
        compat.merge(parse_info(info, "/" + COMPAT) or FileCov())
        nfail = sum(1 for g, _, _ in failed if g == name)
        rows.append((name, cov, what + (f"; {nfail} FAILED" if nfail else "")))
        total = FileCov().merge(total).merge(cov) if total else FileCov().merge(cov)
    if total is None:
        raise Failure(f"no group's counters came back; see {out / 'console.log'}")
    rows.append(("all groups", total, "the union of the groups above"))
    rows.append(("diff-live", None, "not run: the live comparison of both drivers in one boot needs mainline's "
                 "in-tree driver (7.x); the gcov kernel is 6.12"))
    mainline_cov = None
    if ml:
        if MAINLINE in dumps:
            minfo = lcov_group(k, ml[2], MAINLINE, dumps[MAINLINE], out, stamp)
            mainline_cov = parse_info(minfo)
            sel = [p for p in progs if p[0] == MAINLINE]
            rows.append(("mainline", mainline_cov, "mainline's ntsync.c (7.3) under mainline's kselftest: "
                         + ", ".join(f"{p} exit {r}" for _, p, r in sel)))
        else:
            rows.append(("mainline", None, "no counters came back"))
    report = [f"line and branch coverage of module/{SOURCE} (gcov of {k.release}, lcov); per group, each "
              "from counters reset before it", "", table(rows), ""]
    unreached = unreached_text(total, source)
    (out / "unreached.txt").write_text(unreached + "\n")
    report += [f"lines never run and branches never taken in any group ({len(total.unreached())} lines; "
               f"{out / 'unreached.txt'}):", unreached, ""]
    report += compat_report(compat, ours_dir)
    (out / "all.info").write_text(total.to_info(str(ours_dir / SOURCE)[len(str(k.root)):]))
    html = genhtml(k, ours_dir, {"all": (out / "all.info").read_text()}, out, "ntsync.c, all groups")
    if html:
        report.append(f"HTML: {html}")
    if ml and mainline_cov is not None:
        (out / MAINLINE).mkdir(exist_ok=True)
        mhtml = genhtml(k, ml[2], {"mainline": (out / f"{MAINLINE}.info").read_text()}, out / MAINLINE,
                        "mainline ntsync.c under kselftest")
        if mhtml:
            report.append(f"HTML of mainline's: {mhtml}")
    (out / "coverage.txt").write_text("\n".join(report) + "\n")
    print("\n".join(report))
    say(f"coverage: {'passed' if rc == 0 else 'FAILED'}; everything in {out}")
    return rc
