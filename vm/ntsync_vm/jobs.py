"""THE job table: every job a guest of ntsync runs, and the commands made of them, as data.

A Job row says what the job is: its KIND (how its guest boots and reports), its guest script
(under vm/guest/), its default suite, its time-out, what the host puts on its input, whether
its figures must repeat (one vCPU counting instructions), whether ./check runs it (on the
suites whose suite rows name it), and its help line. The command lines (cloud.py, boot.py),
their help texts, `ntsync-vm suites --job` (./check's lists) and the matrix read it; a host
test fails when a row's script is missing or a script has no row. Adding a job is one row
here plus its script.

Kinds:
  cloud      a Debian cloud guest: vm/guest/guest.sh installs our packages and runs
             vm/guest/jobs/NAME.sh (cloud.py)
  initramfs  a kernel booted with an initramfs whose /init is vm/guest/init/NAME.sh (boot.py)
  testbed    a cloud guest as autopkgtest's testbed: vm/guest/autopkgtest.sh (lifecycle.py)
  scenario   a cloud guest living a part of a Debian machine's life, across reboots:
             vm/guest/scenario.sh runs vm/guest/scenarios/NAME.sh (lifecycle.py --scenario)
  command    several guests in one command (cloud.py): no script of its own
  host       runs on the host or in a kernel root, no guest (./check)
  tool       one of Debian's own tools run on our packages (debtools.py): piuparts in chroots,
             autopkgtest with its QEMU runner, reprotest; no script of ours
"""

from dataclasses import dataclass

from .util import VM_DIR, Usage

KINDS = ("cloud", "initramfs", "testbed", "scenario", "command", "host", "tool")
# Default suites by role, resolved by suites.default_for(): the default suite, the first one
# with the in-tree driver (bench compares both), the debug kernel of build-kernel, its gcov
# kernel (coverage).
ROLES = ("default", "in-tree", "debug", "gcov")
# What a job's input carries besides the job's script:
#   debs     our packages (apt installs them; DKMS builds the module in the guest)
#   compat   the suite as static programs of the architecture's compat ABI (arches.py)
#   share    the user's folder (exec --share)
#   figures  the last real Wine figures ($NTSYNC_CACHE/wine/winbench.txt), when there are any
#   wine     a Wine build and its tests (vm/ntsync-vm wine)
#   module   the module built for the boot's kernel (or the kernel's own, --in-tree)
#   static   the static guest programs of the architecture (meson/build-static)
#   intree   the kernel's own ntsync.ko beside ours
#   next     a newer version of our packages built from this tree (VERSION+test1), as a
#            second signed repository
#   archive  Debian's archive through QEMU's user network
#   older-kernel   the suite's previous point release of its kernel (the meta-packages'
#            older version in the archive), which the guest installs and boots first
#   pinned-kernel  the newer kernel of the same release from the suite table's pinned row
#            (trixie-backports' 7.x): its sources line and packages
#   release  the last release's packages (the newest tag vX.Y.Z below VERSION, built from
#            the tag's own tree), as a second signed repository
NEEDS = ("debs", "compat", "share", "figures", "wine", "module", "static", "intree", "next", "archive",
         "older-kernel", "pinned-kernel", "next-release", "release")


@dataclass(frozen=True)
class Job:
    name: str
    kind: str
    help: str
    default: str = "default"    # a ROLE, or a suite of the suite table
    timeout: int = None         # seconds: the job stage (cloud) or the whole boot (initramfs)
    needs: tuple = ()
    timed: bool = False         # one vCPU counting guest instructions (-icount): figures repeat
    echo: bool = False          # the job's output shown as it comes
    interactive: bool = False   # the console is the user's terminal
    cli: bool = True            # on the command line (False: run by another job or command)
    check: bool = False         # ./check runs it on the suites whose rows name it

    @property
    def script(self):
        """The guest script (a Path), or None for kinds without one."""
        sub = {"cloud": "jobs/{}.sh", "initramfs": "init/{}.sh", "testbed": "autopkgtest.sh",
               "scenario": "scenarios/{}.sh"}.get(self.kind)
        return VM_DIR / "guest" / sub.format(self.name) if sub else None


JOBS = (
    Job("demo", "cloud", "fresh guest, packages installed with apt, /dev/ntsync shown working, quick benchmark",
        needs=("debs", "figures"), timed=True, echo=True),
    Job("test", "cloud", "the installed conformance suite (ntsync-run-tests); prints 'N passed, N failed, "
        "N skipped'", needs=("debs", "compat"), check=True),
    Job("bench", "cloud", "ntsync-bench in a 1-vCPU icount guest; on a kernel with the in-tree driver, it vs "
        "ours, with ratios", default="in-tree", timeout=3600, needs=("debs",), timed=True, echo=True),
    Job("exec", "cloud", "run a command in a guest:  ntsync-vm exec [--share DIR] -- CMD ARGS...",
        needs=("share",), echo=True),
    Job("shell", "cloud", "interactive root shell on the guest's serial console", interactive=True),
    Job("sb-refused", "cloud", "Secure Boot, DKMS's key not enrolled: the module refused, the fix explained",
        needs=("debs",), echo=True, cli=False),
    Job("wine", "cloud", "Wine's own tests or ntsync-winbench with and without the driver (ntsync-vm wine)",
        timeout=7200, needs=("wine",), cli=False),
    Job("wine-links", "cloud", "each link of 'is this Wine process using ntsync?' broken in turn, a real and a "
        "stub Wine build, ntsync-info --pid judged (ntsync-vm wine --links)", timeout=5400, needs=("wine",),
        cli=False),
    Job("matrix", "command", "test on every suite with an image (with both drivers where the kernel has one), "
        "one table"),
    Job("secure-boot", "command", "both Secure Boot cases of --suite in a UEFI Secure Boot guest (OVMF, signed "
        "shim): DKMS's key not enrolled (module refused, the fix explained), then enrolled (the suite)",
        check=True),
    Job("image", "command", "just build (or refresh) the image of --suite"),
    Job("smoke", "initramfs", "insmod, ntsync-smoke, rmmod (--in-tree: the kernel's own driver)",
        timeout=300, needs=("module", "static"), check=True),
    Job("suite", "initramfs", "the conformance suite from the static programs (every test-*), then those of "
        "the architecture's compat ABI (32-bit, the compat path) where it has one; per ABI 'N passed, N failed, "
        "N skipped'", timeout=2700, needs=("module", "static", "compat")),
    Job("bench", "initramfs", "ntsync-bench with the kernel's driver, then ours, same boot, one vCPU under "
        "-icount; the comparison runs in the guest", default="in-tree", timeout=1800,
        needs=("module", "static", "intree"), timed=True),
    Job("fuzz", "initramfs", "tests/fuzz/guest-abuse.sh: the fuzzers, the abuse tests, the linearizability "
        "checker, 64-bit and compat, optionally the suite and (--memcg) the concurrent fuzzer at a memory "
        "cgroup's limit", default="debug", needs=("module", "static")),
    Job("coverage", "initramfs", "line and branch coverage of module/ntsync.c per test group on the gcov kernel, "
        "and mainline's driver under its kselftest (ntsync-vm coverage)", default="gcov", timeout=3600,
        needs=("module", "static", "compat"), cli=False),
    Job("upstream", "initramfs", "mainline's driver from linux-source-7.3 as shipped and with upstream/'s "
        "series, each judged by the selftest with the series' new cases and our suite (NTSYNC_STRICT=1)",
        default="trixie-backports", timeout=1800, needs=("static",)),
    Job("lifecycle", "testbed", "the package's autopkgtests (debian/tests) in a cloud guest",
        timeout=3600, needs=("debs",)),
    # The scenarios (`ntsync-vm lifecycle --scenario NAME|all`), in the order `all` runs them.
    Job("upgrade-in-use", "scenario", "apt-get install of a newer version, then apt-get remove, while a "
        "process holds /dev/ntsync and objects; a reboot between", timeout=2400, needs=("debs", "next")),
    Job("kernel-update", "scenario", "a machine on the previous point release of the suite's kernel with ours; "
        "apt upgrade brings the new kernel, DKMS builds, reboot into it, the suite; the old kernel purged",
        timeout=5400, needs=("debs", "archive", "older-kernel")),
    Job("backports-kernel", "scenario", "trixie on 6.12 with ours, trixie-backports' 7.x kernel installed and "
        "booted (the in-tree driver serves), then 6.12 again (ours is back)", timeout=5400,
        needs=("debs", "archive", "pinned-kernel")),
    Job("release-upgrade", "scenario", "bookworm on 6.1 with ours and a process holding /dev/ntsync moved to "
        "trixie as the release notes say (sources changed, apt full-upgrade); 6.12 booted, DKMS's gcc-14 build "
        "loaded, the suite; bookworm's kernel autoremoved with its build", default="bookworm", timeout=7200,
        needs=("debs", "archive", "next-release")),
    Job("upgrade-from-release", "scenario", "the last release (its tag vX.Y.Z, built from the tag's tree) "
        "installed, loaded and in use, then apt upgrade to this tree's version: DKMS swaps the builds, the "
        "holder goes on, the reboot brings the new module, the suite", timeout=3600, needs=("debs", "release")),
    Job("piuparts", "tool", "piuparts on bookworm and trixie: install and purge, upgrade from the previous "
        "version and purge, DKMS building in the chroot against the suite's kernel headers", timeout=3600),
    Job("autopkgtest", "tool", "debian/tests run by autopkgtest itself, autopkgtest-virt-qemu in the suite's "
        "testbed image (setup-testbed), beside ntsync-vm lifecycle", timeout=5400),
    Job("reprotest", "tool", "two builds of the packages differing in build path, time and umask: identical "
        ".debs (debian/reprotest); --quick: one build against the guests' packages (./check runs that)",
        timeout=3600),
    Job("wine-gate", "host", "Wine's <linux/ntsync.h> gate against the suite's own kernel headers",
        check=True),
)


def _check():
    """The table's own rules (a host test calls it): kinds, roles, needs, unique names."""
    seen = set()
    for j in JOBS:
        assert j.kind in KINDS, j
        assert set(j.needs) <= set(NEEDS), j
        assert (j.kind, j.name) not in seen, f"two rows for {j.kind} job {j.name}"
        seen.add((j.kind, j.name))


def of_kind(*kinds, cli_only=False):
    return [j for j in JOBS if j.kind in kinds and (j.cli or not cli_only)]


def get(name, *kinds):
    """The row of job NAME among KINDS (the first: cloud before command before initramfs)."""
    for k in kinds or KINDS:
        for j in JOBS:
            if j.name == name and j.kind == k:
                return j
    raise Usage(f"unknown job '{name}': use one of {', '.join(j.name for j in JOBS if j.kind in (kinds or KINDS))}")


def checked():
    """The jobs ./check runs (their names, in table order)."""
    out = []
    for j in JOBS:
        if j.check and j.name not in out:
            out.append(j.name)
    return out


def epilog(kinds):
    """The 'jobs:' part of a help text: one line a job of KINDS."""
    rows = [j for j in JOBS if j.kind in kinds and j.cli]
    width = max(len(j.name) for j in rows) + 2
    return "\n".join(f"  {j.name:<{width}}{j.help}" for j in rows)


def scripts():
    """Every guest script under vm/guest/ that a row could own (lib.sh and guest.sh are the
    drivers the scripts run under, not jobs)."""
    g = VM_DIR / "guest"
    return sorted(list((g / "jobs").glob("*.sh")) + [p for p in (g / "init").glob("*.sh") if p.name != "lib.sh"]
                  + list((g / "scenarios").glob("*.sh")) + [g / "autopkgtest.sh"])
