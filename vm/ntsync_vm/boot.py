"""`ntsync-vm boot [KERNEL] --job JOB`: a kernel booted with nothing but an initramfs
(busybox, the module built for exactly that kernel, static programs from meson/build-static,
an /init: vm/guest/init/JOB.sh), the console judged on the host.

KERNEL is a suite of the suite table (its cloud kernel, from the suite's kernel root) or, for
the fuzz job, debug or kcsan (the kernels of `ntsync-vm build-kernel`). The jobs are the
initramfs rows of the job table (vm/ntsync_vm/jobs.py), each with its default kernel.
Exit: 0 passed, 1 failed, 2 bad usage (or what is needed is missing), 3 infrastructure.
"""

import argparse
import dataclasses
import lzma
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import arches, console, gates, initramfs, jobs, qemu, roots, run, static, suites
from .util import MIRROR, REPO, VM_DIR, Failed, Failure, Usage, cache, ensure_host_tools, require_root, say

DEBUG_FLAVOURS = ("debug", "kcsan", "gcov")
DEBUG_TREE = "/build/linux-source-6.12"

INIT_DIR = VM_DIR / "guest" / "init"


@dataclasses.dataclass(frozen=True)
class BootRequest:
    """Everything one initramfs boot needs: the only input of a boot job (from_args)."""
    job: jobs.Job
    kernel: str                        # a suite, or debug / kcsan
    arch: arches.Arch = dataclasses.field(default_factory=arches.get)
    in_tree: bool = False              # the kernel's own ntsync.ko instead of ours
    seconds: int = 600                 # fuzz: guest-abuse.sh's fuzzing time
    cycles: int = None                 # fuzz: create/close cycles (None: by kernel)
    seed: int = None
    smp: int = 2
    mem: int = 2048
    suite: bool = False                # fuzz: the conformance suite first
    linearize: int = 120
    linearize_only: bool = False
    concurrent: int = None
    memcg: int = 0
    module_src: Path = None            # smoke, suite, bench, fuzz: the module from another tree
    rest: tuple = ()                   # bench: ntsync-bench's arguments

    def console(self):
        return self.arch.console_arg()


def init_files(job, files):
    """The /init of JOB (its row's script, vm/guest/init/NAME.sh) and FILES with the library
    every /init sources."""
    if not job.script.is_file():
        raise Failure(f"job {job.name}: its script {job.script} is missing")
    files["lib/init.sh"] = INIT_DIR / "lib.sh"
    return job.script.read_text(), files


class Kernel:
    """The kernel a boot job boots: its root (where the module is built), its image, release
    and the headers' path inside the root. A kernel of the host's architecture is the suite's
    (its kernel root, installed); another architecture's is the suite's cross root with that
    kernel fetched and extracted (roots.CrossKernel): the module is cross-built, the guest
    gets that architecture's busybox."""

    def __init__(self, name, pattern="*", arch=None):
        self.name = name
        self.arch = arch or arches.get()
        self.cross = None
        self.busybox = None                # None: the host's (initramfs.static_busybox)
        if name in DEBUG_FLAVOURS:
            if self.arch.name != roots.native_arch().name:
                raise Usage(f"the {name} kernel is built for {roots.native_arch().name} only")
            base = cache() / f"{name}-kernel"
            self.root = base / "root"
            self.vmlinuz = self.root / DEBUG_TREE.lstrip("/") / self.arch.kernel_build_image
            if not (self.vmlinuz.is_file() and (base / "stamp").is_file()):
                raise Usage(f"no {name} kernel in {base}: run 'vm/ntsync-vm build-kernel --flavour {name}' first")
            stamp = dict(line.split("=", 1) for line in (base / "stamp").read_text().splitlines() if "=" in line)
            self.release = stamp.get("kernel", "6.12-ntsync-" + name)
            self.kdir = DEBUG_TREE
            self.modroot = self.root
        elif self.arch.name != roots.native_arch().name:
            self.name = suites.resolve(name)
            if self.arch.name not in suites.get(self.name).architectures:
                raise Usage(f"suite {self.name} has no {self.arch.name} kernel (its architectures: "
                            f"{', '.join(suites.get(self.name).architectures)})")
            self.cross = roots.CrossKernel(self.name, self.arch)
            self.root, self.kdir, self.release = self.cross.root, self.cross.kdir, self.cross.release
            self.vmlinuz, self.busybox, self.modroot = self.cross.image, self.cross.busybox, self.cross.files
            if self.cross.note:
                say(f"{self.arch.name} kernel of {self.name}: {self.cross.note}")
        else:
            self.name = suites.resolve(name)
            self.root = roots.kroot(self.name, self.arch)
            self.release, self.vmlinuz = roots.kernel_release(self.root, pattern, self.arch)
            self.kdir = f"/usr/src/linux-headers-{self.release}"
            self.modroot = self.root

    def in_tree_ko(self, dest):
        """The kernel's own ntsync.ko, uncompressed (busybox insmod takes plain .ko)."""
        found = sorted(p for d in ("lib/modules", "usr/lib/modules")
                       for p in Path(self.modroot, d, self.release).rglob("ntsync.ko*"))
        if not found:
            raise Usage(f"kernel {self.release} has no in-tree ntsync module (suites with it: "
                        f"{', '.join(suites.in_tree_names(image_only=False))})")
        ko = found[0]
        if ko.name.endswith(".xz"):
            Path(dest).write_bytes(lzma.decompress(ko.read_bytes()))
        elif ko.name.endswith(".zst"):
            ensure_host_tools(["zstd"])
            with open(dest, "wb") as f:
                subprocess.run(["zstd", "-qdc", str(ko)], stdout=f, check=True)
        else:
            shutil.copy2(ko, dest)
        return ko

    def build_ours(self, dest, work, src=REPO, flags=()):
        logf = Path(work) / "build.log"
        if self.cross:
            ok, ko = self.cross.build_module(logf, src=src, flags=flags)
        else:
            ok, ko = roots.build_module(self.root, self.kdir, logf, src=src, dest="/tmp/ntsync-boot", flags=flags)
        if not ok:
            print(logf.read_text(errors="replace"), end="")
            raise Failed(f"the module did not build against {self.name} ({self.kdir}, {self.arch.name})")
        shutil.copy2(ko, dest)
        roots.safe_rm(ko.parent.parent)

    def initramfs(self, dest, init, files):
        """The guest's initramfs: /init, FILES and this architecture's busybox."""
        return initramfs.build(dest, init, files, busybox=self.busybox)


def boot(machine, timeout, tcg_only=False, who=""):
    """Run MACHINE through the guest loop (run.guest: the lock, KVM or TCG, a second boot
    after a crash before /init's first marker); returns (console text, seconds)."""
    say(f"booting {who}; console log {machine.console}")
    r = run.guest(machine, run.Watch(timeout), tcg_only=tcg_only, stderr_to_console=True)
    stopped = f" and was stopped after its time-out ({timeout:.0f} s)" if r.stalled else ""
    say(f"guest ran {r.seconds:.0f} s{stopped}")
    return r.text(), r.seconds


def log_path(name):
    d = cache() / "logs"
    d.mkdir(parents=True, exist_ok=True)
    return d / name


def kernel_log_problems(lines, kcsan=False):
    """Gate the console lines; print what matched. Returns the number of problems."""
    problems = gates.judge(lines, "console", kcsan=kcsan)
    for p in problems:
        print(f"  {p}")
    return len(problems)


def taint_of(marks):
    t = console.mark(marks, "taint")
    return int(t) if t and t.isdigit() else None


def judge_taint(marks, prog):
    taint = taint_of(marks)
    if taint is None:
        say(f"{prog}: unexpected kernel taint 'none' (the guest did not report it)")
        return 1
    bad = gates.taint_problem(taint)
    if bad:
        say(f"{prog}: {bad}")
        return 1
    return 0


# ------------------------------------------------------------------ smoke and bench

def job_smoke(o, work):
    k = Kernel(o.kernel, arch=o.arch)
    files = {}
    bins = static.build([o.arch.debian_arch]) / o.arch.debian_arch
    compare = "intree" in o.job.needs  # the kernel's own driver beside ours, compared in the guest
    if compare:
        k.in_tree_ko(work / "intree.ko")
        files["intree.ko"] = work / "intree.ko"
        files["bin/ntsync-bench"] = bins / "ntsync-bench"
        files["bench-args"] = " ".join(shlex.quote(a) for a in o.rest) + (" " if o.rest else "")
    if o.in_tree:
        k.in_tree_ko(work / "ntsync.ko")
    else:
        build_ours_from(o, k, work)
    files["ntsync.ko"] = work / "ntsync.ko"
    if o.job.name in ("smoke", "bench"):
        files["bin/ntsync-smoke"] = bins / "ntsync-smoke"
    else:  # a row of the job table with no runner of its own: every static program
        files.update({f"bin/{b.name}": b for b in bins.iterdir() if b.is_file() and not b.name.startswith(".")})
    k.initramfs(work / "initrd.gz", *init_files(o.job, files))
    name = o.job.name
    timed = o.job.timed
    tag = k.name + ("" if o.arch.name == arches.DEFAULT else f"-{o.arch.name}")
    m = qemu.Machine(console=log_path(f"boot-{name}-{tag}.log"), arch=o.arch, name=f"ntsync-boot-{name}",
                     mem=1024, smp=1 if timed else 2, cpu=o.arch.qemu.cpu_bench if timed else None, icount=timed,
                     kernel=k.vmlinuz, initrd=work / "initrd.gz", rng=False,
                     append=f"{o.console()} panic=-1 oops=panic" + (" quiet" if timed else ""))
    text, _ = boot(m, console.timeout_for("boot", o.job.timeout), tcg_only=timed,
                   who=f"{k.release} ({k.name}, {o.arch.name})")
    return judge_smoke(text, k.name, compare, exit_mark=f"{name}-exit")


def judge_smoke(text, name, bench=False, prog="boot", exit_mark="smoke-exit"):
    """The verdict of a smoke-like boot: the job's EXIT_MARK 0, rmmod, taint, the gates."""
    lines = console.clean_lines(text)
    marks = console.marks(text)
    rc = 0
    if bench:
        for d in ("intree", "ntsync"):
            js = console.between(lines, f"json-begin {d}", f"json-end {d}")
            log_path(f"bench-{name}-{d}.json").write_text("\n".join(js) + "\n")
        print("\n".join(console.between(lines, "compare-begin", "compare-exit")))
        if console.mark(marks, "compare-exit") != "0":
            say(f"{prog}: ntsync-bench --compare failed in the guest")
            rc = 1
    for line in map(console.shown, lines):
        if re.match(r"^(== |FAIL |smoke: )", line) and not line.startswith("== json"):
            print(line)
    if console.mark(marks, exit_mark) != "0":
        rc = 1
    if not any(k == "rmmod" and r == "ok" for k, r in marks):
        say(f"{prog}: rmmod failed or never ran")
        rc = 1
    rc |= judge_taint(marks, prog)
    if kernel_log_problems(lines):
        say(f"{prog}: kernel log shows a report (above)")
        rc = 1
    return rc


# ------------------------------------------------------------------ suite

@dataclasses.dataclass(frozen=True)
class SuiteResult:
    """What one suite boot gave (the matrix's initramfs rows): the counts of every ABI added
    up, the verdict, the kernel, the console log, the smoke test's line (smoke_line)."""
    rc: int
    passed: int
    failed: int
    skipped: int
    release: str
    console: Path
    seconds: float
    smoke: str = "-"


def build_ours_from(o, k, work):
    """Our module, W=1, into WORK/ntsync.ko: from this tree, or --module-src's."""
    k.build_ours(work / "ntsync.ko", work, src=o.module_src or REPO, flags=["W=1"])
    if o.module_src:
        say(f"the module from {o.module_src}")


def job_suite(o, work):
    return run_suite(o, work).rc


def run_suite(o, work):
    k = Kernel(o.kernel, arch=o.arch)
    if o.in_tree:
        k.in_tree_ko(work / "ntsync.ko")
    else:
        build_ours_from(o, k, work)
    names = arches.static_names(o.arch)  # its own programs, and its compat ABI's when it has one
    out = static.build(names)
    files = {"ntsync.ko": work / "ntsync.ko", "native": out / names[0]}
    if len(names) > 1:
        files["compat"] = out / names[1]
    k.initramfs(work / "initrd.gz", *init_files(o.job, files))
    tag = k.name + ("" if o.arch.name == arches.DEFAULT else f"-{o.arch.name}") + ("-intree" if o.in_tree else "")
    m = qemu.Machine(console=log_path(f"boot-suite-{tag}.log"), arch=o.arch, name="ntsync-boot-suite",
                     mem=1024, smp=2, kernel=k.vmlinuz, initrd=work / "initrd.gz", rng=False,
                     append=f"{o.console()} panic=-1 oops=panic")
    text, seconds = boot(m, console.timeout_for("boot", o.job.timeout),
                         who=f"{k.release} ({k.name}, {o.arch.name}), the suite of {', '.join(names)}")
    rc = judge_suite(text, names, seconds)
    lines = console.clean_lines(text)
    counts = suite_counts(lines).values()
    return SuiteResult(rc, *(sum(c[i] for c in counts) for i in range(3)), release=k.release,
                       console=m.console, seconds=seconds, smoke=smoke_line(lines, console.marks(text)))


SMOKE_LINE = re.compile(r"^smoke: (\d+) passed, (\d+) failed$")


def smoke_line(lines, marks):
    """The smoke test's verdict in a suite boot's console LINES and MARKS: 'N passed, N
    failed' when ntsync-smoke printed its line and exited 0, 'FAIL (...)' when it did not,
    '-' when it never ran (static programs without it)."""
    if console.mark(marks, "smoke") is None:
        return "-"
    got = [m for m in (SMOKE_LINE.match(console.shown(x)) for x in lines) if m]
    rc = console.mark(marks, "smoke-exit")
    if not got:
        return f"FAIL (no result line, exit {rc})"
    p, f = got[-1].groups()
    return f"{p} passed, {f} failed" + ("" if rc == "0" and f == "0" else f" FAIL (exit {rc})")


CMOCKA_TOTAL = re.compile(r"^\[  (PASSED|FAILED|SKIPPED) *\] (\d+) test")


def suite_counts(lines):
    """{abi: [passed, failed, skipped, [failed programs]]} of a suite boot's console LINES:
    each program's cmocka totals between its suite-group and suite-exit marks; a program that
    exits 77 skipped whole (one skip), one that exits non-zero without a failed case (a crash,
    a time-out) is one failure."""
    out, cur, got = {}, None, None
    for line in lines:
        mk = console.parse_mark(line)
        if mk and mk[0] == "suite-group":
            abi, _, prog = mk[1].partition(" ")
            cur, got = (abi, prog), {"PASSED": 0, "FAILED": 0, "SKIPPED": 0}
            out.setdefault(abi, [0, 0, 0, []])
        elif mk and mk[0] == "suite-exit" and cur:
            abi, prog = cur
            rc = mk[1].rsplit(" ", 1)[-1]
            c = out[abi]
            if rc == "77" and not any(got.values()):
                got["SKIPPED"] += 1
            elif rc != "0" and not got["FAILED"]:
                got["FAILED"] += 1
            c[0] += got["PASSED"]
            c[1] += got["FAILED"]
            c[2] += got["SKIPPED"]
            if got["FAILED"]:
                c[3].append(prog)
            cur = None
        elif cur:
            m = CMOCKA_TOTAL.match(line)
            if m:
                got[m.group(1)] += int(m.group(2))
    return out


def judge_suite(text, names, seconds=None, prog="boot"):
    """The verdict of a suite boot: every ABI's programs ran and none failed, rmmod, taint,
    the gates; prints each ABI's counts and the guest's times."""
    lines = console.clean_lines(text)
    marks = console.marks(text)
    for line in map(console.shown, lines):
        if re.match(r"^(== (dev|version|uname|suite-exit|rmmod)|\[  (FAILED|ERROR) |\[  FAILED  \] )", line):
            print(line)
    counts = suite_counts(lines)
    rc = 0
    smoke = smoke_line(lines, marks)
    if smoke != "-":
        print(f"smoke: {smoke}")
        rc |= 0 if smoke.endswith(" 0 failed") else 1
    for abi, name in zip(("native", "compat"), names):
        if abi not in counts:
            say(f"{prog}: the {name} programs ({abi}) never ran")
            rc = 1
            continue
        p, f, s, failed = counts[abi]
        print(f"{name} ({abi}): {p} passed, {f} failed, {s} skipped" + (f" ({' '.join(failed)})" if failed else ""))
        rc |= 1 if f or not p else 0
    times = dict(rest.split(" ", 1) for k, rest in marks if k == "uptime" and " " in rest)
    try:
        init, done = float(times["init"]), float(times["suite"])
        print(f"times: kernel to /init {init:.1f} s, suite {done - init:.1f} s (guest clock)"
              + (f", whole guest run {seconds:.0f} s" if seconds else ""))
    except (KeyError, ValueError):
        pass
    if console.mark(marks, "end") is None:
        say(f"{prog}: the guest did not finish")
        rc = 1
    if not any(k == "rmmod" and r == "ok" for k, r in marks):
        say(f"{prog}: rmmod failed or never ran")
        rc = 1
    rc |= judge_taint(marks, prog)
    if kernel_log_problems(lines):
        say(f"{prog}: kernel log shows a report (above)")
        rc = 1
    return rc


# ------------------------------------------------------------------ fuzz

def job_fuzz(o, work):
    k = Kernel(o.kernel, arch=o.arch)
    cycles = o.cycles if o.cycles is not None else (20000 if k.name in DEBUG_FLAVOURS else 1000000)
    if o.linearize_only:
        cycles = 0
    if o.in_tree:
        ko = k.in_tree_ko(work / "ntsync.ko")
        say(f"the in-tree driver {ko.relative_to(k.root)}")
    else:
        k.build_ours(work / "ntsync.ko", work, src=o.module_src or REPO)
        if o.module_src:
            say(f"the module from {o.module_src}")
    names = arches.static_names(o.arch)  # its own programs, and its compat ABI's when it has one
    out = static.build(names)
    args = f"--seconds {o.seconds} --cycles {cycles}" + (f" --seed {o.seed}" if o.seed is not None else "")
    args += " --suite /" if o.suite else ""
    args += f" --linearize {o.linearize}" + (" --linearize-only" if o.linearize_only else "")
    args += f" --concurrent {o.concurrent}" if o.concurrent is not None else ""
    args += f" --memcg {o.memcg}" if o.memcg else ""
    files = {"ntsync.ko": work / "ntsync.ko", "native": out / names[0],
             "bin/guest-abuse.sh": REPO / "tests/fuzz/guest-abuse.sh", "fuzz-args": args + "\n"}
    if len(names) > 1:
        files["compat"] = out / names[1]
    k.initramfs(work / "initrd.gz", *init_files(o.job, files))
    tag = k.name + ("-intree" if o.in_tree else f"-{Path(o.module_src).name}" if o.module_src else "")
    limit = (o.seconds + (o.concurrent or 0) + o.memcg) * 3 + cycles // 200 + o.linearize * 2 + 1800
    # KCSAN prints a report's stacks at the default level: without them the host could not
    # tell whose race it is.
    loglevel = 7 if k.name == "kcsan" else 4
    # --memcg: every failed charge prints an OOM report ("no killable processes") to the
    # kernel log; a larger log keeps the guest's own check of it from losing lines.
    logbuf = " log_buf_len=64M" if o.memcg else ""
    m = qemu.Machine(console=log_path(f"boot-fuzz-{tag}.log"), arch=o.arch, name="ntsync-boot-fuzz", mem=o.mem,
                     smp=o.smp, kernel=k.vmlinuz, initrd=work / "initrd.gz", rng=False, nice=10,
                     append=f"{o.console()} panic=-1 kasan.fault=report loglevel={loglevel}{logbuf}")
    text, _ = boot(m, limit, who=f"{k.name} ({k.vmlinuz.name}), {o.smp} vCPUs, {o.mem} MiB, guest limit {limit}s")
    return judge_fuzz(text, k.name == "kcsan")


def judge_fuzz(text, kcsan=False, prog="boot"):
    lines = console.clean_lines(text)
    for line in map(console.shown, lines):
        if re.match(r"^(== |ok |skip |FAIL|ntsync-|guest-abuse|  |[0-9]+ passed)", line):
            print(line)
    rc = 0 if console.mark(console.marks(text), "guest-abuse-exit") == "0" else 1
    if kcsan:
        ours, via, own = gates.kcsan_reports(lines)
        for label, heads in (("ntsync", ours), ("kernel's own, reached through ntsync", via), ("kernel's own", own)):
            for h in sorted(set(heads)):
                print(f"{heads.count(h):7d} {label}: {h}")
        say(f"KCSAN reports: {len(ours) + len(via) + len(own)}; in ntsync's code: {len(ours)}; "
            f"the kernel's own, reached through ntsync: {len(via)}")
        if ours:
            say(f"{prog}: KCSAN reported a data race in ntsync's code (above; whole report in the console log)")
            rc = 1
    if kernel_log_problems(lines, kcsan=kcsan):
        say(f"{prog}: the kernel log shows a report (above)")
        rc = 1
    return rc


# ------------------------------------------------------------------ upstream

def upstream_series():
    """upstream/'s patches in order, without the cover letter."""
    return sorted(p for p in (REPO / "upstream").glob("[0-9][0-9][0-9][0-9]-*.patch")
                  if p.name != "0000-cover-letter.patch")


def new_cases(series):
    """The selftest cases the series adds (its `+TEST(name)` lines): each must fail unpatched."""
    return tuple(m for p in series for m in re.findall(r"^\+TEST\((\w+)\)$", p.read_text(), re.M))


UPSTREAM_FILES = ("drivers/misc/ntsync.c", "tools/testing/selftests/drivers/ntsync/ntsync.c",
                  "tools/testing/selftests/kselftest_harness.h", "tools/testing/selftests/kselftest.h")


def mainline_source():
    """drivers/misc/ntsync.c and its selftest from Debian's linux-source-7.3, fetched once."""
    src = cache() / "upstream" / "linux-source-7.3"
    if (src / ".complete").exists():
        return src
    apt_dir = cache() / "upstream" / "apt"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    say("fetching linux-source-7.3 (about 170 MB, once)")
    apt = roots.Apt(apt_dir, [f"deb {MIRROR} trixie-backports main"])
    apt.download(["linux-source-7.3"])
    deb = next((apt_dir / "dl").glob("linux-source-7.3_*.deb"))
    members = [f"linux-source-7.3/{f}" for f in UPSTREAM_FILES]
    tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    inner = subprocess.Popen(["tar", "-xO", "./usr/src/linux-source-7.3.tar.xz"], stdin=tar.stdout,
                             stdout=subprocess.PIPE)
    subprocess.run(["tar", "-xJ", "-C", str(src), "--strip-components=1", *members], stdin=inner.stdout, check=True)
    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True, text=True).stdout
    (src / ".version").write_text(version)
    shutil.rmtree(apt_dir, ignore_errors=True)
    (src / ".complete").write_text("")
    return src


def job_upstream(o, work):
    series = upstream_series()
    if not series:
        raise Usage("no patches in upstream/")
    if suites.resolve(o.kernel) != o.job.default:
        raise Usage(f"--job upstream boots the 7.3 kernel: use {o.job.default}")
    if o.arch.name != roots.native_arch().name:
        raise Usage(f"--job upstream builds mainline's driver and the selftest in a kernel root of the host's "
                    f"architecture; not for {o.arch.name}")
    k = Kernel(o.job.default, "7.3*", arch=o.arch)
    src = mainline_source()
    say(f"mainline ntsync from linux-source-7.3 {(src / '.version').read_text().strip()}, kernel {k.release}")
    files = {}
    for v in ("unpatched", "patched"):
        tree = work / v
        for f in UPSTREAM_FILES:
            (tree / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / f, tree / f)
        if v == "patched":
            for p in series:
                with open(p) as pf:
                    if subprocess.run(["patch", "-s", "-p1", "-d", str(tree)], stdin=pf).returncode:
                        raise Failed(f"{p.name} does not apply to linux-source-7.3")
        build = f"/tmp/ntsync-upstream-{v}"
        host_build = Path(str(k.root) + build)
        roots.safe_rm(host_build)
        host_build.mkdir(parents=True)
        shutil.copy2(tree / "drivers/misc/ntsync.c", host_build)
        (host_build / "Kbuild").write_text("obj-m := ntsync.o\n")
        logf = work / f"build-{v}.log"
        with open(logf, "w") as lf:
            r = roots.in_root(k.root, ["make", "-s", "-C", k.kdir, f"M={build}", "modules"],
                              stdout=lf, stderr=subprocess.STDOUT)
        if r.returncode:
            print(logf.read_text(errors="replace"), end="")
            raise Failed(f"building the {v} driver failed")
        shutil.copy2(host_build / "ntsync.ko", work / f"ntsync-{v}.ko")
        files[f"ntsync-{v}.ko"] = work / f"ntsync-{v}.ko"
        roots.safe_rm(host_build)
    # the selftest with the series' new cases judges both drivers; built in the kernel root
    # with its compiler (no host compiler involved)
    sel = Path(str(k.root) + "/tmp/ntsync-selftest")
    roots.safe_rm(sel)
    shutil.copytree(work / "patched/tools/testing/selftests", sel / "selftests")
    shutil.copytree(REPO / "include/uapi", sel / "uapi")
    logf = work / "selftest-build.log"
    with open(logf, "w") as lf:
        r = roots.in_root(k.root, ["sh", "-c", "cc=$(ls /usr/bin/gcc-[0-9]* | sort -V | tail -n 1) && "
                                   "$cc -O2 -static -pthread -I /tmp/ntsync-selftest/uapi "
                                   "-I /tmp/ntsync-selftest/selftests "
                                   "-o /tmp/ntsync-selftest/ntsync-selftest "
                                   "/tmp/ntsync-selftest/selftests/drivers/ntsync/ntsync.c"],
                          stdout=lf, stderr=subprocess.STDOUT)
    if r.returncode:
        print(logf.read_text(errors="replace"), end="")
        raise Failed("building the selftest failed")
    shutil.copy2(sel / "ntsync-selftest", work / "ntsync-selftest")
    roots.safe_rm(sel)
    files["bin/ntsync-selftest"] = work / "ntsync-selftest"
    bins = static.build([o.arch.debian_arch]) / o.arch.debian_arch
    for t in sorted(bins.glob("test-*")):
        files[f"bin/{t.name}"] = t
    # test-diff finds its recorded reference next to itself
    files["bin/differential-7.3.txt"] = bins / "differential-7.3.txt"
    k.initramfs(work / "initrd.gz", *init_files(o.job, files))
    m = qemu.Machine(console=log_path("upstream-check.log"), arch=o.arch, name="ntsync-boot-upstream", mem=1024,
                     smp=2, kernel=k.vmlinuz, initrd=work / "initrd.gz", rng=False,
                     append=f"{o.console()} panic=-1 oops=panic quiet")
    text, _ = boot(m, console.timeout_for("boot", o.job.timeout), who=k.release)
    return judge_upstream(text)


def judge_upstream(text, prog="upstream"):
    lines = console.clean_lines(text)
    marks = console.marks(text)
    if not any(k == "end" for k, _ in marks):
        raise Failure(f"the guest did not finish; see {log_path('upstream-check.log')}")
    rc = 0
    for v in ("unpatched", "patched"):
        self_lines = console.between(lines, f"selftest-begin {v}", f"selftest-end {v}")
        s_ok = sum(1 for x in self_lines if x.startswith("ok "))
        s_fail = sum(1 for x in self_lines if x.startswith("not ok "))
        failed = [m.group(1) for x in self_lines for m in [re.match(r"^not ok \d+ [^.]*\.([a-z_0-9]*)", x)] if m]
        suite_lines, inside = [], False
        for x in lines:
            mk = console.parse_mark(x)
            if mk and mk[0] == "suite-group" and mk[1].startswith(f"{v} "):
                inside = True
            elif mk and mk[0] == "suite-exit" and mk[1].startswith(f"{v} "):
                inside = False
            elif inside:
                suite_lines.append(x)

        def total(label):
            rx = re.compile(rf"^\[  {label} *\] (\d+) test")
            return sum(int(m.group(1)) for x in suite_lines for m in [rx.match(x)] if m)
        u_pass, u_fail, u_skip = total("PASSED"), total("FAILED"), total("SKIPPED")
        print(f"{v}: selftest {s_ok} passed, {s_fail} failed{' (' + ' '.join(failed) + ')' if failed else ''}; "
              f"suite (NTSYNC_STRICT=1) {u_pass} passed, {u_fail} failed, {u_skip} skipped")
        if v == "patched":
            if s_fail or not s_ok or u_fail:
                say(f"{prog}: the patched driver must pass everything")
                rc = 1
        else:
            for c in new_cases(upstream_series()):
                if c not in failed:
                    say(f"{prog}: new case {c} passed on the unpatched driver")
                    rc = 1
        if (("rmmod", f"{v} ok")) not in marks:
            say(f"{prog}: rmmod of the {v} driver failed")
            rc = 1
    rc |= judge_taint(marks, prog)
    if kernel_log_problems(lines):
        say(f"{prog}: kernel log shows a report (above)")
        rc = 1
    if rc == 0:
        print(f"{prog}: ok: the new cases fail without the series and everything passes with it")
    return rc


# ------------------------------------------------------------------ command line

# The host side of each initramfs row of the job table; a row without one is booted as the
# smoke job is (the module, the architecture's static programs, its /init judged the same).
RUNNERS = {"fuzz": lambda o, w: job_fuzz(o, w), "suite": lambda o, w: job_suite(o, w),
           "upstream": lambda o, w: job_upstream(o, w)}


def whole(v):
    if not re.fullmatch(r"[0-9]+", v):
        raise argparse.ArgumentTypeError(f"'{v}' is not a whole number")
    return int(v)


def from_args(argv):
    """The BootRequest of `ntsync-vm boot`'s command line ARGV."""
    rest = []
    if "--" in argv:
        i = argv.index("--")
        argv, rest = argv[:i], argv[i + 1:]
    boot_jobs = jobs.of_kind("initramfs", cli_only=True)
    ap = argparse.ArgumentParser(prog="ntsync-vm boot", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1] + "\njobs (default kernel):\n" + "\n".join(
                                     f"  {j.name:<10}({suites.default_for(j)}) {j.help}" for j in boot_jobs))
    ap.add_argument("kernel", nargs="?", help=f"{suites.describe()}, or for fuzz debug or kcsan")
    ap.add_argument("--job", choices=[j.name for j in boot_jobs], required=True)
    ap.add_argument("--arch", default=arches.DEFAULT, metavar="ARCH",
                    help=f"the guest's architecture: {', '.join(arches.guest_names())} (default {arches.DEFAULT}; "
                    "the table's others are built for by kbuild, not booted)")
    ap.add_argument("--in-tree", action="store_true", help="smoke, fuzz: load the kernel's own ntsync.ko (7.x)")
    ap.add_argument("--seconds", type=whole, default=600, help="fuzz: fuzzing time for guest-abuse.sh (600)")
    ap.add_argument("--cycles", type=whole, help="fuzz: create/close cycles (1000000; 20000 on debug/kcsan)")
    ap.add_argument("--seed", type=whole, help="fuzz: the fuzzers' seed")
    ap.add_argument("--smp", type=whole, default=2, help="fuzz: vCPUs (2)")
    ap.add_argument("--mem", type=whole, default=2048, help="fuzz: MiB (2048)")
    ap.add_argument("--suite", action="store_true", help="fuzz: also run the conformance suite (64-bit, compat) first")
    ap.add_argument("--linearize", type=whole, default=120, help="fuzz: seconds of ntsync-linearize (120)")
    ap.add_argument("--linearize-only", action="store_true", help="fuzz: only the linearizability phase")
    ap.add_argument("--concurrent", type=whole, metavar="SECONDS",
                    help="fuzz: seconds of the 64-bit concurrent fuzzer instead of its 40%% of --seconds")
    ap.add_argument("--memcg", type=whole, default=0, metavar="SECONDS",
                    help="fuzz: then SECONDS of the concurrent fuzzer in a memory cgroup at its limit (0: not run)")
    ap.add_argument("--module-src", metavar="DIR", help="smoke, suite, bench, fuzz: build the module from DIR "
                    "(module/, include/uapi/, VERSION) instead of this tree (the programs stay this tree's)")
    o = ap.parse_args(argv)
    job = jobs.get(o.job, "initramfs")
    if rest and job.name != "bench":
        raise Usage(f"'-- {' '.join(rest)}': only --job bench takes arguments (for ntsync-bench)")
    kernel = o.kernel or suites.default_for(job)
    if kernel in DEBUG_FLAVOURS and job.name != "fuzz":
        raise Usage(f"kernel {kernel}: only --job fuzz boots the debug kernels")
    if kernel not in DEBUG_FLAVOURS:
        kernel = suites.resolve(kernel)
    src = None
    if o.module_src:
        if o.in_tree:
            raise Usage("--in-tree and --module-src exclude each other")
        if job.name in ("coverage", "upstream"):
            raise Usage(f"--module-src: --job {job.name} builds its own modules; use smoke, suite, bench or fuzz")
        src = Path(o.module_src).resolve()
        if not ((src / "module/Makefile").is_file() and (src / "include/uapi/linux/ntsync.h").is_file()):
            raise Usage(f"--module-src {o.module_src}: no module/Makefile or include/uapi/linux/ntsync.h there")
    return BootRequest(job=job, kernel=kernel, arch=arches.for_guests(o.arch), in_tree=o.in_tree,
                       seconds=o.seconds,
                       cycles=o.cycles, seed=o.seed, smp=o.smp, mem=o.mem, suite=o.suite, linearize=o.linearize,
                       linearize_only=o.linearize_only, concurrent=o.concurrent, memcg=o.memcg, module_src=src,
                       rest=tuple(rest))


def main(argv):
    o = from_args(argv)
    require_root("boot (the module is built in a chroot)")
    ensure_host_tools([o.arch.qemu.binary, "busybox", "unshare"])
    with tempfile.TemporaryDirectory(prefix="ntsync-boot-") as work:
        return RUNNERS.get(o.job.name, job_smoke)(o, Path(work))
