"""THE guest loop: every guest of the project runs through guest().

guest() takes the guest lock, decides the accelerator (accel.py: probe once per boot of the
host), starts QEMU (qemu.py builds its command line; it is started nowhere else), reads the
serial console line by line and hands each line to the job's Watch (the one callback a job
gives; the marker protocol is parsed once, in console.py), stops a guest whose Watch says it
stalled, stops a guest that KVM cannot run and boots it again under TCG (the one fallback),
boots once more a guest whose kernel crashed before its job began with none of our code
loaded (console.boot_crash), and returns a Run: what happened, for the job's verdict.

The KVM probe (probe()) is a guest too: the same loop, pinned to KVM without fallback.

Module order, lowest first: util, lock, qemu (the command line), accel (the decision),
console (the protocol), run (the loop), then the jobs (boot, cloud, lifecycle, cli).
"""

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import accel as accel_mod
from . import arches
from . import console as console_mod
from . import lock, qemu
from .util import Failure, fmt_secs, say, warn


class Watch:
    """What a job watches on its guest's console. This one: the whole run within TIMEOUT
    seconds (None: no limit), nothing else. Jobs subclass it; the loop calls:

      begin(t0)             at each boot (a fallback or a second boot starts over)
      line(line, mark, now) for each console line; MARK is (key, rest) of a marker line, else
                            None; a true return stops the guest early (its reason)
      deadline(now)         (since, seconds, what): the guest stalls when NOW - SINCE > SECONDS

    KVM_SILENCE: seconds of an empty console under KVM that mean KVM cannot run the guest
    (None: accel.KVM_SILENCE_SECONDS).
    """

    kvm_silence = None

    def __init__(self, timeout=None):
        self.timeout = timeout
        self.t0 = time.monotonic()

    def begin(self, t0):
        self.t0 = t0

    def line(self, line, mark, now):
        return None

    def deadline(self, now):
        return self.t0, self.timeout, "the run"


@dataclass
class Run:
    rc: int = None                  # QEMU's exit status; 124 when the loop stopped it (stall)
    accel: str = "tcg"
    why: str = ""                   # why this accelerator
    console: Path = None
    stderr: str = ""                # QEMU's stderr
    seconds: float = 0.0            # the last boot's
    stalled: str = None             # what stalled (the Watch's name for it), or None
    stall_seconds: float = 0.0
    stopped: str = None             # the Watch's reason for stopping the guest early
    kvm_trouble: str = None         # with fallback=False: why KVM could not run the guest
    marked: bool = False            # a marker arrived (the guest's own code ran)
    crashed: list = field(default_factory=list)  # consoles of boots that crashed and were redone

    def text(self):
        return _read(self.console)

    def stall_message(self):
        return (f"{self.stalled} stalled: no progress for {fmt_secs(self.stall_seconds)} under "
                f"{self.accel.upper()} ({accel_mod.OVERRIDE} sets the accelerator); QEMU stopped. "
                f"Console log {self.console}, its tail:\n{console_mod.tail(self.console)}")


def _read(path):
    try:
        return Path(path).read_text(errors="replace")
    except (OSError, TypeError):
        return ""


def guest(m, watch=None, accel=None, fallback=True, tcg_only=False, kernels=(), take_lock=True,
          record=None, before_boot=None, stderr_to_console=False, retry_crash=True):
    """Run machine M to its end. WATCH: the job's Watch (default: no limit). ACCEL: pinned
    (the probe), else decided here (TCG_ONLY: -icount runs). KERNELS: probe KVM with these
    first. BEFORE_BOOT(): called before every boot (fresh disks for a second boot). RECORD: a
    file that gets the command line. STDERR_TO_CONSOLE: QEMU's stderr is appended to the
    console file at the end. An interactive machine keeps the terminal and is not watched."""
    watch = watch or Watch()
    with lock.guest(skip=not take_lock or m.interactive):
        if accel:
            why = "pinned by the caller"
        elif tcg_only:
            accel, why = "tcg", "the run needs TCG (-icount)"
        elif not m.arch.can_kvm():
            accel, why = "tcg", f"a guest of {m.arch.name} on a {os.uname().machine} host"
        else:
            accel, why = accel_mod.decide(list(kernels) or ([m.kernel] if m.kernel else []), say=say,
                                          probe=probe)
        if not m.interactive:
            say(f"accelerator {accel.upper()} ({why})")
        r = Run(accel=accel, why=why, console=Path(m.console))
        attempts = 0
        while True:
            attempts += 1
            if before_boot:
                before_boot()
            _boot_once(m, watch, r, record)
            if r.kvm_trouble and fallback:
                if os.environ.get("NTSYNC_ACCEL") == "kvm":
                    raise Failure(f"KVM could not run this guest ({r.kvm_trouble}); NTSYNC_ACCEL=kvm is set, "
                                  "so no fallback to TCG: unset it (or set NTSYNC_ACCEL=tcg)")
                warn(f"KVM could not run this guest ({r.kvm_trouble}); stopped it and booting it again under "
                     f"TCG; TCG is remembered for this boot of the host ({accel_mod.OVERRIDE} overrides)")
                accel_mod.remember("tcg", f"a guest failed under KVM: {r.kvm_trouble}")
                r.accel, r.why, r.kvm_trouble = "tcg", f"KVM failed this guest: {r.kvm_trouble}", None
                continue
            if (retry_crash and attempts == 1 and not r.marked and not r.stalled and not m.interactive
                    and console_mod.boot_crash(r.console)):
                crash = Path(str(r.console) + ".crash")
                crash.write_bytes(Path(r.console).read_bytes())
                r.crashed.append(crash)
                warn(f"the guest's kernel crashed while booting, before the job began and with no ntsync "
                     f"module loaded (QEMU's TCG text-patching fault, see boot_crash() in "
                     f"vm/ntsync_vm/console.py; console kept as {crash}): booting it once more")
                continue
            break
        if stderr_to_console and r.stderr.strip():
            with open(r.console, "a") as f:
                f.write("\n" + r.stderr)
        return r


def _boot_once(m, watch, r, record):
    """One boot of M under R.accel, watched; fills R."""
    console = Path(m.console)
    console.write_bytes(b"")
    err_path = console.with_name(console.name + ".qemu-stderr")
    t0 = time.monotonic()
    watch.begin(t0)
    r.rc, r.stalled, r.stopped, r.kvm_trouble, r.marked = None, None, None, None, False
    if m.interactive:
        try:
            r.rc = qemu.start(m, r.accel, record=record).wait()
        except OSError as e:
            raise Failure(f"cannot start {qemu.binary(m.arch)}: {e} (apt-get install {m.arch.qemu.package})")
        r.seconds = time.monotonic() - t0
        return
    try:
        proc = qemu.start(m, r.accel, err_path, record)
    except OSError as e:
        raise Failure(f"cannot start {qemu.binary(m.arch)}: {e} (apt-get install {m.arch.qemu.package})")
    pos, buf = 0, ""
    try:
        while True:
            rc = r.rc = proc.poll()
            try:
                with open(console, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
            except OSError:
                chunk = b""
            pos += len(chunk)
            buf += chunk.decode(errors="replace")
            *lines, buf = buf.split("\n")
            if rc is not None and buf:
                lines, buf = lines + [buf], ""
            now = time.monotonic()
            for raw in lines:
                line = raw.rstrip("\r")
                mark = console_mod.parse_mark(line)
                r.marked = r.marked or mark is not None
                why = watch.line(line, mark, now)
                if why and not r.stopped:
                    r.stopped = why
            if r.stopped:
                break
            if r.accel == "kvm" and not r.marked:
                trouble = accel_mod.kvm_trouble(_read(err_path), pos, now - t0, rc, watch.kvm_silence)
                if trouble:
                    r.kvm_trouble = trouble
                    break
            if rc is not None:
                break
            since, limit, what = watch.deadline(now)
            if limit is not None and now - since > limit:
                r.rc, r.stalled, r.stall_seconds = 124, what, limit
                break
            time.sleep(0.1 if now - t0 < 5 else 0.25)
    finally:
        qemu.stop(proc)
        r.seconds = time.monotonic() - t0
        r.stderr = _read(err_path)
        err_path.unlink(missing_ok=True)


# ------------------------------------------------------------------ the KVM probe

class _ProbeWatch(Watch):
    kvm_silence = float("inf")  # the probe's own bound judges silence (classify)

    def line(self, line, mark, now):
        return "marker" if accel_mod.MARKER in line else None


def probe(kernel, bound=None):
    """Boot KERNEL under KVM with the marker initramfs, through the loop (pinned to KVM, no
    fallback, no second boot). Returns (usable, why, seconds)."""
    from . import initramfs
    bound = accel_mod.PROBE_SECONDS if bound is None else bound
    busybox, why = initramfs.static_busybox()
    if not busybox:
        return None, why, 0.0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ntsync-accel-") as tmp:
        tmp = Path(tmp)
        initrd = tmp / "probe.cpio.gz"
        accel_mod.make_probe_initramfs(initrd, busybox)
        arch = arches.host() or arches.get()
        m = qemu.Machine(console=tmp / "console", arch=arch, name="ntsync-accel-probe", mem=256, smp=1,
                         kernel=kernel, initrd=initrd, append=f"{arch.console_arg()} panic=-1 rdinit=/init quiet",
                         rng=False)
        try:
            r = guest(m, _ProbeWatch(bound), accel="kvm", fallback=False, retry_crash=False)
        except Failure as e:
            return False, str(e), time.monotonic() - t0
        timed_out = r.stalled is not None
        usable, why = accel_mod.classify(r.text(), r.stderr, None if timed_out else r.rc, timed_out, bound)
    return usable, why, time.monotonic() - t0
