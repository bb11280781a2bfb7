"""The cloud guest jobs: demo, test, bench, exec, shell, matrix (Debian cloud images, our
packages installed by apt)."""

import argparse
import os
import re
import shlex
import shutil
import sys
import subprocess
import tempfile
import time
from pathlib import Path

from . import artifacts, gates, lock, qemu, static, suites
from . import run as run_mod
from .console import STAGE_TIMEOUTS, SUMMARY, TESTLINE, boot_crash, tail, timeout_for
from .image import find_image
from .util import REPO, Failure, cache, die, elapsed, ensure_host_tools, fmt_secs, log, repo_version, \
    run, source_files, tree_hash


def build_debs():
    """Our packages from this tree (debian/build-debs, i.e. dpkg-buildpackage -us -uc -b).
    Cached under $NTSYNC_CACHE/vm-debs/HASH, HASH being that of the files that go into them."""
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
    if (REPO / "debian/build-debs").exists():
        cmd = ["bash", str(REPO / "debian/build-debs"), "--out", str(out)]
    else:
        die("debian/build-debs is missing; it builds the packages (dpkg-buildpackage -us -uc -b)")
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


def build_i386_suite():
    """The conformance suite as static i386 executables (meson/build-static --arch i386),
    for the compat ioctl path."""
    try:
        d = static.build(["i386"]) / "i386"
    except Failure as e:
        raise Failure(f"{e}\n(ntsync-vm test --no-i386 runs the 64-bit suite alone)")
    log(f"i386 suite: {d}")
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


KERNEL_CMDLINE = "root=LABEL=ntsync-root rw console=ttyS0,115200 net.ifnames=0 panic=-1"


class StageWatch(run_mod.Watch):
    """The cloud guest's Watch: guest.sh's stages (`##ntsync## stage NAME`), each within its
    time-out (console.STAGE_TIMEOUTS; the job's own), `info` lines logged, `done rc=N`; the
    job's PASS/FAIL/SKIP lines counted as they come, its output echoed (ntsync-vm demo)."""

    LABELS = {"install": "installing packages", "driver": "loading the driver", "job": "running the job",
              "unload": "modprobe -r ntsync", "collect": "collecting results"}

    def __init__(self, stages, echo_job, job_timeout):
        super().__init__()
        self.stages, self.echo_job, self.job_timeout = stages, echo_job, job_timeout
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
        return self.since, limit, f"stage '{st}'"

    def finish(self):
        self.times.setdefault(self.stage, time.monotonic() - self.since)
        return self.times, self.stage, self.done


def run_guest(job, suite, opts, debs, image=None, echo_job=False):
    """One guest run, through run.guest() (the guest lock, KVM or TCG with the fallback, a
    second boot after a crash before the job). Returns a dict with result, summary, timings,
    paths."""
    ensure_host_tools(["qemu-system-x86_64", "qemu-img", "cloud-localds", "busybox"])
    t_start = time.monotonic()
    spec = suites.SUITES.get(suite)
    user_image = getattr(opts, "image", None)
    driver = opts.driver
    if driver == "in-tree" and user_image is None and not spec["in_tree"]:
        die(f"--driver in-tree needs a kernel with the in-tree driver; use --suite {suites.BENCH_DEFAULT} "
            f"(suite {suite} has kernel {spec['kernel']})")
    runs = cache() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-") + f"{job}-{suite}-", dir=runs))
    console = run_dir / "console.log"
    console.touch()
    artifacts.prune_runs(runs)
    net = bool(user_image) or opts.net
    share = None
    if job == "exec":
        share = Path(opts.share).resolve() if opts.share else None
    # (TCG only: qemu.argv; under KVM the guest sees virt=kvm and ignores ICOUNT)
    icount = (job in TIMED_JOBS or getattr(opts, "icount", False)) and not opts.no_icount
    env = {"JOB": job, "DRIVER": driver, "NET": int(net), "VERSION": repo_version(),
           "MODE": "debs" if debs else "src", "CMD": opts.cmd_string if job == "exec" else "",
           "SECURE_BOOT": getattr(opts, "secure_boot", None) or "",
           "SEEDS": getattr(opts, "seeds", None) or "",
           "BENCH_ARGS": BENCH_CONTENTION if job == "bench" and getattr(opts, "cpus", None) else "",
           "ICOUNT": int(icount)}
    seed = artifacts.make_seed(run_dir, f"ntsync-{suite}")
    extra = dict(getattr(opts, "extra_files", None) or {})  # name in the guest's input: host path
    if job == "test" and getattr(opts, "i386_dir", None):
        extra["i386"] = opts.i386_dir
    if job == "demo" and (cache() / "wine" / "winbench.txt").is_file():
        # real Wine's figures, from the last `ntsync-vm wine --bench` (wine.keep_figures)
        extra["wine-figures.txt"] = cache() / "wine" / "winbench.txt"
    inp = artifacts.make_input(run_dir, job, env, debs, share=share, extra=extra)
    out_img = run_dir / "out.img"
    overlay = run_dir / "disk.qcow2"
    machine = qemu.Machine(console=console, name=f"ntsync-{run_dir.name}", mem=opts.mem,
                           smp=opts.smp or (1 if job in TIMED_JOBS else 2), net=net, interactive=job == "shell",
                           icount=icount,
                           tcg_cpu=getattr(opts, "tcg_cpu", None))
    sb = getattr(opts, "secure_boot", None)
    if sb:
        # A UEFI PC with Secure Boot: the image's own shim, GRUB and kernel boot from its
        # disk; the variable store is the run's copy (with DKMS's key in MokList or not).
        base, fmt, size = Path(image["disk"]), "qcow2", None
        kernel_desc = f"{image['info']['kernel_release']}, Secure Boot, DKMS key {sb}"
    elif user_image:
        base = Path(user_image).resolve()
        fmt, size = ("qcow2" if base.read_bytes()[:4] == b"QFI\xfb" else "raw"), "16G"
        kernel_desc = "its own bootloader and kernel"
    else:
        base, fmt, size = Path(image["disk"]), "qcow2", None
        machine.kernel, machine.initrd = str(image["kernel"]), str(image["initrd"])
        machine.append = (KERNEL_CMDLINE + " " + opts.append).strip()
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

    machine.drives = [
        # bootindex 1: with -kernel QEMU's linuxboot option ROM holds 0.
        qemu.Drive(str(overlay), "qcow2", bootindex=1, opts="discard=unmap,cache=unsafe"),
        qemu.Drive(str(seed), "raw", readonly=True),
        qemu.Drive(str(inp), "raw", serial="ntsync-in", readonly=True),
        qemu.Drive(str(out_img), "raw", serial="ntsync-out"),
    ]
    smp, interactive = machine.smp, machine.interactive
    what = (f"{job} on {suite if not user_image else user_image} ({kernel_desc}), driver {driver}, "
            f"{smp} vCPU, {opts.mem} MiB{', user network' if net else ''}")
    log(f"booting: {what}")
    log(f"console log: {console}")
    stages = {"install": "install-net" if net else "install"}
    job_timeout = timeout_for("job", opts.timeout or (3600 if job == "bench" else None))
    watch = StageWatch(stages, echo_job, job_timeout)
    r = run_mod.guest(machine, watch, kernels=[] if user_image or sb else [image["kernel"]],
                      record=run_dir / "qemu.cmd", before_boot=fresh_disks)
    (run_dir / "qemu.stderr").write_text(r.stderr)
    if r.accel == "tcg" and machine.icount:
        log("the guest ran under TCG with -icount (guest time counts guest instructions)")
    if r.stalled:
        raise Failure(r.stall_message())
    times, last_stage, done = ({}, "shell", None) if interactive else watch.finish()
    total = time.monotonic() - t_start
    results = run_dir / "out"
    got = artifacts.read_results(out_img, results)
    overlay.unlink(missing_ok=True)
    res = {"job": job, "suite": suite, "driver": driver, "run_dir": str(run_dir), "console": str(console),
           "times": times, "total": total, "kernel": kernel_desc, "secure_boot": sb, "accel": r.accel,
           "notes": []}
    if done is None and not interactive and not (results / "job.rc").exists():
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
    if (results / "uname").exists():
        res["kernel"] = (results / "uname").read_text().strip()
    res["job_rc"] = int((results / "job.rc").read_text()) if (results / "job.rc").exists() else None
    if (results / "failure").exists():
        res["failure"] = (results / "failure").read_text().strip()
    problems, notes = gate_kernel_log(results, console, getattr(opts, "secure_boot", None))
    res["problems"] = problems
    res["notes"] = notes + [f"the first boot crashed before the job: {c}" for c in r.crashed]
    joblog = results / "job.log"
    res["summary"] = None
    if joblog.exists():
        for line in joblog.read_text(errors="replace").splitlines():
            m = SUMMARY.match(line.strip())
            if m:
                res["summary"] = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    res["results"] = str(results)
    return res


TARGETS = {"total_cached": 240, "boot": 90, "total_cold": 480}


def print_timings(res, image_seconds=None, whole=None, waited=None):
    """WHOLE: the run's seconds (default: since the process started); WAITED: the seconds of
    them queued for the guest lock (default: all this process queued, right when WHOLE is)."""
    t = res["times"]
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


# The jobs that print timings boot one vCPU counting guest instructions (-icount under TCG):
# their figures then repeat from run to run and machine to machine (issue 27).
TIMED_JOBS = ("bench", "demo")

# bench --cpus N: the rows where threads on several vCPUs meet (ntsync-bench --only), runs
# of 1 s: QEMU switches vCPUs every 100 ms of guest time, and 120 ms runs saw 1-2 switches
# (doc/results.md 2026-12-07: mutex spreads 17-439 % at 120 ms, 3-37 % at 1 s); --spread
# puts a row's threads each on its own vCPU, the same way in every run (on 4 vCPUs the
# wait-all and wait-any contention rows spread by up to 12 % in a boot without it, under 2 %
# with it; mutex.2 still does not settle, for the reason doc/results.md gives)
BENCH_CONTENTION = "--only mutex.,queue.,contend.,pingpong.ntsync,pingpong.futex --budget 1000 --spread"


def verdict(res):
    """Exit code and the reasons: 0 pass, 1 failed (tests or gates)."""
    reasons = list(res["problems"])
    if res.get("failure"):
        reasons.insert(0, res["failure"])
    if res["job_rc"] not in (0, None):
        reasons.insert(0, f"the job exited {res['job_rc']}")
    return (1 if reasons else 0), reasons


def report(res, image_seconds=None, timings=True, whole=None, waited=None):
    if timings:
        print_timings(res, image_seconds, whole, waited)
    for n in res["notes"]:
        log(f"note: {n}")
    code, reasons = verdict(res)
    log(f"results: {res['results']}")
    log(f"console log: {res['console']}")
    for r in reasons:
        log(f"FAIL: {r}")
    if not reasons:
        allowed = "O (every module signed: Secure Boot)" if res.get("secure_boot") else "O/E"
        log("kernel log clean (no BUG/WARNING/Oops/lockdep/KASAN/kmemleak/refcount_t), "
            f"no new taint beyond {allowed}, modprobe -r ntsync succeeded")
    return code


def prepare(opts, suite):
    """Image (unless --image) and packages. Returns (image, debs, image_seconds)."""
    image, image_seconds = None, None
    if not opts.image:
        t = time.monotonic()
        paths, info = find_image(suite, opts.kernel_debs, rebuild=opts.rebuild,
                                 secure_boot=bool(getattr(opts, "secure_boot", None)))
        if time.monotonic() - t > 30:
            image_seconds = time.monotonic() - t
        image = dict(paths, info=info)
    debs = None
    if opts.debs:
        debs = sorted(p for p in Path(opts.debs).glob("*.deb") if "-dbgsym_" not in p.name)
        if not debs:
            die(f"--debs {opts.debs}: no .deb files there")
        log(f"packages: {len(debs)} debs from {opts.debs}")
    elif not opts.no_debs:
        debs = build_debs()
    if opts.job == "test" and not opts.no_i386 and not getattr(opts, "i386_dir", None):
        d = build_i386_suite()
        opts.i386_dir = str(d) if d else None
    return image, debs, image_seconds


def job_single(opts):
    suite = opts.suite
    if opts.driver == "in-tree" and not opts.image and not suites.SUITES[suite]["in_tree"]:
        die(f"--driver in-tree: suite {suite} (kernel {suites.SUITES[suite]['kernel']}) has no in-tree ntsync; "
            f"use --suite {' or '.join(suites.in_tree_names())}")
    image, debs, image_seconds = prepare(opts, suite)
    if opts.job in ("test", "demo", "bench") and debs is None:
        die(f"job {opts.job} needs our packages: drop --no-debs")
    res = run_guest(opts.job, suite, opts, debs, image=image,
                    echo_job=opts.job in ("demo", "bench", "exec") or opts.verbose)
    if opts.job == "shell":
        if res.get("job_rc") is None:
            log(f"shell ended without ntsync-vm-exit: no end-of-job checks; console log {res['console']}")
            return 0
        log("shell ended through ntsync-vm-exit: the end-of-job checks")
        return report(res, timings=False)
    code = report(res, image_seconds)
    if opts.job == "exec":
        share = Path(res["results"]) / "share"
        if share.exists():
            log(f"the folder as the command left it: {share}")
    if opts.job == "test":
        s = res["summary"]
        if s is None:
            log("FAIL: the test runner printed no summary line")
            code = 1
        elif s[1]:
            code = 1
        line = f"{s[0]} passed, {s[1]} failed, {s[2]} skipped" if s else "0 passed, 1 failed, 0 skipped"
        print(line, flush=True)
    elif opts.job == "exec":
        if res["job_rc"] not in (0, None) and not res["problems"]:
            code = res["job_rc"] if 0 < res["job_rc"] < 256 else 1
    return code


def job_secure_boot(opts):
    """Both Secure Boot cases on one suite, in guests that boot like a Secure Boot PC (OVMF with
    Microsoft's keys, Debian's signed shim, GRUB and kernel):
      a. DKMS's key not enrolled: apt installs the packages, the kernel refuses the module,
         the postinst and ntsync-info say why and how to enroll it, nothing else breaks
         (the guest job vm/guest/jobs/sb-refused.sh);
      b. the key enrolled in MokList before boot: the module loads, signed, and the suite passes."""
    rows = []
    o = argparse.Namespace(**vars(opts))
    o.job, o.secure_boot = "test", "enrolled"
    image, debs, image_seconds = prepare(o, opts.suite)
    for case, mode, job in (("a", "not-enrolled", "sb-refused"), ("b", "enrolled", "test")):
        o.secure_boot = mode
        log(f"secure boot case {case}: DKMS's key {mode}, job {job}")
        t, w = time.monotonic(), lock.WAITED[0]
        try:
            res = run_guest(job, opts.suite, o, debs, image=image, echo_job=True)
            # Case a counts from the start (image and packages included), case b from its own
            # start: only the queueing of that stretch is left out (lock.WAITED is cumulative).
            code = report(res, image_seconds if case == "a" else None,
                          whole=None if case == "a" else time.monotonic() - t,
                          waited=None if case == "a" else lock.WAITED[0] - w)
            s = res["summary"]
            if s is None or s[1]:
                code = 1
            rows.append((case, mode, res["kernel"], s, "clean" if not res["problems"] else "; ".join(res["problems"]),
                         fmt_secs(time.monotonic() - t), "PASS" if code == 0 else "FAIL"))
        except Failure as e:
            rows.append((case, mode, suites.SUITES[opts.suite]["kernel"], None, str(e).splitlines()[0],
                         fmt_secs(time.monotonic() - t), "FAIL"))
    print()
    hdr = ("case", "DKMS key", "kernel", "passed", "failed", "skipped", "gates", "time", "result")
    table = [hdr] + [(r[0], r[1], r[2], *(map(str, r[3]) if r[3] else ("-", "-", "-")), r[4][:70], r[5], r[6])
                     for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(hdr))]
    for row in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    tot = [sum(r[3][i] for r in rows if r[3]) for i in range(3)]
    failed_rows = sum(1 for r in rows if r[6] != "PASS")
    print(f"\n{tot[0]} passed, {tot[1] + (failed_rows if not tot[1] else 0)} failed, {tot[2]} skipped", flush=True)
    return 0 if failed_rows == 0 else 1


def differential(res):
    """The differential test's verdict for a matrix row (tests/differential/README.md): the live
    comparison with the in-tree driver where the guest ran it (diff.log), else the suite's
    comparison with the recorded reference (test-diff's two cases in job.log)."""
    out = Path(res.get("results") or "/nonexistent")
    live = out / "diff.log"
    if live.exists():
        parts = []
        for line in live.read_text(errors="replace").splitlines():
            m = re.search(r"compared \d+ lines \((\d+) matrix cases, (\d+) walks\): (\d+) differences", line)
            if m:
                what = f"{m.group(1)} cases" if int(m.group(1)) else f"{m.group(2)} walks"
                parts.append(f"{what} {m.group(3)} differ")
        fails = sum(1 for line in live.read_text(errors="replace").splitlines() if line.startswith("FAIL diff:"))
        return ("live: " + ", ".join(parts) if parts else "live: no comparison") + (" FAIL" if fails else "")
    joblog = out / "job.log"
    text = joblog.read_text(errors="replace") if joblog.exists() else ""
    if re.search(r"^FAIL diff: ", text, re.M):
        return "reference: FAIL"
    if len(re.findall(r"^PASS diff: ", text, re.M)) >= 2:
        return "reference: 0 differ"
    return "-"


def job_matrix(opts):
    rows = []
    plan = suites.matrix_plan()
    if opts.suites:
        wanted = [suites.resolve(x, image_only=True) for x in opts.suites.split(",")]
        plan = [p for p in plan if p[0] in wanted]
    if not opts.debs:
        # One build of the packages for every row, even if the tree changes meanwhile.
        debs = build_debs()
        opts.debs = str(debs[0].parent)
    if not opts.no_i386 and not getattr(opts, "i386_dir", None):
        # Likewise one build of the i386 suite.
        d = build_i386_suite()
        opts.i386_dir = str(d) if d else None
    for suite, driver in plan:
        o = argparse.Namespace(**vars(opts))
        o.suite, o.driver, o.job = suite, driver, "test"
        log(f"matrix: {suite} / {driver}")
        t = time.monotonic()
        try:
            image, debs, _ = prepare(o, suite)
            res = run_guest("test", suite, o, debs, image=image)
            code, reasons = verdict(res)
            s = res["summary"]
            if s is None or s[1]:
                code = 1
            gate = "clean" if not res["problems"] else "; ".join(res["problems"])
            rows.append((suite, res["kernel"], driver, s, gate,
                         fmt_secs(time.monotonic() - t), "PASS" if code == 0 else "FAIL", res["console"],
                         differential(res)))
        except Failure as e:
            rows.append((suite, suites.SUITES[suite]["kernel"], driver, None, str(e).splitlines()[0],
                         fmt_secs(time.monotonic() - t), "FAIL", "", "-"))
    print()
    hdr = ("suite", "kernel", "driver", "passed", "failed", "skipped", "differential", "kernel log", "time",
           "result")
    table = [hdr] + [(r[0], r[1], r[2], *(map(str, r[3]) if r[3] else ("-", "-", "-")), r[8], r[4][:60], r[5],
                      r[6]) for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(hdr))]
    for row in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    tot = [sum(r[3][i] for r in rows if r[3]) for i in range(3)]
    failed_rows = sum(1 for r in rows if r[6] != "PASS")
    print(f"\n{tot[0]} passed, {tot[1] + (failed_rows if not tot[1] else 0)} failed, {tot[2]} skipped")
    return 0 if failed_rows == 0 else 1


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
        epilog="""jobs:
  demo      fresh guest, packages installed with apt, /dev/ntsync shown working, quick benchmark
  test      the installed conformance suite (ntsync-run-tests); prints 'N passed, N failed, N skipped'
  bench     ntsync-bench in a 1-vCPU icount guest; on a kernel with the in-tree driver, it vs ours, with ratios
  exec      run a command in a guest:  ntsync-vm exec [--share DIR] -- CMD ARGS...
  shell     interactive root shell on the guest's serial console
  matrix    test on every suite with an image (with both drivers where the kernel has one), one table
  secure-boot  both Secure Boot cases of --suite in a UEFI Secure Boot guest (OVMF, signed shim):
            DKMS's key not enrolled (module refused, the fix explained), then enrolled (the suite)
  image     just build (or refresh) the image of --suite
  accel     print the accelerator guests use on this host (kvm or tcg); --why says why
""" + epilog_more + """

exit codes: 0 passed, 1 failed (tests, a job command, or a kernel-log/taint/unload gate),
2 bad usage, 3 infrastructure (image build, boot, a stage that stalled).
environment: NTSYNC_CACHE (default /var/cache/ntsync), NTSYNC_ACCEL=tcg|kvm, NTSYNC_TIMEOUT_SCALE,
NTSYNC_MAX_AGE_DAYS (default 14: images, kernel roots and the debug kernels older are built again).""")
    ap.add_argument("job", choices=["demo", "test", "bench", "exec", "shell", "matrix", "image", "secure-boot"])
    ap.add_argument("--suite", default=None,
                    help=f"{suites.describe(image_only=True)}; default {suites.DEFAULT}, for bench "
                    f"{suites.BENCH_DEFAULT}")
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
                    help="test: skip the 32-bit (i386, compat ioctl) build of the suite, "
                    "which runs after the 64-bit one")
    ap.add_argument("--append", default="", help="extra kernel command line")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the image even if the cached one is fresh")
    ap.add_argument("--suites", help="matrix: comma-separated subset of suites")
    ap.add_argument("--seeds", type=int, default=None,
                    help="test, matrix: walks of the differential test against the in-tree driver "
                         f"({', '.join(suites.in_tree_names())}; default 1000)")
    ap.add_argument("--secure-boot", choices=["enrolled", "not-enrolled"], default=None,
                    help="boot the suite's Secure Boot image through UEFI firmware with Secure Boot on, "
                    "DKMS's signing key enrolled in MokList or not (demo, test, exec, shell, image)")
    ap.add_argument("-v", "--verbose", action="store_true", help="show the job's console output")
    opts = ap.parse_args(argv)
    opts.cmd = cmd_args
    opts.cmd_string = shlex.join(cmd_args) if len(cmd_args) != 1 else cmd_args[0]
    if opts.suite is None:
        opts.suite = suites.BENCH_DEFAULT if opts.job == "bench" else suites.DEFAULT
    opts.suite = suites.resolve(opts.suite, image_only=True)
    if opts.cpus is not None:
        if opts.job != "bench":
            die("--cpus: only for the bench job (vm/ntsync-vm bench --cpus N)")
        if not 2 <= opts.cpus <= 8:
            die(f"--cpus {opts.cpus}: give 2 to 8 vCPUs (1 is the plain bench)")
        if opts.smp not in (None, opts.cpus):
            die("--cpus N sets the vCPUs: drop --smp")
        opts.smp = opts.cpus
    if opts.job == "exec" and not cmd_args:
        die("exec needs a command: ntsync-vm exec [--share DIR] -- CMD ARGS...")
    if opts.job != "exec" and cmd_args:
        die(f"'-- {' '.join(cmd_args)}': only the exec job takes a command")
    if opts.share and not Path(opts.share).is_dir():
        die(f"--share {opts.share}: not a folder")
    if opts.image and not Path(opts.image).is_file():
        die(f"--image {opts.image}: no such file; pass a Debian genericcloud qcow2 "
            "(debian-13-genericcloud-amd64.qcow2 from Debian's cloud image site)")
    if opts.kernel_debs and not Path(opts.kernel_debs).is_dir():
        die(f"--kernel-debs {opts.kernel_debs}: not a folder")
    if opts.secure_boot or opts.job == "secure-boot":
        if opts.image:
            die("--image with Secure Boot: only the suite's own Secure Boot image is set up for it "
                "(signed shim and GRUB on an EFI system partition); drop --image")
        if opts.job in ("bench", "matrix"):
            die(f"--secure-boot: the {opts.job} job has no Secure Boot mode; use test, demo, exec, shell "
                "or the secure-boot job")
        if opts.secure_boot == "not-enrolled" and opts.job in ("test", "demo"):
            die(f"--secure-boot not-enrolled: the kernel refuses the module then, so {opts.job} cannot run; "
                "'ntsync-vm secure-boot' checks that case, or use exec/shell to look around")
        if opts.driver != "ours" or opts.no_debs:
            die("--secure-boot: only with our packages (DKMS signs the module): drop --driver/--no-debs")
    try:
        if opts.job == "image":
            find_image(opts.suite, opts.kernel_debs, rebuild=opts.rebuild, secure_boot=bool(opts.secure_boot))
            return 0
        if opts.job == "matrix":
            return job_matrix(opts)
        if opts.job == "secure-boot":
            return job_secure_boot(opts)
        return job_single(opts)
    except KeyboardInterrupt:
        print("ntsync-vm: interrupted", file=sys.stderr)
        return 130
