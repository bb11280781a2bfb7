"""The serial console of a guest: markers, stage time-outs, watching, boot crashes."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from . import accel as accel_mod
from . import qemu
from .util import Failure, fmt_secs, log

STAGE_TIMEOUTS = {  # seconds under TCG; NTSYNC_TIMEOUT_SCALE multiplies them
    "boot": 300,
    "install": 900,
    "install-net": 2400,
    "driver": 600,
    "job": 1200,
    "unload": 120,
    "collect": 240,
}


def timeout_for(stage, override=None):
    scale = float(os.environ.get("NTSYNC_TIMEOUT_SCALE", "1"))
    return (override or STAGE_TIMEOUTS[stage]) * scale


class KvmTrouble(Failure):
    """A guest started under KVM that KVM cannot run: boot it again under TCG."""


def tail(path, n=40):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "(no console log)"
    return "\n".join("  | " + line for line in lines[-n:])


MARK = re.compile(r"##ntsync## (\S+)(?: (.*))?")
TESTLINE = re.compile(r"^(PASS|FAIL|SKIP) \S+: ")


def watch_guest(proc, console, stages, echo_job, job_timeout, t_start, accel="tcg", qemu_stderr=None):
    """Follow the console log; enforce a time-out per stage; return timings per stage.
    Under KVM, a QEMU that reports a KVM error or a console that stays empty raises
    KvmTrouble at once (the caller boots the guest again under TCG)."""
    stage, since = "boot", time.monotonic()
    times = {}
    pos = 0
    buf = ""
    done_rc = None
    echoing = False
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    last_progress = time.monotonic()
    while True:
        try:
            with open(console, "rb") as f:
                f.seek(pos)
                chunk = f.read()
                pos += len(chunk)
        except FileNotFoundError:
            chunk = b""
        buf += chunk.decode(errors="replace")
        *lines, buf = buf.split("\n")
        for raw in lines:
            line = raw.rstrip("\r")
            m = MARK.search(line)
            if not m:
                if echoing and not line.startswith("["):
                    print("    " + line, flush=True)
                elif stage == "job":
                    t = TESTLINE.match(line)
                    if t:
                        counts[t.group(1)] += 1
                        if t.group(1) == "FAIL":
                            log(f"  {line.strip()}")
                        if time.monotonic() - last_progress > 15:
                            last_progress = time.monotonic()
                            # (not in the "N passed, N failed" form: that is the final line's)
                            log(f"  tests so far: PASS {counts['PASS']}, FAIL {counts['FAIL']}, "
                                f"SKIP {counts['SKIP']}")
                continue
            kind, rest = m.group(1), (m.group(2) or "").strip()
            now = time.monotonic()
            if kind == "stage":
                name = rest.split()[0]
                times[stage] = now - since
                if stage == "boot":
                    times["boot_to_job"] = now - t_start
                    log(f"guest up after {fmt_secs(now - t_start)} ({rest})")
                if name == "job":
                    times["boot_to_first_test"] = now - t_start
                stage, since = ("boot-script" if name == "start" else name), now
                echoing = echo_job and name == "job"
                label = {"install": "installing packages", "driver": "loading the driver",
                         "job": "running the job", "unload": "modprobe -r ntsync",
                         "collect": "collecting results"}.get(name)
                if label:
                    log(label)
            elif kind == "info":
                log(rest)
            elif kind == "done":
                times[stage] = now - since
                done_rc = rest
                stage, since = "poweroff", now
                echoing = False
        rc = proc.poll()
        if accel == "kvm" and stage == "boot":
            trouble = accel_mod.kvm_trouble(
                qemu_stderr.read_text(errors="replace") if qemu_stderr and qemu_stderr.exists() else "",
                pos, time.monotonic() - t_start, rc)
            if trouble:
                if rc is None:
                    qemu.stop(proc)
                raise KvmTrouble(trouble)
        if rc is not None:
            times.setdefault(stage, time.monotonic() - since)
            return times, stage, done_rc
        limit = (job_timeout if stage == "job" else
                 timeout_for(stages.get(stage, stage)) if stage in STAGE_TIMEOUTS or stage in stages else
                 timeout_for("collect"))
        if time.monotonic() - since > limit:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise Failure(f"stage '{stage}' stalled: no progress for {fmt_secs(limit)} under "
                          f"{accel.upper()} ({accel_mod.OVERRIDE} sets the accelerator); QEMU stopped. "
                          f"Console log {console}, its tail:\n{tail(console)}")
        time.sleep(0.5)


SUMMARY = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")


class BootCrash(Failure):
    """The guest kernel died before the job script started, with none of our code loaded."""

    def __init__(self, msg, console):
        super().__init__(msg)
        self.console = console


def boot_crash(console):
    """A kernel panic or oops on the console during boot, with no ntsync module among the
    modules it lists. Multi-threaded TCG (QEMU 7.2 here) now and then runs a stale int3 that
    the kernel's text patching left behind (seen: "Oops: int3" in sched_clock_cpu, 1 boot in ~15):
    QEMU's fault, not the driver's, and the cue to boot again."""
    try:
        text = Path(console).read_text(errors="replace")
    except OSError:
        return False
    if not re.search(r"Kernel panic - not syncing|\bOops: ", text):
        return False
    linked = re.findall(r"Modules linked in:(.*)", text)
    return not any(re.search(r"\bntsync\b", m) for m in linked) and "ntsync: " not in text


BOOT_MARK = re.compile(r"^== (\S+)(?: (.*))?$")


def clean_lines(text):
    """Console text as lines, without the serial console's carriage returns."""
    return [line.rstrip("\r") for line in text.replace("\r\n", "\n").split("\n")]


def boot_marks(text):
    """The '== KEY REST' lines an initramfs job's /init prints: [(key, rest)]."""
    out = []
    for line in clean_lines(text):
        m = BOOT_MARK.match(line)
        if m:
            out.append((m.group(1), (m.group(2) or "").strip()))
    return out


def mark(marks, key):
    """REST of the last KEY mark, or None."""
    found = [rest for k, rest in marks if k == key]
    return found[-1] if found else None
