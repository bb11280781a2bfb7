"""`ntsync-vm lifecycle [--suite S]`: the package tests of debian/tests/ (autopkgtest form:
debian/tests/control) in a cloud guest of the suite with this tree's packages from the signed
apt repository (repo.py; added to the guest's sources as a user adds it), the guest as the
testbed (isolation-machine, needs-root, needs-reboot, needs-internet through QEMU's user
network). By default the previous version (--old-version 0.9.0) is installed first, so the
packages under test arrive as an upgrade. vm/guest/autopkgtest.sh runs the tests in the guest;
the host reads the console, applies tests/kernel-log-gates and the taint rule, and prints one
line per check and test and then 'N passed, N failed, N skipped'. Exit 0 iff nothing failed.

`ntsync-vm lifecycle --scenario NAME|all`: instead, scenarios of a Debian machine's life
(the job table's rows of kind 'scenario', jobs.py), each a cloud guest that boots from its disk
through GRUB and lives the scenario step by step across reboots (vm/guest/scenario.sh runs
vm/guest/scenarios/NAME.sh), our packages coming from the signed apt repository (repo.py);
one line per check, then one table: scenario, suite, kernels booted, checks, verdict, time."""

import argparse
import dataclasses
import functools
import io
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from . import arches, console, gates, jobs, qemu, repo, roots, suites
from . import run as run_mod
from .artifacts import make_seed
from .cloud import build_debs
from .image import find_image, kernel_cmdline
from .util import REPO, Failure, Usage, cache, ensure_host_tools, fmt_secs, repo_version, require_root, run, \
    say, source_files, tail_text, tree_hash

SUPPORTED = {"allow-stderr", "breaks-testbed", "isolation-machine", "isolation-container", "needs-reboot",
             "needs-root", "needs-internet", "skippable", "rw-build-tree", "superficial"}
KERNEL_LINE = re.compile(r"\[\s*\d+\.\d+\]")


def judge_kernel(text, taint, done, out):
    """The kernel-log gates on the console TEXT and the taint rule on TAINT (None: none came
    back, a failure only if the guest got to its end, DONE), as lines appended to OUT;
    (passed, failed)."""
    passed = failed = 0
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
    return passed, failed


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


def make_input(path, tests, repo_dir, suite, old):
    """The package tests' input: the runner, debian/tests, the plan, the new packages as the
    signed repository REPO_DIR (of SUITE), the older version's packages OLD."""
    with tarfile.open(path, "w") as tf:
        tf.add(jobs.get("lifecycle", "testbed").script, "autopkgtest.sh")
        tf.add(REPO / "debian/tests", "src/debian/tests")
        for name, text in (("plan", "".join(f"{name} {','.join(sorted(r)) or '-'}\n" for name, r in tests)),
                           ("REPO_SUITE", suite + "\n")):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(text.encode()), 0o644, int(time.time())
            tf.addfile(ti, io.BytesIO(text.encode()))
        tf.add(repo_dir, "repo")
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
    p, f = judge_kernel(text, taint, done, out)
    passed += p
    failed += f
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
    scenarios: tuple = ()              # jobs.Job rows of kind 'scenario': run these instead
    suite_given: bool = False          # --suite named (else each scenario's own default suite)


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
    names = [j.name for j in jobs.of_kind("scenario")]
    ap.add_argument("--scenario", metavar="NAME", action="append", default=[],
                    help=f"run scenario NAME instead of the package tests ({', '.join(names)}; 'all': every "
                    "one, in this order; repeatable)")
    ap.add_argument("--timeout", type=int, default=None,
                    help=f"minutes for the whole guest run ({job.timeout // 60}; a scenario: its row's)")
    ap.add_argument("--arch", default=arches.DEFAULT, metavar="ARCH",
                    help=f"the guest's architecture: {', '.join(arches.guest_names('cloud'))} "
                    f"(default {arches.DEFAULT}; "
                    "the table's others: initramfs guests (ntsync-vm boot --arch) or kbuild only)")
    o = ap.parse_args(argv)
    suite = suites.resolve(o.suite, image_only=True)
    if o.timeout is not None and o.timeout < 1:
        raise Usage(f"--timeout wants minutes, not {o.timeout}")
    if o.scenario:
        if o.test or o.old or o.old_version != "0.9.0":
            raise Usage("--scenario: --test, --old and --old-version are options of the package tests")
        wanted = names if "all" in o.scenario else o.scenario
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise Usage(f"--scenario {', '.join(unknown)}: no such scenario; use one of {', '.join(names)} or all")
        if o.debs and not Path(o.debs).is_dir():
            raise Usage(f"--debs {o.debs}: not a folder")
        rows = tuple(j for j in jobs.of_kind("scenario") if j.name in wanted)
        suite_given = "--suite" in argv or any(a.startswith("--suite=") for a in argv)
        moving = [j.name for j in rows if "next-release" in j.needs]
        if suite_given and moving and (suites.SUITES[suite].release not in NEXT_RELEASE or suites.SUITES[suite].pin):
            raise Usage(f"--scenario {', '.join(moving)} moves {' or '.join(NEXT_RELEASE)} to the next release, "
                        f"not {suite}: leave --suite out (its default) or use --suite {next(iter(NEXT_RELEASE))}")
        return Request(suite=suite, tests=(), arch=arches.for_guests(o.arch),
                       debs=Path(o.debs) if o.debs else None, scenarios=rows,
                       suite_given=suite_given,
                       timeout=o.timeout * 60 if o.timeout else None)
    o.timeout = o.timeout or job.timeout // 60
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
    ensure_host_tools([arch.qemu.binary, "qemu-img", "cloud-localds", "gpg", "apt-ftparchive"])
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
    make_input(work / "in.tar", tests, repo.build(work / "repo", new, [suite], [arch.debian_arch]), suite, old)
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


# ------------------------------------------------------------------ the scenarios

NEXT_RELEASE = {"bookworm": "trixie"}   # the release upgrade a scenario lives: from -> to
NEXT_SUFFIX = "+test1"   # the newer version a scenario upgrades to: VERSION+test1, built from this tree


@dataclasses.dataclass(frozen=True)
class ScenarioResult:
    """What one scenario's guest gave: its checks judged, for the table."""
    name: str
    suite: str
    kernels: tuple      # the kernel releases its steps ran on, in order, without repeats
    lines: tuple
    passed: int
    failed: int
    seconds: float
    console: Path
    error: str = ""     # the run could not be judged (infrastructure): why

    @property
    def verdict(self):
        return "ERROR" if self.error else "PASS" if self.failed == 0 and self.passed else "FAIL"


class ScenarioWatch(run_mod.Watch):
    """The whole run within TIMEOUT; each step and FAIL shown as it comes."""

    def line(self, line, mark, now):
        if mark and mark[0] == "step":
            say(f"  step {mark[1]} (after {fmt_secs(now - self.t0)})")
        elif mark and mark[0] == "check" and mark[1].startswith("FAIL"):
            say(f"  {mark[1]}")
        return None


def judge_scenario(text):
    """(lines, passed, failed, kernels) of the console TEXT of a scenario's guest."""
    out, passed, failed, kernels = [], 0, 0, []
    taint, done = None, False
    for key, rest in console.marks(text):
        if key == "step":
            name, _, krel = rest.partition(" ")
            out.append(f"step {name} on {krel or '?'}")
            if krel and (not kernels or kernels[-1] != krel):
                kernels.append(krel)
        elif key == "check":
            verdict, _, detail = rest.partition(" ")
            out.append(f"  {verdict} {detail}")
            if verdict == "PASS":
                passed += 1
            else:
                failed += 1
        elif key == "|":
            out.append(f"    | {rest}")
        elif key == "taint":
            taint = int(rest) if rest.isdigit() else None
        elif key == "done":
            done = True
    if not done:
        out.append("FAIL the guest did not reach the end of the scenario")
        failed += 1
    p, f = judge_kernel(text, taint, done, out)
    passed += p
    failed += f
    return out, passed, failed, kernels


def scenario_input(path, job, env, repos):
    """The scenario's input tar: the driver, the scenario as steps.sh, its helpers
    (vm/guest/scenarios/*.c), env, and the signed repositories REPOS {name: folder}."""
    with tarfile.open(path, "w") as tf:
        def add_text(name, text):
            data = text.encode()
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, int(time.time())
            tf.addfile(ti, io.BytesIO(data))
        tf.add(job.script.parent.parent / "scenario.sh", "scenario.sh")
        tf.add(job.script, "steps.sh")
        for helper in sorted(job.script.parent.glob("*.c")):
            tf.add(helper, helper.name)
        add_text("env", "".join(f"{k}={shlex.quote(str(v))}\n" for k, v in env.items()))
        for name, folder in repos.items():
            tf.add(folder, name)
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.truncate(-(-size // 2**20) * 2**20)


def run_scenario(req, job, debs, next_debs):
    """Scenario JOB in one cloud guest booted from its disk: a ScenarioResult."""
    arch = req.arch
    suite = req.suite if req.suite_given else suites.default_for(job)
    paths, info = find_image(suite, arch=arch)
    work = cache() / "scenarios" / f"{job.name}-{suite}-{time.strftime('%Y%m%d-%H%M%S')}"
    work.mkdir(parents=True)
    for oldrun in sorted(work.parent.iterdir(), key=lambda p: p.stat().st_mtime)[:-12]:
        shutil.rmtree(oldrun, ignore_errors=True)
    spec = suites.SUITES[suite]
    env = {"SCENARIO": job.name, "SUITE": suite, "VERSION": repo_version(), "CONSOLE": arch.console,
           "NET": int("archive" in job.needs)}
    dists = [suite]
    if "next-release" in job.needs:
        # The release after SUITE's: the same packages in our repository for both, as a
        # user's repository has them, and the sources changed from one to the other.
        to = NEXT_RELEASE.get(spec.release)
        if not to or spec.pin:
            raise Usage(f"scenario {job.name} moves {', '.join(NEXT_RELEASE)} to the next release; "
                        f"{suite} is not one of those (use --suite {next(iter(NEXT_RELEASE))})")
        env["TO_SUITE"] = to
        dists.append(to)
    repos = {"repo": repo.build(work / "repo", debs, dists, [arch.debian_arch])}
    if "pinned-kernel" in job.needs:
        # A newer kernel of the same release from a pinned suite row (trixie-backports'
        # 7.x): its extra sources and packages, as the suite table says them.
        pinned = [s for s in suites.SUITES.values() if s.release == spec.release and s.pin]
        if not pinned:
            raise Usage(f"scenario {job.name}: the suite table has no pinned kernel for {suite} "
                        f"(a row of release {spec.release} with a pin, like trixie-backports)")
        env["KERNEL_SOURCES"] = "\n".join(x for x in pinned[0].sources if x not in spec.sources)
        env["KERNEL_PKGS"] = " ".join(pinned[0].kernel_packages(arch))
    if "older-kernel" in job.needs:
        env["KERNEL_META"] = " ".join(arch.kernel_packages())
        env["OLD_KERNEL_VERSION"] = older_kernel(spec, arch)
    if "next" in job.needs:
        repos["next"] = repo.build(work / "next", next_debs, [suite], [arch.debian_arch])
        env["NEXT_VERSION"] = repo_version() + NEXT_SUFFIX
    if "release" in job.needs:
        # The last release as its users have it: its own packages, built from its tag, in
        # a repository of their own (a repository keeps the newest version of a suite).
        tag, rel_version, commit = last_release()
        repos["release"] = repo.build(work / "release", release_debs(tag, rel_version, commit), [suite],
                                      [arch.debian_arch])
        env.update(RELEASE_TAG=tag, RELEASE_VERSION=rel_version)
    scenario_input(work / "in.tar", job, env, repos)
    seed = make_seed(work, f"scn-{job.name}", serial="scn-in", script="scenario.sh", instance="scn")
    overlay = work / "disk.qcow2"
    run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(paths["disk"]), "-F", "qcow2", str(overlay)])
    log_path = work / "console.log"
    # From the disk through GRUB (no -kernel): a reboot boots the kernel the scenario chose.
    m = qemu.Machine(console=log_path, arch=arch, name=f"scenario-{job.name}", mem=2048, smp=2,
                     net="archive" in job.needs, no_reboot=False, nice=10,
                     drives=[qemu.Drive(str(overlay), "qcow2", bootindex=1, opts="cache=unsafe"),
                             qemu.Drive(str(seed), readonly=True),
                             qemu.Drive(str(work / "in.tar"), serial="scn-in", readonly=True)])
    say(f"scenario {job.name} on {suite} ({info.get('kernel_release')}): {job.help}; console {log_path}")
    r = run_mod.guest(m, ScenarioWatch(req.timeout or job.timeout), kernels=[paths["kernel"]])
    say(f"guest ran {r.seconds:.0f} s" + (" and hit its time-out" if r.stalled else ""))
    overlay.unlink(missing_ok=True)
    lines, passed, failed, kernels = judge_scenario(log_path.read_text(errors="replace"))
    if r.stalled:
        lines.append(f"FAIL the scenario hit its time-out ({fmt_secs(req.timeout or job.timeout)})")
        failed += 1
    return ScenarioResult(job.name, suite, tuple(kernels), tuple(lines), passed, failed, r.seconds, log_path)


# How the project marks a release: an annotated tag vX.Y.Z on the commit whose VERSION
# and debian/changelog say X.Y.Z (README, "Releases").
RELEASE_TAG = re.compile(r"^v(\d+\.\d+\.\d+)$")
HOW_TO_TAG = ("a release is an annotated tag vX.Y.Z on the commit whose VERSION says X.Y.Z (README, "
              "'Releases'): fetch the tags (git fetch --tags) or make it (git tag -a vX.Y.Z COMMIT)")


def git(*args):
    """git in this tree: (exit status, stdout)."""
    try:
        r = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    except FileNotFoundError:
        raise Failure("git is missing (apt-get install git): the last release is built from its tag")
    return r.returncode, r.stdout.strip()


def last_release(version=None):
    """(tag, version, commit) of the newest release tag below VERSION (default this tree's)."""
    version = version or repo_version()
    rc, out = git("tag", "--list", "v*")
    if rc:
        raise Failure(f"{REPO} is not a git checkout: the last release is built from its git tag; "
                      "run from a clone (git clone fetches the tags reachable from its branch)")
    tags = [(t, m.group(1)) for t in out.split() if (m := RELEASE_TAG.match(t))]
    older = [(t, v) for t, v in tags if debian_vercmp(v, version) < 0]
    if not older:
        named = ", ".join(t for t, _ in tags) or "none"
        raise Failure(f"no release tag below {version} in this clone (tags: {named}); " + HOW_TO_TAG)
    tag, rel = max(older, key=functools.cmp_to_key(lambda a, b: debian_vercmp(a[1], b[1])))
    rc, commit = git("rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}")
    if rc:
        raise Failure(f"tag {tag} names no commit of this clone (a shallow clone?): git fetch --tags --unshallow")
    rc, said = git("show", f"{commit}:VERSION")
    if rc or said != rel:
        raise Failure(f"tag {tag} is on {commit[:12]}, whose VERSION says {said or 'nothing'}, not {rel}: "
                      + HOW_TO_TAG)
    return tag, rel, commit


def release_debs(tag, version, commit):
    """The packages of release TAG (VERSION, at COMMIT), built from the tag's own tree by
    that tree's debian/build-debs (`git archive` of the tag in a scratch folder; this tree's
    build-debs only when the tag's tree has none), cached by commit. The release's own tests
    ran when it was released: built with nocheck, on one core (guests share the host)."""
    out = cache() / "vm-debs-release" / f"{version}-{commit[:12]}"
    debs = sorted(p for p in out.glob("*.deb") if "-dbgsym_" not in p.name) if (out / "ok").exists() else []
    if debs:
        say(f"release {tag}: cached {out} ({len(debs)} debs)")
        return debs
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    logf = out.parent / f"{out.name}.log"
    with tempfile.TemporaryDirectory(prefix=f".src-{version}-", dir=out.parent) as tmp:
        src = Path(tmp) / f"ntsync-{version}"
        src.mkdir()
        rc, _ = git("archive", "--format=tar", "--output", str(Path(tmp) / "src.tar"), commit)
        if rc:
            raise Failure(f"git archive {tag} failed: its tree is not in this clone (git fetch --tags)")
        run(["tar", "-C", str(src), "-xf", str(Path(tmp) / "src.tar")])
        script = src / "debian/build-debs"
        how = f"{tag}'s own debian/build-debs"
        if not script.is_file():
            shutil.copy2(REPO / "debian/build-debs", script)
            how = f"this tree's debian/build-debs ({tag}'s tree has none)"
        say(f"release {tag} ({commit[:12]}): building its packages from its tree with {how} (log {logf})")
        env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=1")
        with open(logf, "w") as lf:
            try:
                r = subprocess.run(["bash", str(script), "--out", str(out)], stdout=lf, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env, timeout=1800)
            except subprocess.TimeoutExpired:
                raise Failure(f"building {tag} timed out after 30 min; see {logf}")
    debs = sorted(p for p in out.glob("*.deb") if "-dbgsym_" not in p.name)
    if r.returncode or not any(p.name.startswith(f"ntsync-dkms_{version}-") for p in debs):
        raise Failure(f"building {tag}'s packages failed; last lines of {logf}:\n{tail_text(logf, 15)}")
    (out / "ok").write_text(f"{tag} {commit} {how}\n")
    return debs


def older_kernel(spec, arch):
    """The version of SPEC's kernel meta-package before the newest the archive offers (the
    previous point release: trixie's 6.12.117-1 beside trixie-security's 6.12.118-1), asked of
    the archive with a private apt (roots.Apt)."""
    meta = arch.kernel_packages()[0]
    apt = roots.Apt(cache() / "scenarios" / f".apt-{spec.name}", spec.sources)
    versions = sorted({s["Version"] for s in apt.stanzas(meta) if s.get("Version")},
                      key=functools.cmp_to_key(debian_vercmp), reverse=True)
    shutil.rmtree(apt.dir, ignore_errors=True)
    if len(versions) < 2:
        raise Failure(f"the archive offers only {', '.join(versions) or 'no version'} of {meta} for "
                      f"{spec.name}: no previous point release to start from (snapshot.debian.org has "
                      "older ones; this scenario does not fetch from it yet)")
    say(f"{meta}: {', '.join(versions)} in the archive; the machine starts on {versions[1]}")
    return versions[1]


def debian_vercmp(a, b):
    """dpkg --compare-versions as a cmp function."""
    if a == b:
        return 0
    return -1 if subprocess.run(["dpkg", "--compare-versions", a, "lt", b]).returncode == 0 else 1


def scenario_table(results):
    """The one table of `lifecycle --scenario`."""
    head = ("scenario", "suite", "kernels booted", "checks", "verdict", "time")
    rows = [(r.name, r.suite, " -> ".join(r.kernels) or "-", f"{r.passed} passed, {r.failed} failed",
             r.verdict + (f": {r.error}" if r.error else ""), fmt_secs(r.seconds)) for r in results]
    widths = [max(len(str(x[i])) for x in (head, *rows)) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths))] + [fmt.format(*x) for x in rows])


def run_scenarios(req):
    """Every scenario of REQ, one guest each: [ScenarioResult]."""
    require_root("lifecycle --scenario (the guest image is built as root)")
    ensure_host_tools([req.arch.qemu.binary, "qemu-img", "cloud-localds", "gpg", "apt-ftparchive"])
    if req.debs:
        debs = sorted(p for p in req.debs.glob("*.deb") if "-dbgsym_" not in p.name)
        if not debs:
            raise Usage(f"--debs {req.debs}: no .deb files there")
    else:
        debs = build_debs()
    next_debs = None
    if any("next" in j.needs for j in req.scenarios):
        next_debs = sorted(p for p in old_debs(repo_version() + NEXT_SUFFIX).glob("*.deb")
                           if "-dbgsym_" not in p.name)
    results = []
    for job in req.scenarios:
        t = time.monotonic()
        try:
            res = run_scenario(req, job, debs, next_debs)
        except Failure as e:
            res = ScenarioResult(job.name, req.suite, (), (), 0, 0, time.monotonic() - t, None,
                                 error=str(e).splitlines()[0][:100])
        print(f"scenario {job.name}:\n" + "\n".join(res.lines), flush=True)
        results.append(res)
    return results


def main(argv):
    req = from_args(argv)
    if req.scenarios:
        results = run_scenarios(req)
        print(scenario_table(results))
        return 0 if all(r.verdict == "PASS" for r in results) else 1
    res = run_lifecycle(req)
    print("\n".join(res.lines))
    print(f"{res.passed} passed, {res.failed} failed, {res.skipped} skipped")
    return 0 if res.failed == 0 else 1
