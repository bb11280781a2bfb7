"""The cloud guest jobs of the job table (jobs.py: demo, test, bench, exec, shell, and those
other commands run) and the commands made of them (matrix, secure-boot, image): Debian cloud
images, our packages installed by apt.

A guest run has one input, a frozen Request (built once: from the command line by
Request.from_args, by `ntsync-vm wine`, by the matrix and the Secure Boot command with
dataclasses.replace), and one output, a Result. Errors are raised (util.Failure and its
kinds); only main() turns them into exit codes."""

import argparse
import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from typing import NamedTuple

from . import arches, artifacts, firmware, gates, jobs, lock, qemu, repo, roots, static, suites
from . import run as run_mod
from .console import STAGE_TIMEOUTS, SUMMARY, TESTLINE, boot_crash, tail, timeout_for
from .image import find_image, kernel_cmdline
from .util import REPO, Failure, Usage, cache, elapsed, ensure_host_tools, fmt_secs, log, repo_version, \
    run, source_files, tree_hash


def build_debs(arch=None):
    """Our packages from this tree (debian/build-debs, i.e. dpkg-buildpackage -us -uc -b).
    Cached under $NTSYNC_CACHE/vm-debs/HASH, HASH being that of the files that go into them.
    ARCH (a row of arches.py) other than the host's: the architecture-independent packages of
    the host's build and the architecture-dependent ones cross-built for ARCH (cross_debs)."""
    if arch is not None and arch.debian_arch != roots.native_arch().debian_arch:
        return sorted([d for d in build_debs() if d.name.endswith("_all.deb")] + cross_debs(arch),
                      key=lambda d: d.name)
    if not (REPO / "debian/control").exists():
        raise Failure("debian/control is missing: the packages cannot be built from this tree")
    files = [f for f in source_files() if not f.startswith(("vm/", ".ci/")) and f not in ("README.md", "check")]
    key = tree_hash(files)
    out = cache() / "vm-debs" / key
    debs = sorted(out.glob("*.deb")) if (out / "ok").exists() else []
    if debs:
        log(f"packages: cached {out} ({len(debs)} debs)")
        return debs
    ensure_host_tools(["dpkg-buildpackage"])
    t = time.monotonic()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    logf = out.parent / f"build-{key}.log"
    if not (REPO / "debian/build-debs").exists():
        raise Failure("debian/build-debs is missing; it builds the packages (dpkg-buildpackage -us -uc -b)")
    cmd = ["bash", str(REPO / "debian/build-debs"), "--out", str(out)]
    log(f"packages: building with {shlex.join(cmd[1:])} (log {logf})")
    with open(logf, "w") as lf:
        try:
            r = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=1800)
        except subprocess.TimeoutExpired:
            raise Failure(f"building the packages timed out after 30 min; see {logf}")
    if r.returncode != 0:
        tail_lines = logf.read_text(errors="replace").splitlines()[-20:]
        raise Failure(f"building the packages failed; last lines of {logf}:\n  " + "\n  ".join(tail_lines))
    debs = sorted(out.glob("*.deb"))
    if not debs:
        raise Failure(f"building the packages made no .deb files; see {logf}")
    (out / "ok").write_text("")
    builds = sorted((p for p in (cache() / "vm-debs").iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in builds[:-4]:
        shutil.rmtree(old, ignore_errors=True)
    log(f"packages: {len(debs)} debs in {fmt_secs(time.monotonic() - t)}: " + " ".join(d.name for d in debs))
    return debs


def cross_debs(arch):
    """The architecture-dependent packages of this tree cross-built for ARCH in its cross build
    root (roots.deb_cross_root: dpkg-buildpackage -a ARCH through debian/build-debs --host-arch),
    cached under $NTSYNC_CACHE/vm-debs/HASH-ARCH like the host's."""
    files = [f for f in source_files() if not f.startswith(("vm/", ".ci/")) and f not in ("README.md", "check")]
    key = f"{tree_hash(files)}-{arch.debian_arch}"
    out = cache() / "vm-debs" / key
    debs = sorted(out.glob("*.deb")) if (out / "ok").exists() else []
    if debs:
        log(f"packages ({arch.name}): cached {out} ({len(debs)} debs)")
        return debs
    t = time.monotonic()
    root = roots.deb_cross_root(arch)
    build = root / "build"
    roots.safe_rm(build)
    (build / "src").mkdir(parents=True)
    for f in source_files():  # the whole tree (meson.build reads vm/ too); the key is the packages' files
        dst = build / "src" / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, dst, follow_symlinks=False)
    logf = cache() / "vm-debs" / f"build-{key}.log"
    cmd = ["env", "NTSYNC_CACHE=/build/cache", "bash", "/build/src/debian/build-debs", "--host-arch", arch.debian_arch,
           "--out", "/build/out"]
    log(f"packages ({arch.name}): cross-building in {root} with {shlex.join(cmd[2:])} (log {logf})")
    with open(logf, "w") as lf:
        r = roots.in_root(root, cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=1800)
    got = sorted((build / "out").glob("*.deb"))
    if r.returncode or not got:
        tail_lines = logf.read_text(errors="replace").splitlines()[-20:]
        raise Failure(f"cross-building the {arch.name} packages failed; last lines of {logf}:\n  "
                      + "\n  ".join(tail_lines))
    roots.safe_rm(out)
    out.mkdir(parents=True)
    for d in got:
        shutil.copy2(d, out / d.name)
    roots.safe_rm(build)
    (out / "ok").write_text("")
    debs = sorted(out.glob("*.deb"))
    log(f"packages ({arch.name}): {len(debs)} debs in {fmt_secs(time.monotonic() - t)}: "
        + " ".join(d.name for d in debs))
    return debs


def build_compat_suite(arch):
    """The conformance suite as static programs of ARCH's compat ABI (meson/build-static
    --arch COMPAT), for the driver's compat ioctl path."""
    try:
        d = static.build([arch.compat]) / arch.compat
    except Failure as e:
        raise Failure(f"{e}\n(ntsync-vm test --no-i386 runs the 64-bit suite alone)")
    log(f"{arch.compat} suite: {d}")
    return d


def gate_kernel_log(results, console, secure_boot=None):
    """The honest gates: kernel log reports after the job started, taint, modprobe -r.
    Under Secure Boot a module must be signed by a trusted key: the unsigned-module taint (E)
    fails the run there."""
    problems = []
    dm = results / "dmesg.txt"
    if dm.exists():
        lines = dm.read_text(errors="replace").splitlines()
        start = next((i for i, line in enumerate(lines) if "ntsync-vm: job " in line and " start" in line), 0)
        before, after = lines[:start], lines[start:]
        source = "dmesg"
    else:
        before = []
        after = [line for line in Path(console).read_text(errors="replace").splitlines()
                 if re.match(r"\[\s*\d+\.\d+\]", line)]
        source = "console"
    gate_list = gates.load()
    problems += gates.judge(after, source, gates=gate_list)
    notes = [f"before the job, at boot: {p.split(': ', 1)[1].rsplit(' (', 1)[0]}"
             for p in gates.judge(before, gates=gate_list)]
    try:
        t0 = int((results / "taint.start").read_text())
        t1 = int((results / "taint.end").read_text())
        bad = gates.taint_problem(t1, t0, allowed=gates.TAINT_ALLOWED_SECURE_BOOT if secure_boot else None)
        if bad:
            problems.append(bad.replace("kernel tainted", "kernel tainted during the job"))
        if t0 & ~(gates.TAINT_ALLOWED_SECURE_BOOT if secure_boot else gates.TAINT_ALLOWED):
            notes.append(f"kernel already tainted at job start: {t0}")
    except (OSError, ValueError):
        problems.append("no taint state came back from the guest")
    try:
        urc = int((results / "unload.rc").read_text())
        if urc != 0:
            problems.append(f"modprobe -r ntsync failed at the end (rc {urc})")
    except (OSError, ValueError):
        problems.append("the end-of-job modprobe -r ntsync did not report")
    if secure_boot:
        p, n = judge_secure_boot(results, secure_boot)
        problems += p
        notes += n
    return problems, notes


def read_facts(path):
    """KEY=VALUE lines the guest wrote (vm/guest/guest.sh secure_boot_facts)."""
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return None
    return dict(line.split("=", 1) for line in lines if "=" in line)


def judge_secure_boot(results, mode):
    """A Secure Boot run counts only if the guest really booted like a Secure Boot PC:
    the firmware's SecureBoot on (mokutil --sb-state), the kernel locked down, and DKMS's key
    enrolled or not as MODE (enrolled | not-enrolled) says."""
    facts = read_facts(results / "secure-boot.txt")
    if facts is None:
        return ["the guest reported no Secure Boot state (secure-boot.txt missing)"], []
    problems = []
    if facts.get("sb_state") != "SecureBoot enabled":
        problems.append(f"Secure Boot is not on in the guest (mokutil --sb-state: {facts.get('sb_state')!r})")
    lockdown = facts.get("lockdown", "")
    if not re.search(r"\[(integrity|confidentiality)\]", lockdown):
        problems.append(f"the kernel is not locked down (/sys/kernel/security/lockdown: {lockdown!r})")
    enrolled = facts.get("dkms_key", "")
    want = "is already enrolled" if mode == "enrolled" else "is not enrolled"
    if want not in enrolled:
        problems.append(f"DKMS's key: mokutil --test-key said {enrolled!r}, expected '... {want}' ({mode})")
    notes = [f"Secure Boot: {facts.get('sb_state')}; lockdown {lockdown}; DKMS key: {enrolled}"]
    if facts.get("signer"):
        notes.append(f"module signed by: {facts['signer']}")
    return problems, notes


class StageWatch(run_mod.Watch):
    """The cloud guest's Watch: guest.sh's stages (`##ntsync## stage NAME`), each within its
    time-out (console.STAGE_TIMEOUTS; the job's own), `info` lines logged, `done rc=N`; the
    job's PASS/FAIL/SKIP lines counted as they come, its output echoed (ntsync-vm demo)."""

    LABELS = {"install": "installing packages", "driver": "loading the driver", "job": "running the job",
              "unload": "modprobe -r ntsync", "collect": "collecting results"}

    def __init__(self, stages, echo_job, job_timeout, scale=1.0):
        super().__init__()
        self.stages, self.echo_job, self.job_timeout = stages, echo_job, job_timeout
        self.scale = scale  # every stage's time-out multiplied (an emulated architecture: Qemu.tcg_slow)
        self.begin(time.monotonic())

    def begin(self, t0):
        self.t0 = t0
        self.stage, self.since, self.times, self.done = "boot", t0, {}, None
        self.echoing = False
        self.counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        self.last_progress = t0

    def line(self, line, mark, now):
        if not mark:
            if self.echoing and not line.startswith("["):
                print("    " + line, flush=True)
            elif self.stage == "job":
                t = TESTLINE.match(line)
                if t:
                    self.counts[t.group(1)] += 1
                    if t.group(1) == "FAIL":
                        log(f"  {line.strip()}")
                    if now - self.last_progress > 15:
                        self.last_progress = now
                        # (not in the "N passed, N failed" form: that is the final line's)
                        c = self.counts
                        log(f"  tests so far: PASS {c['PASS']}, FAIL {c['FAIL']}, SKIP {c['SKIP']}")
            return None
        kind, rest = mark
        if kind == "stage":
            name = rest.split()[0] if rest else "?"
            self.times[self.stage] = now - self.since
            if self.stage == "boot":
                self.times["boot_to_job"] = now - self.t0
                log(f"guest up after {fmt_secs(now - self.t0)} ({rest})")
            if name == "job":
                self.times["boot_to_first_test"] = now - self.t0
            self.stage, self.since = ("boot-script" if name == "start" else name), now
            self.echoing = self.echo_job and name == "job"
            if name in self.LABELS:
                log(self.LABELS[name])
        elif kind == "info":
            log(rest)
        elif kind == "done":
            self.times[self.stage] = now - self.since
            self.done = rest
            self.stage, self.since = "poweroff", now
            self.echoing = False
        return None

    def deadline(self, now):
        st = self.stage
        limit = (self.job_timeout if st == "job" else
                 timeout_for(self.stages.get(st, st)) if st in STAGE_TIMEOUTS or st in self.stages else
                 timeout_for("collect"))
        return self.since, limit * self.scale, f"stage '{st}'"

    def finish(self):
        self.times.setdefault(self.stage, time.monotonic() - self.since)
        return self.times, self.stage, self.done


# ------------------------------------------------------------------ the request and the result

@dataclasses.dataclass(frozen=True)
class Request:
    """Everything one cloud guest run needs, and nothing else: the only input of run_guest().
    Built once (from_args, or by the caller: wine.py, the matrix, the Secure Boot command);
    a field added later is a keyword every caller either gives or gets the default of here."""
    job: jobs.Job
    suite: str
    arch: arches.Arch = dataclasses.field(default_factory=arches.get)
    driver: str = "ours"               # ours | in-tree
    image: Path = None                 # the user's own Debian cloud image (else ours of SUITE)
    kernel_debs: Path = None           # kernel .debs installed into our image and booted
    debs: Path = None                  # these packages instead of the tree's
    no_debs: bool = False              # no packages: module/ built in the guest
    share: Path = None                 # exec: the folder copied in and back
    cmd: tuple = ()                    # exec: the command
    net: bool = False
    smp: int = None                    # None: 1 for a timed job, else 2
    mem: int = 2048
    timeout: int = None                # the job stage's seconds (None: the job row's, or the default)
    icount: bool = None                # None: as the job row says (timed)
    append: str = ""                   # more kernel command line
    rebuild: bool = False              # the image built again
    secure_boot: str = None            # enrolled | not-enrolled: boot the Secure Boot image
    seeds: int = None                  # the differential test's walks
    bench_args: str = ""               # more ntsync-bench options (bench --cpus)
    compat: bool = True                # the compat-ABI build of the suite too (test)
    tcg_cpu: str = None                # -cpu under TCG (Wine: max,-smap)
    extra_files: tuple = ()            # ((name in the guest's input, host path), ...)
    verbose: bool = False              # the job's console output shown
    disk_boot: bool = False            # our image booted from its disk: firmware and GRUB, not -kernel

    @property
    def cmd_string(self):
        return shlex.join(self.cmd) if len(self.cmd) != 1 else self.cmd[0]

    @property
    def vcpus(self):
        return self.smp or (1 if self.job.timed else 2)

    @property
    def counts_instructions(self):
        """-icount under TCG (under KVM the guest sees virt=kvm and ignores ICOUNT)."""
        return self.job.timed if self.icount is None else self.icount

    @property
    def echo(self):
        return self.job.echo or self.verbose

    def check(self):
        """Usage errors of a request, raised before anything is built."""
        spec = suites.SUITES[self.suite]
        if self.driver == "in-tree" and self.image is None and not spec.in_tree:
            raise Usage(f"--driver in-tree: suite {self.suite} (kernel {spec.kernel}) has no in-tree ntsync; "
                        f"use --suite {' or '.join(suites.in_tree_names())}")
        if self.job.name in ("test", "demo", "bench") and self.no_debs:
            raise Usage(f"job {self.job.name} needs our packages: drop --no-debs")
        if self.arch.name not in spec.architectures:
            raise Usage(f"suite {self.suite} has no {self.arch.name} kernel (it has {', '.join(spec.architectures)})")
        return self

    @classmethod
    def from_args(cls, o, cmd_args):
        """The request of the cloud command line's options O (after its own checks)."""
        suite = o.suite or suites.default_for(jobs.get(o.job, "cloud", "command"))
        suite = suites.resolve(suite, image_only=True)
        job = jobs.get("test" if o.job in ("matrix", "secure-boot", "image") else o.job, "cloud")
        if o.cpus is not None:
            if o.job != "bench":
                raise Usage("--cpus: only for the bench job (vm/ntsync-vm bench --cpus N)")
            if not 2 <= o.cpus <= 8:
                raise Usage(f"--cpus {o.cpus}: give 2 to 8 vCPUs (1 is the plain bench)")
            if o.smp not in (None, o.cpus):
                raise Usage("--cpus N sets the vCPUs: drop --smp")
        if o.job == "exec" and not cmd_args:
            raise Usage("exec needs a command: ntsync-vm exec [--share DIR] -- CMD ARGS...")
        if o.job != "exec" and cmd_args:
            raise Usage(f"'-- {' '.join(cmd_args)}': only the exec job takes a command")
        if o.share and not Path(o.share).is_dir():
            raise Usage(f"--share {o.share}: not a folder")
        arch = arches.for_guests(o.arch, "cloud")
        if o.image and not Path(o.image).is_file():
            raise Usage(f"--image {o.image}: no such file; pass a Debian genericcloud qcow2 "
                        f"(debian-13-genericcloud-{arch.name}.qcow2 from Debian's cloud image site)")
        if o.kernel_debs and not Path(o.kernel_debs).is_dir():
            raise Usage(f"--kernel-debs {o.kernel_debs}: not a folder")
        if o.debs and not Path(o.debs).is_dir():
            raise Usage(f"--debs {o.debs}: not a folder")
        if o.disk_boot and (o.image or o.secure_boot):
            raise Usage("--disk-boot boots our image from its disk; --image and --secure-boot boot from the disk "
                        "already: drop --disk-boot")
        if o.disk_boot and o.append:
            raise Usage("--disk-boot: the kernel command line is the image's grub.cfg's; drop --append")
        if o.secure_boot or o.job == "secure-boot":
            if o.image:
                raise Usage("--image with Secure Boot: only the suite's own Secure Boot image is set up for it "
                            "(signed shim and GRUB on an EFI system partition); drop --image")
            if o.job in ("bench", "matrix"):
                raise Usage(f"--secure-boot: the {o.job} job has no Secure Boot mode; use test, demo, exec, shell "
                            "or the secure-boot job")
            if o.secure_boot == "not-enrolled" and o.job in ("test", "demo"):
                raise Usage(f"--secure-boot not-enrolled: the kernel refuses the module then, so {o.job} cannot "
                            "run; 'ntsync-vm secure-boot' checks that case, or use exec/shell to look around")
            if o.driver != "ours" or o.no_debs:
                raise Usage("--secure-boot: only with our packages (DKMS signs the module): drop --driver/--no-debs")
        req = cls(job=job, suite=suite, arch=arch, driver=o.driver,
                  image=Path(o.image).resolve() if o.image else None,
                  kernel_debs=Path(o.kernel_debs) if o.kernel_debs else None,
                  debs=Path(o.debs) if o.debs else None, no_debs=o.no_debs,
                  share=Path(o.share).resolve() if o.share else None, cmd=tuple(cmd_args), net=o.net,
                  smp=o.cpus or o.smp, mem=o.mem, timeout=o.timeout, icount=False if o.no_icount else None,
                  append=o.append, rebuild=o.rebuild, secure_boot=o.secure_boot, seeds=o.seeds,
                  bench_args=BENCH_CONTENTION if o.cpus else "", compat=not o.no_i386, verbose=o.verbose,
                  disk_boot=o.disk_boot)
        return req if o.job in ("matrix", "image") else req.check()


@dataclasses.dataclass(frozen=True)
class Prepared:
    """What a run boots and installs, made before it (prepare()): our image (None with --image),
    the packages (None with --no-debs), the compat suite's folder, and the seconds an image
    build took in this run (None when the image was cached)."""
    image: dict = None
    debs: tuple = None
    compat_dir: Path = None
    image_seconds: float = None


class Summary(NamedTuple):
    """The job's 'N passed, N failed, N skipped' line."""
    passed: int
    failed: int
    skipped: int

    def __str__(self):
        return f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped"


@dataclasses.dataclass(frozen=True)
class Result:
    """What one cloud guest run gave: the only output of run_guest()."""
    job: str
    suite: str
    driver: str
    run_dir: Path
    console: Path
    results: Path                      # the guest's results, unpacked
    kernel: str                        # uname -r in the guest (or what was booted)
    accel: str
    times: dict = dataclasses.field(default_factory=dict)
    total: float = 0.0
    secure_boot: str = None
    job_rc: int = None                 # None: the job reported no exit status (a shell)
    failure: str = None                # what guest.sh gave up on
    problems: tuple = ()               # the kernel-log, taint and unload gates' findings
    notes: tuple = ()
    summary: Summary = None

    def verdict(self):
        """(exit code, reasons): 0 pass, 1 failed (the job, the gates)."""
        reasons = list(self.problems)
        if self.failure:
            reasons.insert(0, self.failure)
        if self.job_rc not in (0, None):
            reasons.insert(0, f"the job exited {self.job_rc}")
        return (1 if reasons else 0), reasons


def run_guest(req, prep):
    """One guest run of REQ with what PREP made, through run.guest() (the guest lock, KVM or
    TCG with the fallback, a second boot after a crash before the job). Returns a Result."""
    arch, job = req.arch, req.job
    ensure_host_tools([arch.qemu.binary, "qemu-img", "cloud-localds", "busybox"])
    t_start = time.monotonic()
    image, sb = prep.image, req.secure_boot
    runs = cache() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-") + f"{job.name}-{req.suite}-", dir=runs))
    console = run_dir / "console.log"
    console.touch()
    artifacts.prune_runs(runs)
    net = bool(req.image) or req.net
    icount = req.counts_instructions
    release = suites.SUITES[req.suite].release
    env = {"JOB": job.name, "DRIVER": req.driver, "NET": int(net), "VERSION": repo_version(),
           "MODE": "repo" if prep.debs else "src", "REPO_SUITE": release,
           "CMD": req.cmd_string if job.name == "exec" else "",
           "SECURE_BOOT": sb or "", "SEEDS": req.seeds or "", "BENCH_ARGS": req.bench_args,
           "ICOUNT": int(icount), "CONSOLE": arch.console, "COMPAT": arch.compat or ""}
    seed = artifacts.make_seed(run_dir, f"ntsync-{req.suite}")
    extra = dict(req.extra_files)  # name in the guest's input: host path
    if "compat" in job.needs and prep.compat_dir:
        extra[arch.compat] = prep.compat_dir
    if "figures" in job.needs and (cache() / "wine" / "winbench.txt").is_file():
        # real Wine's figures, from the last `ntsync-vm wine --bench` (wine.keep_figures)
        extra["wine-figures.txt"] = cache() / "wine" / "winbench.txt"
    # Our packages reach the guest as a user gets them: a signed apt repository (repo.py)
    pkg_repo = repo.build(run_dir / "repo", prep.debs, [release], [arch.debian_arch]) if prep.debs else None
    inp = artifacts.make_input(run_dir, job.name, env, pkg_repo, share=req.share if "share" in job.needs else None,
                               extra=extra)
    if pkg_repo:
        shutil.rmtree(pkg_repo)  # (in the input now)
    out_img = run_dir / "out.img"
    overlay = run_dir / "disk.qcow2"
    machine = qemu.Machine(console=console, arch=arch, name=f"ntsync-{run_dir.name}", mem=req.mem, smp=req.vcpus,
                           net=net, interactive=job.interactive, icount=icount, tcg_cpu=req.tcg_cpu)
    if sb:
        # A UEFI PC with Secure Boot: the image's own shim, GRUB and kernel boot from its
        # disk; the variable store is the run's copy (with DKMS's key in MokList or not).
        base, fmt, size = Path(image["disk"]), "qcow2", None
        kernel_desc = f"{image['info']['kernel_release']}, Secure Boot, DKMS key {sb}"
    elif req.image or req.disk_boot:
        if req.image:
            base = req.image
            with open(base, "rb") as f:
                fmt, size = ("qcow2" if f.read(4) == b"QFI\xfb" else "raw"), "16G"
            kernel_desc = "its own bootloader and kernel"
        else:
            base, fmt, size = Path(image["disk"]), "qcow2", None
            kernel_desc = f"{image['info']['kernel_release']}, from the disk through {arch.boot} and GRUB"
        if arch.boot == "efi":
            # the disk's removable-media boot program, started by the machine's UEFI firmware
            uefi_code, uefi_vars = firmware.uefi(arch)
    else:
        base, fmt, size = Path(image["disk"]), "qcow2", None
        machine.kernel, machine.initrd = str(image["kernel"]), str(image["initrd"])
        machine.append = (kernel_cmdline(arch) + " " + req.append).strip()
        kernel_desc = image["info"]["kernel_release"]

    def fresh_disks():
        """Before every boot (a second one too): a new overlay, an empty result disk and,
        under Secure Boot, the run's copy of the variable store."""
        overlay.unlink(missing_ok=True)
        run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(base), "-F", fmt, str(overlay)]
            + ([size] if size else []))
        with open(out_img, "wb") as f:
            f.truncate(1024 * 1024 * int(os.environ.get("NTSYNC_OUT_MIB", "512")))
        if sb:
            fw_vars = run_dir / "efi-vars.fd"
            shutil.copy2(image["vars_mok" if sb == "enrolled" else "vars"], fw_vars)
            machine.firmware = qemu.Firmware(str(image["code"]), str(fw_vars))
        elif machine.kernel is None and arch.boot == "efi":
            fw_vars = run_dir / "efi-vars.fd"
            shutil.copy2(uefi_vars, fw_vars)
            machine.firmware = qemu.Firmware(str(uefi_code), str(fw_vars), secure=False)

    machine.drives = [
        # bootindex 1: with -kernel QEMU's linuxboot option ROM holds 0.
        qemu.Drive(str(overlay), "qcow2", bootindex=1, opts="discard=unmap,cache=unsafe"),
        qemu.Drive(str(seed), "raw", readonly=True),
        qemu.Drive(str(inp), "raw", serial="ntsync-in", readonly=True),
        qemu.Drive(str(out_img), "raw", serial="ntsync-out"),
    ]
    what = (f"{job.name} on {req.image or req.suite} ({kernel_desc}), {arch.name}, driver {req.driver}, "
            f"{machine.smp} vCPU, {req.mem} MiB{', user network' if net else ''}")
    log(f"booting: {what}")
    log(f"console log: {console}")
    stages = {"install": "install-net" if net else "install"}
    # another architecture than the host's runs emulated (TCG): its row says how much slower
    slow = 1.0 if arch.can_kvm() else arch.qemu.tcg_slow
    watch = StageWatch(stages, req.echo, timeout_for("job", req.timeout or job.timeout), slow)
    r = run_mod.guest(machine, watch, kernels=[] if req.image or sb else [image["kernel"]],
                      record=run_dir / "qemu.cmd", before_boot=fresh_disks)
    (run_dir / "qemu.stderr").write_text(r.stderr)
    if r.accel == "tcg" and machine.icount:
        log("the guest ran under TCG with -icount (guest time counts guest instructions)")
    if r.stalled:
        raise Failure(r.stall_message())
    times, last_stage, done = ({}, "shell", None) if job.interactive else watch.finish()
    total = time.monotonic() - t_start
    results = run_dir / "out"
    got = artifacts.read_results(out_img, results)
    overlay.unlink(missing_ok=True)
    if done is None and not job.interactive and not (results / "job.rc").exists():
        err = r.stderr.strip()
        if last_stage == "boot" and boot_crash(console):
            twice = ", twice," if r.crashed else ""
            raise Failure(f"the guest's kernel crashed while booting{twice} before the job began and with "
                          f"no ntsync module loaded. Console log {console}, its tail:\n{tail(console)}")
        raise Failure(f"the guest stopped during stage '{last_stage}' without finishing"
                      f"{' (QEMU: ' + err.splitlines()[-1] + ')' if err else ''}. Console log {console}, "
                      f"its tail:\n{tail(console)}")
    if not got:
        raise Failure(f"no results came back from the guest (disk {out_img}); console log {console}")
    problems, notes = gate_kernel_log(results, console, sb)
    summary = None
    joblog = results / "job.log"
    if joblog.exists():
        for line in joblog.read_text(errors="replace").splitlines():
            m = SUMMARY.match(line.strip())
            if m:
                summary = Summary(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))

    def text(name):
        f = results / name
        return f.read_text().strip() if f.exists() else None
    job_rc = text("job.rc")
    return Result(job=job.name, suite=req.suite, driver=req.driver, run_dir=run_dir, console=console,
                  results=results, kernel=text("uname") or kernel_desc, accel=r.accel, times=times, total=total,
                  secure_boot=sb, job_rc=int(job_rc) if job_rc is not None else None, failure=text("failure"),
                  problems=tuple(problems),
                  notes=tuple(notes + [f"the first boot crashed before the job: {c}" for c in r.crashed]),
                  summary=summary)


TARGETS = {"total_cached": 240, "boot": 90, "total_cold": 480}


def print_timings(times, image_seconds=None, whole=None, waited=None):
    """TIMES: a Result's. WHOLE: the run's seconds (default: since the process started);
    WAITED: the seconds of them queued for the guest lock (default: all this process queued,
    right when WHOLE is)."""
    t = times
    parts = [f"boot to job script {fmt_secs(t.get('boot_to_job', 0))}"]
    if "boot_to_first_test" in t:
        # the packages installed (DKMS build included) and the driver loaded: the job begins
        parts.append(f"boot to first test {fmt_secs(t['boot_to_first_test'])} (target <= {TARGETS['boot']}s)")
    for st in ("install", "driver", "job", "unload", "collect", "poweroff"):
        if st in t:
            parts.append(f"{st} {fmt_secs(t[st])}")
    if waited is None:
        waited = lock.WAITED[0]
    total = (elapsed() if whole is None else whole) - waited
    target = TARGETS["total_cold"] if image_seconds else TARGETS["total_cached"]
    queued = f" not counting {fmt_secs(waited)} queued" if waited > 1 else ""
    parts.append(f"whole run {fmt_secs(total)}{queued} (target <= {fmt_secs(target)}"
                 f"{', image built in this run' if image_seconds else ', cached image'})")
    log("timings: " + "; ".join(parts))


# bench --cpus N: the rows where threads on several vCPUs meet (ntsync-bench --only), runs
# of 1 s: QEMU switches vCPUs every 100 ms of guest time, and 120 ms runs saw 1-2 switches
# (doc/results.md 2026-12-07: mutex spreads 17-439 % at 120 ms, 3-37 % at 1 s); --spread
# puts a row's threads each on its own vCPU, the same way in every run (on 4 vCPUs the
# wait-all and wait-any contention rows spread by up to 12 % in a boot without it, under 2 %
# with it; mutex.2 still does not settle, for the reason doc/results.md gives)
BENCH_CONTENTION = "--only mutex.,queue.,contend.,pingpong.ntsync,pingpong.futex --budget 1000 --spread"


def report(res, image_seconds=None, timings=True, whole=None, waited=None):
    if timings:
        print_timings(res.times, image_seconds, whole, waited)
    for n in res.notes:
        log(f"note: {n}")
    code, reasons = res.verdict()
    log(f"results: {res.results}")
    log(f"console log: {res.console}")
    for r in reasons:
        log(f"FAIL: {r}")
    if not reasons:
        allowed = "O (every module signed: Secure Boot)" if res.secure_boot else "O/E"
        log("kernel log clean (no BUG/WARNING/Oops/lockdep/KASAN/kmemleak/refcount_t), "
            f"no new taint beyond {allowed}, modprobe -r ntsync succeeded")
    return code


def prepare(req, compat_dir=None, debs=None):
    """The image (unless --image), the packages and the compat suite REQ needs: a Prepared.
    COMPAT_DIR, DEBS: made already (one build for every row of a matrix)."""
    image, image_seconds = None, None
    if not req.image:
        t = time.monotonic()
        paths, info = find_image(req.suite, req.kernel_debs, rebuild=req.rebuild, secure_boot=bool(req.secure_boot),
                                 arch=req.arch)
        if time.monotonic() - t > 30:
            image_seconds = time.monotonic() - t
        image = dict(paths, info=info)
    if debs is None and req.debs:
        debs = sorted(p for p in req.debs.glob("*.deb") if "-dbgsym_" not in p.name)
        if not debs:
            raise Usage(f"--debs {req.debs}: no .deb files there")
        log(f"packages: {len(debs)} debs from {req.debs}")
    elif debs is None and not req.no_debs:
        debs = build_debs(req.arch)
    if compat_dir is None and "compat" in req.job.needs and req.compat and req.arch.compat:
        compat_dir = build_compat_suite(req.arch)
    return Prepared(image=image, debs=tuple(debs) if debs else None, compat_dir=compat_dir,
                    image_seconds=image_seconds)


def job_single(req):
    prep = prepare(req)
    res = run_guest(req, prep)
    if req.job.interactive:
        if res.job_rc is None:
            log(f"shell ended without ntsync-vm-exit: no end-of-job checks; console log {res.console}")
            return 0
        log("shell ended through ntsync-vm-exit: the end-of-job checks")
        return report(res, timings=False)
    code = report(res, prep.image_seconds)
    if req.job.name == "exec":
        share = res.results / "share"
        if share.exists():
            log(f"the folder as the command left it: {share}")
        if res.job_rc not in (0, None) and not res.problems:
            code = res.job_rc if 0 < res.job_rc < 256 else 1
    if req.job.name == "test":
        s = res.summary
        if s is None:
            log("FAIL: the test runner printed no summary line")
        if s is None or s.failed:
            code = 1
        print(s or "0 passed, 1 failed, 0 skipped", flush=True)
    return code


# ------------------------------------------------------------------ tables of several runs

@dataclasses.dataclass(frozen=True)
class Row:
    """One run of a command that makes several (matrix, secure-boot): what its table says."""
    suite: str
    kernel: str
    driver: str = "ours"
    summary: Summary = None
    gates: str = "clean"               # "clean", the gates' findings, or why the run failed
    seconds: float = 0.0
    ok: bool = False
    console: Path = None
    differential: str = "-"
    case: str = ""                     # secure-boot: a or b
    key: str = ""                      # secure-boot: DKMS's key enrolled or not
    arch: str = arches.DEFAULT         # matrix: the guest's architecture
    guest: str = "cloud"               # matrix: cloud (packages, DKMS) or initramfs (boot --job suite)
    dkms: str = "-"                    # matrix, cloud rows: what DKMS did in the guest (dkms_verdict)
    smoke: str = "-"                   # matrix, initramfs rows: ntsync-smoke's line (boot.smoke_line)


def row_of(res, code, seconds, **kw):
    """The Row of a finished run (a run with no summary line or failures fails)."""
    s = res.summary
    ok = code == 0 and s is not None and not s.failed
    return Row(suite=res.suite, kernel=res.kernel, driver=res.driver, summary=s,
               gates="clean" if not res.problems else "; ".join(res.problems), seconds=seconds, ok=ok,
               console=res.console, **kw)


def failed_row(req, err, seconds, **kw):
    """The Row of a run that failed before it had a result (the first line of ERR says why)."""
    return Row(suite=req.suite, kernel=suites.SUITES[req.suite].kernel, driver=req.driver,
               gates=str(err).splitlines()[0], seconds=seconds, **kw)


def print_table(rows, columns):
    """ROWS as a table of COLUMNS ((header, Row -> text), ...), then the closing line:
    the sums, a failed row without failed tests counting as one failure. Returns the exit
    code: 0 when every row passed."""
    table = [[h for h, _ in columns]] + [[str(get(r)) for _, get in columns] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    print()
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    tot = [sum(r.summary[i] for r in rows if r.summary) for i in range(3)]
    failed_rows = sum(1 for r in rows if not r.ok)
    print(f"\n{Summary(tot[0], tot[1] + (failed_rows if not tot[1] else 0), tot[2])}", flush=True)
    return 0 if failed_rows == 0 else 1


def _counts(i):
    return lambda r: r.summary[i] if r.summary else "-"


COUNTS = (("passed", _counts(0)), ("failed", _counts(1)), ("skipped", _counts(2)))
END = (("time", lambda r: fmt_secs(r.seconds)), ("result", lambda r: "PASS" if r.ok else "FAIL"))


def job_secure_boot(req):
    """Both Secure Boot cases on one suite, in guests that boot like a Secure Boot PC (OVMF with
    Microsoft's keys, Debian's signed shim, GRUB and kernel):
      a. DKMS's key not enrolled: apt installs the packages, the kernel refuses the module,
         the postinst and ntsync-info say why and how to enroll it, nothing else breaks
         (the guest job vm/guest/jobs/sb-refused.sh);
      b. the key enrolled in MokList before boot: the module loads, signed, and the suite passes."""
    rows = []
    prep = prepare(dataclasses.replace(req, secure_boot="enrolled"))
    for case, mode, job in (("a", "not-enrolled", "sb-refused"), ("b", "enrolled", "test")):
        r = dataclasses.replace(req, job=jobs.get(job, "cloud"), secure_boot=mode)
        log(f"secure boot case {case}: DKMS's key {mode}, job {job}")
        t, w = time.monotonic(), lock.WAITED[0]
        try:
            res = run_guest(r, prep)
            # Case a counts from the start (image and packages included), case b from its own
            # start: only the queueing of that stretch is left out (lock.WAITED is cumulative).
            code = report(res, prep.image_seconds if case == "a" else None,
                          whole=None if case == "a" else time.monotonic() - t,
                          waited=None if case == "a" else lock.WAITED[0] - w)
            rows.append(row_of(res, code, time.monotonic() - t, case=case, key=mode))
        except Failure as e:
            rows.append(failed_row(r, e, time.monotonic() - t, case=case, key=mode))
    return print_table(rows, (("case", lambda r: r.case), ("DKMS key", lambda r: r.key),
                              ("kernel", lambda r: r.kernel), *COUNTS, ("gates", lambda r: r.gates[:70]), *END))


def differential(res):
    """The differential test's verdict for a matrix row (tests/differential/README.md): the live
    comparison with the in-tree driver where the guest ran it (diff.log), else the suite's
    comparison with the recorded reference (test-diff's two cases in job.log)."""
    live = res.results / "diff.log"
    if live.exists():
        parts = []
        for line in live.read_text(errors="replace").splitlines():
            m = re.search(r"compared \d+ lines \((\d+) matrix cases, (\d+) walks\): (\d+) differences", line)
            if m:
                what = f"{m.group(1)} cases" if int(m.group(1)) else f"{m.group(2)} walks"
                parts.append(f"{what} {m.group(3)} differ")
        fails = sum(1 for line in live.read_text(errors="replace").splitlines() if line.startswith("FAIL diff:"))
        return ("live: " + ", ".join(parts) if parts else "live: no comparison") + (" FAIL" if fails else "")
    joblog = res.results / "job.log"
    text = joblog.read_text(errors="replace") if joblog.exists() else ""
    if re.search(r"^FAIL diff: ", text, re.M):
        return "reference: FAIL"
    if len(re.findall(r"^PASS diff: ", text, re.M)) >= 2:
        return "reference: 0 differ"
    return "-"


# ntsync-dkms's postinst, on the running kernel (debian/ntsync-dkms.postinst), in the guest's
# install.log: each line there is "[UPTIME] TEXT" (guest.sh, shown_timed)
DKMS_LINES = (
    (re.compile(r"ntsync-dkms: Linux (\S+): ntsync \S+ built and installed by DKMS\."), "built"),
    (re.compile(r"ntsync-dkms: Linux (\S+): has its own ntsync driver"), "not built: in-tree driver"),
    (re.compile(r"ntsync-dkms: Linux (\S+): not built"), "FAIL: not built"),
    (re.compile(r"ntsync-dkms: Linux (\S+): not a kernel this driver is built for"), "FAIL: excluded"),
)
UPTIME = re.compile(r"^\[ *(\d+\.\d+)\] (.*)$")


def dkms_verdict(results):
    """What ntsync-dkms's postinst did for the guest's kernel, from RESULTS/install.log:
    'built in N s' (from its 'Setting up ntsync-dkms' to DKMS's 'built and installed', the
    guest's clock), 'not built: in-tree driver', 'FAIL: ...', or '-' (no packages installed)."""
    f = results / "install.log"
    krel = (results / "uname").read_text().strip() if (results / "uname").exists() else None
    if not f.exists():
        return "-"
    start = None
    for line in f.read_text(errors="replace").splitlines():
        m = UPTIME.match(line)
        t, text = (float(m.group(1)), m.group(2)) if m else (None, line)
        if text.startswith("Setting up ntsync-dkms "):
            start = t
        for pat, verdict in DKMS_LINES:
            k = pat.search(text)
            if k and (krel is None or k.group(1) == krel):
                if verdict == "built" and start is not None and t is not None:
                    return f"built in {t - start:.0f} s"
                return verdict
    return "-" if start is None else "FAIL: no verdict from the postinst"


def since(t, w):
    """Seconds since monotonic time T, less the time queued for the guest lock since lock.WAITED
    was W: a matrix row's own time, however many other guests ran meanwhile."""
    return time.monotonic() - t - (lock.WAITED[0] - w)


def arch_rows(names, only):
    """The matrix's initramfs rows: `ntsync-vm boot SUITE --arch ARCH --job suite` on every
    (architecture, suite, driver) of suites.arch_plan (ONLY: those suites)."""
    from . import boot
    rows = []
    for arch, suite, driver in suites.arch_plan(names, only):
        log(f"matrix: {arch} {suite} / {driver} (initramfs)")
        t, w = time.monotonic(), lock.WAITED[0]
        o = boot.BootRequest(job=jobs.get("suite", "initramfs"), kernel=suite, arch=arches.get(arch),
                             in_tree=driver == "in-tree")
        kernel = suites.SUITES[suite].series
        try:
            with tempfile.TemporaryDirectory(prefix="ntsync-boot-") as work:
                r = boot.run_suite(o, Path(work))
            rows.append(Row(suite=suite, kernel=r.release, driver=driver, arch=arch, guest="initramfs",
                            summary=Summary(r.passed, r.failed, r.skipped),
                            gates="clean" if r.rc == 0 else f"FAIL (see {r.console})",
                            seconds=since(t, w), ok=r.rc == 0, console=r.console, smoke=r.smoke))
        except Failure as e:
            rows.append(Row(suite=suite, kernel=kernel, driver=driver, arch=arch, guest="initramfs",
                            gates=str(e).splitlines()[0], seconds=since(t, w)))
    return rows


def cloud_arches(req, arch_names, cloud_rows=True):
    """The architectures of the matrix's cloud rows: --arch's (unless CLOUD_ROWS is False:
    --arches-only), then every one of ARCH_NAMES (--arches) that cloud guests boot for
    (arches.why_no_guests)."""
    out = [req.arch] if cloud_rows else []
    for n in arch_names:
        a = arches.get(n)
        # a kernel flavour's row (dpkg_arch set) has initramfs rows here: its cloud rows would
        # need an image of their own (35-50 min cold under qemu-user); --arch asks for them
        if arches.why_no_guests(a, "cloud") is None and not a.dpkg_arch and a not in out:
            out.append(a)
    return out


def cloud_rows_of(req, arch, wanted):
    """The cloud rows of ARCH: the suite on every (suite, driver) of the matrix plan that has
    ARCH (WANTED: those suites), with one build of the packages (ARCH's: cross-built when it is
    not the host's) and of the compat suite for every row, even if the tree changes meanwhile."""
    plan = [p for p in suites.matrix_plan(arch.name) if not wanted or p[0] in wanted]
    if not plan:
        return []
    req = dataclasses.replace(req, arch=arch)
    debs = None if req.debs or req.no_debs else build_debs(arch)
    compat_dir = build_compat_suite(arch) if req.compat and arch.compat else None
    rows = []
    for suite, driver in plan:
        r = dataclasses.replace(req, suite=suite, driver=driver, job=jobs.get("test", "cloud"))
        log(f"matrix: {arch.name} {suite} / {driver}")
        t, w = time.monotonic(), lock.WAITED[0]
        try:
            res = run_guest(r.check(), prepare(r, compat_dir=compat_dir, debs=debs))
            code, _ = res.verdict()
            rows.append(row_of(res, code, since(t, w), differential=differential(res), arch=arch.name,
                               dkms=dkms_verdict(res.results) if driver == "ours" else "-"))
        except Failure as e:
            rows.append(failed_row(r, e, since(t, w), arch=arch.name))
    return rows


def job_matrix(req, only=None, arch_names=(), cloud_rows=True):
    """One table, architecture x suite x driver: the suite on every (suite, driver) of the
    suite table's matrix plan (ONLY: those suites) in cloud guests (packages by apt, DKMS in
    the guest) of --arch and of every architecture of ARCH_NAMES that has cloud guests (not a
    kernel flavour's row); then
    (ARCH_NAMES) the smoke test and the suite in initramfs guests of those architectures on
    every suite that has them. A row's time leaves out its queueing for the guest lock. A row
    that fails is a failed row; the matrix goes on.
    CLOUD_ROWS False (--arches-only): no cloud rows of --arch."""
    wanted = [suites.resolve(x) for x in only.split(",")] if only else None
    rows = []
    for arch in cloud_arches(req, arch_names, cloud_rows):
        rows += cloud_rows_of(req, arch, wanted)
    rows += arch_rows(arch_names, wanted)
    return print_table(rows, (("arch", lambda r: r.arch), ("guest", lambda r: r.guest),
                              ("suite", lambda r: r.suite), ("kernel", lambda r: r.kernel),
                              ("driver", lambda r: r.driver), ("DKMS in the guest", lambda r: r.dkms),
                              ("smoke", lambda r: r.smoke), *COUNTS, ("differential", lambda r: r.differential),
                              ("kernel log", lambda r: r.gates[:60]), *END))


def main(argv, epilog_more=""):
    """The cloud guest jobs' command line (vm/ntsync-vm JOB [options])."""
    cmd_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(
        prog="ntsync-vm",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Debian cloud guests under QEMU for ntsync: build images, install our packages "
                    "with apt, run a job, check the kernel log.",
        epilog="jobs (vm/ntsync_vm/jobs.py):\n" + jobs.epilog(("cloud", "command")) + """
  accel        print the accelerator guests use on this host (kvm or tcg); --why says why
""" + epilog_more + """

exit codes: 0 passed, 1 failed (tests, a job command, or a kernel-log/taint/unload gate),
2 bad usage, 3 infrastructure (image build, boot, a stage that stalled).
environment: NTSYNC_CACHE (default /var/cache/ntsync), NTSYNC_ACCEL=tcg|kvm, NTSYNC_TIMEOUT_SCALE,
NTSYNC_MAX_AGE_DAYS (default 14: images, kernel roots and the debug kernels older are built again).""")
    ap.add_argument("job", choices=[j.name for j in jobs.of_kind("cloud", "command", cli_only=True)])
    ap.add_argument("--suite", default=None,
                    help=f"{suites.describe(image_only=True)}; default {suites.DEFAULT}, for bench "
                    f"{suites.bench_default()}")
    ap.add_argument("--arch", default=arches.DEFAULT, metavar="ARCH",
                    help=f"the guest's architecture: {', '.join(arches.guest_names('cloud'))} "
                    f"(default {arches.DEFAULT}; "
                    "the table's others: initramfs guests (ntsync-vm boot --arch) or kbuild only)")
    ap.add_argument("--driver", choices=["ours", "in-tree"], default="ours",
                    help=f"in-tree: use the kernel's own ntsync ({', '.join(suites.in_tree_names())} or --image only)")
    ap.add_argument("--image", metavar="FILE", help="boot this Debian genericcloud qcow2 instead of our image "
                    "(the guest then gets a network to install headers and a compiler)")
    ap.add_argument("--kernel-debs", metavar="DIR", help="install these kernel .debs into the image and boot them")
    ap.add_argument("--debs", metavar="DIR", help="install these .debs instead of building the repository's")
    ap.add_argument("--no-debs", action="store_true",
                    help="no packages: build module/ in the guest and load it (debugging the flow)")
    ap.add_argument("--share", metavar="DIR", help="exec: folder copied into the guest (cwd of CMD) and back")
    ap.add_argument("--net", action="store_true", help="give the guest QEMU's user network")
    ap.add_argument("--smp", type=int, default=None, help="vCPUs (default 2; bench and demo 1)")
    ap.add_argument("--mem", type=int, default=2048, help="guest memory in MiB (default 2048)")
    ap.add_argument("--timeout", type=int, default=None, help="time-out of the job stage in seconds")
    ap.add_argument("--no-icount", action="store_true", help="bench, demo: plain TCG instead of -icount")
    ap.add_argument("--cpus", type=int, default=None, metavar="N",
                    help="bench: the contention rows on N vCPUs (2..8), still counting instructions: QEMU runs "
                    "the vCPUs in turn on one host thread, so the figures repeat")
    ap.add_argument("--no-i386", action="store_true",
                    help=f"test: skip the 32-bit (compat ABI: {arches.get().compat} on {arches.DEFAULT}) build "
                    "of the suite, which runs after the 64-bit one")
    ap.add_argument("--append", default="", help="extra kernel command line")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the image even if the cached one is fresh")
    ap.add_argument("--disk-boot", action="store_true",
                    help="boot our image from its disk, through the machine's firmware and the image's GRUB "
                    "(the row's boot: BIOS or UEFI), as a user's machine boots, instead of its kernel and initrd given "
                    "to QEMU")
    ap.add_argument("--suites", help="matrix: comma-separated subset of suites")
    ap.add_argument("--arches", metavar="ARCH,...",
                    help="matrix: also these architectures (all: every one that boots but --arch's: "
                    f"{', '.join(n for n in arches.guest_names() if n != arches.DEFAULT)}): the smoke test and the "
                    "suite in initramfs guests on every suite that has them, and the cloud rows (packages by apt, "
                    f"DKMS in the guest) of those with cloud guests ({', '.join(arches.guest_names('cloud'))}); "
                    "--suites: on those suites only")
    ap.add_argument("--arches-only", action="store_true", help="matrix: only the rows of --arches, not --arch's "
                    "cloud rows")
    ap.add_argument("--seeds", type=int, default=None,
                    help="test, matrix: walks of the differential test against the in-tree driver "
                         f"({', '.join(suites.in_tree_names())}; default 1000)")
    ap.add_argument("--secure-boot", choices=["enrolled", "not-enrolled"], default=None,
                    help="boot the suite's Secure Boot image through UEFI firmware with Secure Boot on, "
                    "DKMS's signing key enrolled in MokList or not (demo, test, exec, shell, image)")
    ap.add_argument("-v", "--verbose", action="store_true", help="show the job's console output")
    o = ap.parse_args(argv)
    req = Request.from_args(o, cmd_args)
    if o.job == "image":
        find_image(req.suite, req.kernel_debs, rebuild=req.rebuild, secure_boot=bool(req.secure_boot), arch=req.arch)
        return 0
    if o.job == "matrix":
        names = []
        for a in (o.arches or "").split(","):
            if a == "all":
                names += [n for n in arches.guest_names() if n != req.arch.name]
            elif a:
                names.append(arches.for_guests(a).name)
        if o.arches_only and not names:
            raise Usage("--arches-only needs --arches")
        return job_matrix(req, o.suites, list(dict.fromkeys(names)), cloud_rows=not o.arches_only)
    if o.job == "secure-boot":
        return job_secure_boot(req)
    return job_single(req)
