"""`ntsync-vm lifecycle [--suite S]`: the package tests of debian/tests/ (autopkgtest form:
debian/tests/control) in a cloud guest of the suite with this tree's .debs, the guest as the
testbed (isolation-machine, needs-root, needs-reboot, needs-internet through QEMU's user
network). By default the previous version (--old-version 0.9.0) is installed first, so the
packages under test arrive as an upgrade. vm/guest/autopkgtest.sh runs the tests in the guest;
the host reads the console, applies tests/kernel-log-gates and the taint rule, and prints one
line per check and test and then 'N passed, N failed, N skipped'. Exit 0 iff nothing failed."""

import argparse
import dataclasses
import io
import re
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

from . import arches, console, gates, jobs, qemu, suites
from . import run as run_mod
from .artifacts import make_seed
from .cloud import build_debs
from .image import find_image, kernel_cmdline
from .util import REPO, Failure, Usage, cache, ensure_host_tools, require_root, run, say, source_files, \
    tail_text, tree_hash

SUPPORTED = {"allow-stderr", "breaks-testbed", "isolation-machine", "isolation-container", "needs-reboot",
             "needs-root", "needs-internet", "skippable", "rw-build-tree", "superficial"}
KERNEL_LINE = re.compile(r"\[\s*\d+\.\d+\]")


def parse_control(path):
    """[(test name, set of restrictions)] of an autopkgtest control file."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise Usage(f"{path}: {e}; the package tests are debian/tests/control (autopkgtest)")
    tests = []
    for n, stanza in enumerate(re.split(r"\n\s*\n", text), 1):
        fields, key = {}, None
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0] in " \t" and key:
                fields[key] += " " + line.strip()
                continue
            key, _, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        if not fields:
            continue
        if "tests" not in fields:
            raise Usage(f"{path}: stanza {n} has no Tests: field (Test-Command is not supported here)")
        restrictions = {r for r in re.split(r"[\s,]+", fields.get("restrictions", "")) if r}
        unknown = restrictions - SUPPORTED
        if unknown:
            raise Usage(f"{path}: stanza {n}: restriction(s) {', '.join(sorted(unknown))} not supported by "
                        "vm/ntsync-vm lifecycle")
        for name in re.split(r"[\s,]+", fields["tests"]):
            if name:
                if not (Path(path).parent / name).is_file():
                    raise Usage(f"{path}: test {name} has no file debian/tests/{name}")
                tests.append((name, restrictions))
    if not tests:
        raise Usage(f"{path}: no tests in it")
    return tests


def old_debs(version):
    """Our packages as version VERSION (debian/build-debs --version), cached by tree."""
    files = [f for f in source_files() if not f.startswith(("vm/", ".ci/")) and f not in ("README.md", "check")]
    out = cache() / "vm-debs-old" / f"{version}-{tree_hash(files)}"
    if (out / "ok").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    logf = out.parent / f"{out.name}.log"
    say(f"building version {version} of the packages (log {logf})")
    with open(logf, "w") as lf:
        r = subprocess.run(["bash", str(REPO / "debian/build-debs"), "--version", version, "--out", str(out)],
                           stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if r.returncode or not list(out.glob("ntsync-dkms_*.deb")):
        raise Failure(f"building version {version} failed; last lines of {logf}:\n{tail_text(logf, 15)}")
    (out / "ok").write_text("")
    for old in sorted(out.parent.iterdir(), key=lambda p: p.stat().st_mtime)[:-4]:
        if old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return out


def make_input(path, tests, new, old):
    with tarfile.open(path, "w") as tf:
        tf.add(jobs.get("lifecycle", "testbed").script, "autopkgtest.sh")
        tf.add(REPO / "debian/tests", "src/debian/tests")
        plan = "".join(f"{name} {','.join(sorted(r)) or '-'}\n" for name, r in tests).encode()
        ti = tarfile.TarInfo("plan")
        ti.size, ti.mode, ti.mtime = len(plan), 0o644, int(time.time())
        tf.addfile(ti, io.BytesIO(plan))
        for d in new:
            tf.add(d, f"debs/new/{d.name}")
        for d in old:
            tf.add(d, f"debs/old/{d.name}")
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.truncate(-(-size // 2**20) * 2**20)


def judge(text, tests):
    """(lines to print, passed, failed, skipped) from the console of a lifecycle run."""
    out, passed, failed, skipped = [], 0, 0, 0
    fails_of = {}
    results = {}
    taint, done = None, False
    for key, rest in console.marks(text):
        msg = f"{key} {rest}".rstrip()
        if msg.startswith("| "):
            name, _, line = msg[2:].partition(" ")
            out.append(f"  {name}: {line}")
            if re.match(r"^(PASS|FAIL) \S+", line):
                if line.startswith("PASS"):
                    passed += 1
                else:
                    failed += 1
                    fails_of[name] = fails_of.get(name, 0) + 1
        elif msg.startswith("result "):
            _, name, verdict, *detail = msg.split(" ")
            results[name] = verdict
            out.append(f"{verdict} test {name}: {' '.join(detail)}")
            if verdict == "SKIP":
                skipped += 1
            elif verdict == "FAIL" and not fails_of.get(name):
                failed += 1  # a test that failed without a FAIL line of its own
        elif msg.startswith("taint "):
            taint = int(msg.split()[1]) if msg.split()[1].isdigit() else None
        elif msg == "done":
            done = True
    for name, _ in tests:
        if name not in results:
            out.append(f"FAIL test {name}: no result (the guest stopped before it ended)")
            failed += 1
    if not done:
        out.append("FAIL the guest did not reach the end of the plan")
        failed += 1
    kernel = [line for line in text.replace("\r", "").split("\n") if KERNEL_LINE.match(line)]
    for p in gates.judge(kernel):
        out.append(f"FAIL kernel log: {p}")
        failed += 1
    if taint is None:
        if done:
            out.append("FAIL no taint state came back from the guest")
            failed += 1
    else:
        bad = gates.taint_problem(taint)
        if bad:
            out.append(f"FAIL {bad}")
            failed += 1
        else:
            out.append(f"PASS kernel taint {taint} (nothing beyond O/E)")
            passed += 1
    return out, passed, failed, skipped


@dataclasses.dataclass(frozen=True)
class Request:
    """One lifecycle run: the only input of run_lifecycle() (from_args builds it)."""
    suite: str
    tests: tuple                       # ((name, restrictions), ...) of debian/tests/control
    arch: arches.Arch = dataclasses.field(default_factory=arches.get)
    debs: Path = None                  # the packages under test (None: built from this tree)
    old: Path = None                   # the previous version's packages (None: built, OLD_VERSION)
    old_version: str = "0.9.0"         # 'none': a fresh install, no upgrade
    timeout: int = 3600                # seconds for the whole guest run


@dataclasses.dataclass(frozen=True)
class Result:
    """What a lifecycle run gave: the only output of run_lifecycle()."""
    lines: tuple
    passed: int
    failed: int
    skipped: int
    console: Path
    seconds: float


def from_args(argv):
    job = jobs.get("lifecycle", "testbed")
    ap = argparse.ArgumentParser(prog="ntsync-vm lifecycle", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--suite", default=suites.default_for(job),
                    help=f"{suites.describe(image_only=True)} (default {suites.default_for(job)})")
    ap.add_argument("--debs", metavar="DIR", help="the packages under test (default: built from this tree)")
    ap.add_argument("--old", metavar="DIR", help="the previous version's packages (default: built, --old-version)")
    ap.add_argument("--old-version", default="0.9.0", help="version of the previous packages (0.9.0); "
                    "'none': a fresh install, no upgrade")
    ap.add_argument("--test", action="append", default=[], help="run only this test (repeatable)")
    ap.add_argument("--timeout", type=int, default=job.timeout // 60,
                    help=f"minutes for the whole guest run ({job.timeout // 60})")
    ap.add_argument("--arch", default=arches.DEFAULT, metavar="ARCH",
                    help=f"the guest's architecture: {', '.join(arches.guest_names('cloud'))} "
                    f"(default {arches.DEFAULT}; "
                    "the table's others: initramfs guests (ntsync-vm boot --arch) or kbuild only)")
    o = ap.parse_args(argv)
    suite = suites.resolve(o.suite, image_only=True)
    if o.timeout < 1:
        raise Usage(f"--timeout wants minutes, not {o.timeout}")
    tests = parse_control(REPO / "debian/tests/control")
    if o.test:
        unknown = set(o.test) - {n for n, _ in tests}
        if unknown:
            raise Usage(f"--test {', '.join(sorted(unknown))}: not in debian/tests/control "
                        f"({', '.join(n for n, _ in tests)})")
        tests = [t for t in tests if t[0] in o.test]
    for opt, d in (("--debs", o.debs), ("--old", o.old)):
        if d and not Path(d).is_dir():
            raise Usage(f"{opt} {d}: not a folder")
    return Request(suite=suite, tests=tuple(tests), arch=arches.for_guests(o.arch, "cloud"),
                   debs=Path(o.debs) if o.debs else None,
                   old=Path(o.old) if o.old else None, old_version=o.old_version, timeout=o.timeout * 60)


def run_lifecycle(req):
    """The package tests of REQ in one cloud guest, judged: a Result."""
    arch, suite, tests = req.arch, req.suite, req.tests
    require_root("lifecycle (the guest image is built as root)")
    ensure_host_tools([arch.qemu.binary, "qemu-img", "cloud-localds"])
    if req.debs:
        new = sorted(p for p in req.debs.glob("*.deb") if "-dbgsym_" not in p.name)
        if not new:
            raise Usage(f"--debs {req.debs}: no .deb files there")
    else:
        new = build_debs()
    old = []
    if req.old:
        old = sorted(req.old.glob("*.deb"))
        if not any(p.name.startswith("ntsync-dkms_") for p in old):
            raise Usage(f"--old {req.old}: no ntsync-dkms_*.deb there")
    elif req.old_version != "none":
        old = sorted(p for p in old_debs(req.old_version).glob("*.deb") if "-dbgsym_" not in p.name)
    paths, info = find_image(suite, arch=arch)
    work = cache() / "lifecycle" / f"{suite}-{time.strftime('%Y%m%d-%H%M%S')}"
    work.mkdir(parents=True)
    for oldrun in sorted(work.parent.iterdir())[:-6]:
        shutil.rmtree(oldrun, ignore_errors=True)
    make_input(work / "in.tar", tests, new, old)
    seed = make_seed(work, f"lc-{suite}", serial="apt-in", script="autopkgtest.sh", instance="lc")
    overlay = work / "disk.qcow2"
    run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(paths["disk"]), "-F", "qcow2", str(overlay)])
    console = work / "console.log"
    # No -no-reboot: needs-reboot tests reboot the guest and QEMU boots the same kernel again.
    m = qemu.Machine(console=console, arch=arch, name=f"lifecycle-{suite}", mem=2048, smp=2, net=True,
                     no_reboot=False, kernel=paths["kernel"], initrd=paths["initrd"], append=kernel_cmdline(arch),
                     nice=10,
                     drives=[qemu.Drive(str(overlay), "qcow2", bootindex=1, opts="cache=unsafe"),
                             qemu.Drive(str(seed), readonly=True),
                             qemu.Drive(str(work / "in.tar"), serial="apt-in", readonly=True)])
    say(f"{len(tests)} test(s) ({', '.join(n for n, _ in tests)}) on {suite} ({info.get('kernel_release')}), "
        f"{len(new)} debs" + (f", upgrading from {len(old)} older debs" if old else "") + f"; console {console}")
    r = run_mod.guest(m, run_mod.Watch(req.timeout), kernels=[paths["kernel"]])
    say(f"guest ran {r.seconds:.0f} s" + (" and hit its time-out" if r.stalled else ""))
    overlay.unlink(missing_ok=True)
    lines, passed, failed, skipped = judge(console.read_text(errors="replace"), tests)
    return Result(tuple(lines), passed, failed, skipped, console, r.seconds)


def main(argv):
    res = run_lifecycle(from_args(argv))
    print("\n".join(res.lines))
    print(f"{res.passed} passed, {res.failed} failed, {res.skipped} skipped")
    return 0 if res.failed == 0 else 1
