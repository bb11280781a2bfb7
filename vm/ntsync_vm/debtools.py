"""Debian's own tools on our packages, each a command of vm/ntsync-vm:

  piuparts     piuparts itself, on each suite (default bookworm and trixie): install and purge
               this tree's packages, then install the previous version (--old-version 0.9.0,
               from a local repository piuparts' apt sees) and upgrade it to this one, in a
               chroot from a minbase tarball (roots.base_tarball). The suite's cloud kernel
               headers are installed first (vm/piuparts/pre_install_ntsync_kernel_headers, as
               piuparts' own pre_install_extras does for a *dkms package), so DKMS builds the
               module in the chroot and the purge must take all of it away. piuparts runs
               without CAP_SYS_MODULE (capsh): no maintainer script in a chroot can load a
               module into this machine's kernel.
  autopkgtest  autopkgtest itself runs debian/tests on this tree's packages with its QEMU
               runner (autopkgtest-virt-qemu) in the suite's testbed image: the project's
               cloud image with autopkgtest's setup-testbed run in it (image.py, testbed=True),
               what autopkgtest-build-qemu makes without vmdb2 and loop devices. One guest at
               a time (the guest lock); TCG where there is no /dev/kvm.
  reprotest    debian/reprotest: two builds differing in build path, time and umask give
               identical .debs.

Each prints one line a check and 'N passed, N failed, N skipped'; exit 0 iff nothing failed.
Library code raises Usage/Failed/Failure; cli.py exits."""

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from . import arches, jobs, lock, roots, suites
from .cloud import build_debs
from .util import REPO, VM_DIR, Failure, Usage, cache, ensure_host_tools, fmt_secs, require_root, say, tail_text

PIUPARTS_SCRIPTS = VM_DIR / "piuparts"
DEBIAN_SCRIPTS = Path("/etc/piuparts/scripts")  # piuparts' own custom scripts, as piuparts.debian.org uses them
# ... but one: bookworm's piuparts (1.1.7) diverts /bin/sync to make dpkg faster, which on
# trixie's merged /usr replaces coreutils' /usr/bin/sync, and debsums then fails the run
# ("debsums reports modifications inside the chroot: /usr/bin/sync"); force-unsafe-io is speed only.
SKIPPED_DEBIAN_SCRIPTS = ("post_setup_force-unsafe-io",)
# What systemd leaves behind when piuparts purges it: on trixie the kernel headers depend on
# the kernel image, which brings initramfs-tools, udev and systemd into the minbase chroot with
# them (pre_install_ntsync_kernel_headers), and their purge leaves these, none of them a file
# of ours (bookworm's piuparts 1.1.7 does not know systemd 257's leftovers; bookworm's headers
# bring no systemd). piuparts --ignore-regex, each anchored: nothing else is hidden.
SYSTEMD_LEFTOVERS = (r"^/etc/default/locale$", r"^/etc/vconsole\.conf$", r"^/root/\.ssh/$", r"^/usr/lib/udev/$",
                     r"^/var/cache/debconf/tmp\.ci/$", r"^/var/(cache|lib|log)/private/$")
DEFAULT_SUITES = ("bookworm", "trixie")


def _debs(folder, what):
    """The installable .debs of FOLDER (no -dbgsym), or Usage."""
    debs = sorted(p for p in Path(folder).glob("*.deb") if "-dbgsym_" not in p.name)
    if not debs:
        raise Usage(f"{what} {folder}: no .deb files there")
    return debs


def _old_debs(old, old_version):
    """The previous version's packages: --old DIR, or built from this tree as OLD_VERSION
    (lifecycle.old_debs, the same cached build the lifecycle upgrades from); [] for 'none'."""
    if old:
        debs = _debs(old, "--old")
        if not any(p.name.startswith("ntsync-dkms_") for p in debs):
            raise Usage(f"--old {old}: no ntsync-dkms_*.deb there")
        return debs
    if old_version == "none":
        return []
    from .lifecycle import old_debs
    return _debs(old_debs(old_version), f"version {old_version}:")


def flat_repo(debs, folder):
    """DEBS as a flat apt repository in FOLDER (Packages, no signature: `[trusted=yes]`)."""
    ensure_host_tools(["apt-ftparchive"])
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for d in debs:
        shutil.copy2(d, folder / d.name)
    r = subprocess.run(["apt-ftparchive", "packages", "."], cwd=folder, capture_output=True, text=True)
    if r.returncode:
        raise Failure(f"apt-ftparchive packages {folder}: {r.stderr.strip()}")
    (folder / "Packages").write_text(r.stdout)
    return folder


@dataclasses.dataclass(frozen=True)
class PiupartsRequest:
    suites: tuple
    debs: Path = None          # None: built from this tree
    old: Path = None           # None: built as old_version
    old_version: str = "0.9.0"  # 'none': no upgrade test
    timeout: int = 3600


def piuparts_from_args(argv):
    job = jobs.get("piuparts", "tool")
    ap = argparse.ArgumentParser(prog="ntsync-vm piuparts", description=job.help,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("suites", nargs="*", metavar="SUITE",
                    help=f"{suites.describe(image_only=True)} (default {' '.join(DEFAULT_SUITES)})")
    ap.add_argument("--debs", metavar="DIR", help="the packages under test (default: built from this tree)")
    ap.add_argument("--old", metavar="DIR", help="the previous version's packages (default: built, --old-version)")
    ap.add_argument("--old-version", default="0.9.0",
                    help="version of the previous packages (0.9.0); 'none': no upgrade test")
    ap.add_argument("--timeout", type=int, default=job.timeout // 60, help=f"minutes a suite ({job.timeout // 60})")
    o = ap.parse_args(argv)
    names = tuple(suites.resolve(s) for s in (o.suites or DEFAULT_SUITES))
    for n in names:
        if suites.SUITES[n].pin:
            raise Usage(f"suite {n}: its kernel comes from {suites.SUITES[n].pin.lstrip('/')}; piuparts tests "
                        "a release as its archive has it (use bookworm or trixie)")
    for opt, d in (("--debs", o.debs), ("--old", o.old)):
        if d and not Path(d).is_dir():
            raise Usage(f"{opt} {d}: not a folder")
    if o.timeout < 1:
        raise Usage(f"--timeout wants minutes, not {o.timeout}")
    return PiupartsRequest(suites=names, debs=Path(o.debs) if o.debs else None, old=Path(o.old) if o.old else None,
                           old_version=o.old_version, timeout=o.timeout * 60)


def judge_piuparts(log_text, rc, upgrade):
    """[(verdict, check, detail)] of one piuparts log."""
    out = []
    checks = [("Installation and purging test.", "install and purge")]
    if upgrade:
        checks.append(("Installation, upgrade and purging tests.", "upgrade from the previous version and purge"))
    for phrase, name in checks:
        if f"PASS: {phrase}" in log_text:
            out.append(("PASS", name, ""))
        elif f"FAIL: {phrase}" in log_text:
            out.append(("FAIL", name, ""))
        else:
            out.append(("FAIL", name, "no verdict (piuparts stopped before it)"))
    if upgrade and "Can't test upgrade" in log_text:
        out[-1] = ("FAIL", checks[-1][1], "piuparts could not test the upgrade: the previous version was not "
                   "known to apt in the chroot")
    if rc and all(v == "PASS" for v, _, _ in out):
        out.append(("FAIL", "piuparts' exit status", f"{rc}"))
    # What piuparts reports and names: the first lines of each problem, for the table.
    problems = [line for line in log_text.splitlines()
                if re.search(r"\b(ERROR|FAIL):", line) and "DEBUG" not in line][:8]
    return out, problems


def piuparts_warnings(log_text):
    """piuparts' warnings (WARN: and the lines under each, indented), each once: not failures
    to piuparts, but a clean run has none."""
    out, cur = [], None
    for line in log_text.splitlines():
        if re.search(r"\bWARN: ", line):
            cur = [line.split("WARN: ", 1)[1].strip()]
            out.append(cur)
        elif cur is not None and line.startswith("  "):
            cur.append(line.strip())
        else:
            cur = None
    seen = []
    for w in out:
        text = " ".join(w)
        if text not in seen:
            seen.append(text)
    return seen


def run_piuparts(req):
    """piuparts on each suite of REQ: (lines, passed, failed, skipped)."""
    require_root("piuparts (chroots, as root)")
    ensure_host_tools(["piuparts", "capsh", "apt-ftparchive", "mmdebstrap"])
    new = _debs(req.debs, "--debs") if req.debs else [p for p in build_debs() if "-dbgsym_" not in p.name]
    old = _old_debs(req.old, req.old_version)
    lines, passed, failed = [], 0, 0
    for name in req.suites:
        s = suites.get(name, quiet=True)
        base = roots.base_tarball(name)
        work = cache() / "piuparts" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
        work.mkdir(parents=True)
        for oldrun in sorted(p for p in work.parent.glob(f"{name}-2*") if p.is_dir())[:-4]:
            shutil.rmtree(oldrun, ignore_errors=True)
        logf = work / "piuparts.log"
        debian_scripts = work / "scripts-debian"
        debian_scripts.mkdir()
        for f in DEBIAN_SCRIPTS.iterdir():
            if f.name not in SKIPPED_DEBIAN_SCRIPTS:
                shutil.copy2(f, debian_scripts / f.name)
        headers = [p for p in s.kernel_packages() if p.startswith("linux-headers-")]
        mirror = s.sources[0].split()[1]
        cmd = ["piuparts", "--basetgz", str(base), "--distribution", s.release, "--mirror", mirror,
               *[a for line in s.sources[1:] for a in ("--extra-repo", line)],
               "--no-check-valid-until", "--tmpdir", str(work), "--log-file", str(logf),
               "--scriptsdir", str(debian_scripts), "--scriptsdir", str(PIUPARTS_SCRIPTS),
               *[a for rx in SYSTEMD_LEFTOVERS for a in ("--ignore-regex", rx)]]
        if old:
            repo = flat_repo(old, work / "old")
            cmd += ["--bindmount", str(repo), "--extra-repo", f"deb [trusted=yes] file://{repo} ./"]
        else:
            cmd += ["--no-upgrade-test"]
        cmd += [str(d) for d in new]
        env = dict(os.environ, NTSYNC_PIUPARTS_HEADERS=" ".join(headers))
        say(f"piuparts on {name}: {len(new)} debs" + (f", upgrading from {old[0].name.split('_')[1]}" if old else "")
            + f", {' '.join(headers)} first; log {logf}")
        t = time.monotonic()
        # Without CAP_SYS_MODULE in the bounding set: a maintainer script that ran modprobe or
        # rmmod in the chroot would fail instead of reaching this machine's kernel.
        full = ["capsh", "--drop=cap_sys_module", "--", "-c", 'exec "$0" "$@"', *cmd]
        try:
            r = subprocess.run(full, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=req.timeout)
            rc = r.returncode
        except subprocess.TimeoutExpired:
            rc = 124
        secs = time.monotonic() - t
        text = logf.read_text(errors="replace") if logf.exists() else ""
        if not text:
            raise Failure(f"piuparts on {name} wrote no log ({logf}); exit {rc}")
        verdicts, problems = judge_piuparts(text, rc, bool(old))
        for verdict, check, detail in verdicts:
            lines.append(f"{verdict} piuparts {name}: {check}" + (f" ({detail})" if detail else ""))
            passed += verdict == "PASS"
            failed += verdict == "FAIL"
        built = re.findall(r"ntsync-dkms: (Linux \S+: ntsync \S+ built and installed by DKMS\.)", text)
        lines.append(f"  {name}: {fmt_secs(secs)}; DKMS in the chroot: {built[0] if built else 'nothing built'}")
        warnings = piuparts_warnings(text)
        lines += [f"  warning: {w[:300]}" for w in warnings] or ["  no warnings"]
        if any(v == "FAIL" for v, _, _ in verdicts):
            lines += [f"  | {p[:200]}" for p in problems] or [f"  last lines of {logf}:\n{tail_text(logf, 15)}"]
    return lines, passed, failed, 0


def piuparts_main(argv):
    lines, passed, failed, skipped = run_piuparts(piuparts_from_args(argv))
    print("\n".join(lines))
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 else 1


@dataclasses.dataclass(frozen=True)
class AutopkgtestRequest:
    suite: str
    tests: tuple = ()          # --test NAME...: only these (autopkgtest --test-name)
    debs: Path = None          # None: built from this tree
    timeout: int = 5400        # seconds for the whole autopkgtest run
    boot_timeout: int = 900    # seconds autopkgtest-virt-qemu waits for a (re)boot: TCG is slow
    ram: int = 2048
    cpus: int = 2


def autopkgtest_from_args(argv):
    job = jobs.get("autopkgtest", "tool")
    ap = argparse.ArgumentParser(prog="ntsync-vm autopkgtest", description=job.help,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--suite", default=suites.DEFAULT, help=f"{suites.describe(image_only=True)} "
                    f"(default {suites.DEFAULT})")
    ap.add_argument("--debs", metavar="DIR", help="the packages under test (default: built from this tree)")
    ap.add_argument("--test", action="append", default=[], help="run only this test of debian/tests/control "
                    "(repeatable)")
    ap.add_argument("--timeout", type=int, default=job.timeout // 60, help=f"minutes for the run ({job.timeout // 60})")
    ap.add_argument("--boot-timeout", type=int, default=900, help="seconds a guest (re)boot may take (900: TCG)")
    o = ap.parse_args(argv)
    suite = suites.resolve(o.suite, image_only=True)
    if o.debs and not Path(o.debs).is_dir():
        raise Usage(f"--debs {o.debs}: not a folder")
    if o.timeout < 1 or o.boot_timeout < 30:
        raise Usage("--timeout wants minutes (at least 1), --boot-timeout seconds (at least 30)")
    from .lifecycle import parse_control
    known = [n for n, _ in parse_control(REPO / "debian/tests/control")]
    unknown = set(o.test) - set(known)
    if unknown:
        raise Usage(f"--test {', '.join(sorted(unknown))}: not in debian/tests/control ({', '.join(known)})")
    return AutopkgtestRequest(suite=suite, tests=tuple(o.test), debs=Path(o.debs) if o.debs else None,
                              timeout=o.timeout * 60, boot_timeout=o.boot_timeout)


def source_copy(dest):
    """The tree as git sees it (tracked and new files) in DEST: the source autopkgtest copies
    into the testbed (its debian/tests), without build output or .git."""
    from .util import source_files
    shutil.rmtree(dest, ignore_errors=True)
    for f in source_files():
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, dest / f, follow_symlinks=False)
    return dest


AUTOPKGTEST_EXIT = {0: "all tests passed", 2: "some tests skipped, none failed", 4: "a test failed",
                    6: "a test failed, some skipped", 8: "no tests ran", 12: "the packages could not be installed",
                    14: "the packages could not be installed and a test failed", 16: "the testbed failed",
                    20: "autopkgtest failed (usage or internal error)"}


def judge_autopkgtest(summary, rc):
    """(lines, passed, failed, skipped) from autopkgtest's summary file and exit status."""
    lines, passed, failed, skipped = [], 0, 0, 0
    for line in summary.splitlines():
        m = re.match(r"^(\S+)\s+(PASS|FAIL|SKIP|FLAKY|NEUTRAL)\b\s*(.*)$", line)
        if not m:
            continue
        name, verdict, detail = m.groups()
        verdict = {"FLAKY": "FAIL", "NEUTRAL": "SKIP"}.get(verdict, verdict)
        lines.append(f"{verdict} autopkgtest {name}" + (f": {detail}" if detail else ""))
        passed += verdict == "PASS"
        failed += verdict == "FAIL"
        skipped += verdict == "SKIP"
    if not lines:
        lines.append(f"FAIL autopkgtest: no test result (exit {rc}: {AUTOPKGTEST_EXIT.get(rc, 'unknown')})")
        failed += 1
    elif rc not in (0, 2) and not failed:
        lines.append(f"FAIL autopkgtest exit {rc}: {AUTOPKGTEST_EXIT.get(rc, 'unknown')}")
        failed += 1
    return lines, passed, failed, skipped


def run_autopkgtest(req):
    """autopkgtest with autopkgtest-virt-qemu on REQ's suite: (lines, passed, failed, skipped)."""
    from .image import find_image
    require_root("autopkgtest (the testbed image is built as root)")
    arch, host = arches.get(), arches.host()
    if host is None or host.name != arch.name:
        raise Usage(f"autopkgtest-virt-qemu runs a testbed of this host's architecture; the testbed images "
                    f"are {arch.name}, this host is {os.uname().machine}")
    ensure_host_tools(["autopkgtest", "autopkgtest-virt-qemu", "qemu-img", arch.qemu.binary])
    new = _debs(req.debs, "--debs") if req.debs else [p for p in build_debs() if "-dbgsym_" not in p.name]
    paths, info = find_image(req.suite, testbed=True)
    work = cache() / "autopkgtest" / f"{req.suite}-{time.strftime('%Y%m%d-%H%M%S')}"
    work.mkdir(parents=True)
    for oldrun in sorted(p for p in work.parent.glob(f"{req.suite}-2*") if p.is_dir())[:-4]:
        shutil.rmtree(oldrun, ignore_errors=True)
    src = source_copy(work / "src")
    out = work / "out"
    logf = work / "autopkgtest.log"
    accel = "kvm" if os.access("/dev/kvm", os.R_OK | os.W_OK) else "tcg"
    cmd = ["autopkgtest", "--output-dir", str(out), "--timeout-test", str(req.timeout),
           *[a for t in req.tests for a in ("--test-name", t)],
           *[str(d) for d in new], f"{src}/",
           "--", "qemu", "--timeout-reboot", str(req.boot_timeout), "--ram-size", str(req.ram),
           "--cpus", str(req.cpus), "--overlay-dir", str(work), "--show-boot", str(paths["disk"])]
    say(f"autopkgtest on {req.suite} ({info.get('kernel_release')}, {accel.upper()}: autopkgtest-virt-qemu "
        f"uses KVM when /dev/kvm exists): {len(new)} debs, image {paths['disk']}; log {logf}")
    t = time.monotonic()
    with lock.guest():
        with open(logf, "w") as lf:
            try:
                r = subprocess.run(["nice", "-n", "10", *cmd], stdout=lf, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, timeout=req.timeout + 1800)
                rc = r.returncode
            except subprocess.TimeoutExpired:
                rc = 124
    secs = time.monotonic() - t
    summary = (out / "summary").read_text(errors="replace") if (out / "summary").exists() else ""
    lines, passed, failed, skipped = judge_autopkgtest(summary, rc)
    lines.append(f"  autopkgtest ran {fmt_secs(secs)} (exit {rc}: {AUTOPKGTEST_EXIT.get(rc, 'unknown')}); "
                 f"log {logf}, artifacts {out}")
    if failed:
        lines.append(f"  last lines of {logf}:\n{tail_text(logf, 20)}")
    return lines, passed, failed, skipped


def autopkgtest_main(argv):
    lines, passed, failed, skipped = run_autopkgtest(autopkgtest_from_args(argv))
    print("\n".join(lines))
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 else 1


def reprotest_main(argv):
    """`ntsync-vm reprotest [--quick] [ARGS]`: debian/reprotest (the package's own script, so
    that it runs without the launcher too) with ARGS; its exit status. --quick: one build, varied,
    against the packages the guests install (cloud.build_debs, built when missing):
    debian/reprotest --against THAT_FOLDER."""
    script = REPO / "debian/reprotest"
    if not script.exists():
        raise Failure(f"{script} is missing; it runs reprotest on the packages")
    if "--quick" in argv:
        argv = [a for a in argv if a != "--quick"]
        if any(a.startswith("--against") for a in argv):
            raise Usage("--quick is --against the guests' packages; give one of them")
        argv = ["--against", str(build_debs()[0].parent), *argv]
    return subprocess.run(["bash", str(script), *argv]).returncode


def main(sub, argv):
    if sub == "piuparts":
        return piuparts_main(argv)
    if sub == "autopkgtest":
        return autopkgtest_main(argv)
    if sub == "reprotest":
        return reprotest_main(argv)
    raise Usage(f"unknown tool '{sub}'")
