"""accel: which QEMU accelerator really runs Linux on this host: the policy, no guest loop.

Every guest of the project runs through run.guest(), which asks decide() here, so there is
one decision per boot of the host. This module boots nothing itself: the probe guest is
run.probe(), passed in to decide(). It imports qemu.py (for the binary) and nothing above it.

/dev/kvm existing proves little. Seen on machines of this project's kind:
  - QEMU dies at start: "error: failed to set MSR 0x10a to 0x69" and an assertion (exit 134);
  - QEMU starts, SeaBIOS idles happily, and the first instructions of a Linux kernel's
    decompressor stop the vCPU: "KVM internal error. Suberror: 1 ... emulation failure";
    QEMU then stays alive with the vCPU paused and the console empty;
  - KVM works (a desktop).
So the probe boots a real Linux kernel (the guest image's own, or any cached guest kernel)
with a three-file initramfs whose /init prints a marker on the serial console and powers
off, and counts KVM as usable only when the marker arrives within PROBE_SECONDS.  Anything
else (an exit, a KVM error on stderr, silence) means TCG, with one line saying why.  The
answer is remembered per boot of the host (kernel boot_id) and QEMU binary.

At run time a guest started under KVM can still fail (another kernel, another CPU model):
kvm_trouble() recognises that from QEMU's stderr and an empty console, and run.guest() then
stops QEMU, remembers TCG and boots the same guest again under TCG with a warning.

NTSYNC_ACCEL=kvm|tcg overrides all of it.
"""

import json
import os
import re
import shutil
import time
from pathlib import Path

from . import arches, qemu

MARKER = "ntsync-accel-probe: Linux reached userspace under KVM"
PROBE_SECONDS = float(os.environ.get("NTSYNC_ACCEL_PROBE_SECONDS", "20"))
# A guest under KVM prints its first console line in a second or two (GRUB or the kernel);
# one whose console stays empty this long is taken for a KVM that cannot run it.
KVM_SILENCE_SECONDS = float(os.environ.get("NTSYNC_KVM_SILENCE_SECONDS", "30"))
MEMO_NAME = "accel-probe.json"
HOST_BOOT = Path("/boot")
OVERRIDE = "NTSYNC_ACCEL=tcg|kvm"

# What QEMU prints on stderr when KVM cannot run the guest.
KVM_ERRORS = re.compile(r"KVM internal error|emulation failure|failed to set MSR|"
                        r"kvm_buf_set_msrs|kvm_arch_init_vcpu|KVM_RUN failed|"
                        r"failed to initialize kvm|Could not access KVM kernel module")


def _arch():
    """The probe's architecture: the host's (KVM runs nothing else)."""
    return arches.host() or arches.get()


def _qemu():
    return qemu.binary(_arch())


def _kvm_dev():
    # Only the harness's own tests point this elsewhere (vm/tests/test_accel.py).
    return os.environ.get("NTSYNC_KVM_DEV", "/dev/kvm")


def cache_dir():
    return Path(os.environ.get("NTSYNC_CACHE", "/var/cache/ntsync"))


def _boot_id():
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _qemu_id():
    """Which QEMU answered: a new QEMU package gets probed anew."""
    path = shutil.which(_qemu())
    if not path:
        return None
    try:
        st = os.stat(path)
        return f"{os.path.realpath(path)}:{int(st.st_mtime)}:{st.st_size}"
    except OSError:
        return path


def _memo_path():
    return cache_dir() / MEMO_NAME


def _memo():
    """{qemu id: decision} of this boot of the host (one entry per QEMU binary)."""
    try:
        saved = json.loads(_memo_path().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(saved, dict) or saved.get("boot_id") != _boot_id():
        return {}
    return saved.get("qemus") if isinstance(saved.get("qemus"), dict) else {}


def remembered():
    """The decision made earlier in this boot of the host with this QEMU, or None."""
    saved = _memo().get(_qemu_id())
    if not isinstance(saved, dict) or saved.get("accel") not in ("kvm", "tcg"):
        return None
    return saved


def remember(accel, why, seconds=None):
    memo = _memo_path()
    qemus = _memo()
    qemus[_qemu_id()] = {"accel": accel, "why": why, "probe_seconds": seconds,
                         "when": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(memo.name + f".{os.getpid()}")
        tmp.write_text(json.dumps({"boot_id": _boot_id(), "qemus": qemus}, indent=1) + "\n")
        tmp.replace(memo)
    except OSError:
        pass


def probe_kernels(preferred=()):
    """Linux kernels to probe with, best first: the caller's (the guest's own), then the
    cached guest images' and kernel roots', then the host's."""
    found = [Path(k) for k in preferred if k]
    c = cache_dir()
    found += sorted(c.glob("images/*/vmlinuz*"), reverse=True)
    image = _arch().kernel_image
    found += sorted(c.glob(f"kroots/*/boot/{image}-*"), reverse=True)
    found += sorted(HOST_BOOT.glob(f"{image}-*"), reverse=True)
    seen, out = set(), []
    for k in found:
        if k in seen or not k.is_file() or not os.access(k, os.R_OK):
            continue
        seen.add(k)
        out.append(k)
    return out


def make_probe_initramfs(dest, busybox):
    """/init prints MARKER and powers the guest off; /bin/sh is busybox."""
    from . import initramfs
    init = f"#!/bin/sh\necho '{MARKER}'\n/bin/busybox poweroff -f\n"
    initramfs.build(dest, init, busybox=busybox, applets=["sh"], dirs=())


def classify(console, stderr, rc, timed_out, bound):
    """(usable, why) from what a probe guest left behind.  rc is None while QEMU still ran."""
    if MARKER in console:
        return True, "a Linux kernel booted to userspace under KVM"
    err_lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    hit = next((line for line in err_lines if KVM_ERRORS.search(line)), None)
    if hit:
        extra = next((line for line in err_lines if "emulation failure" in line), None)
        return False, f"QEMU: {hit}" + (f" ({extra})" if extra and extra != hit else "")
    if rc is not None and not timed_out:
        last = err_lines[-1] if err_lines else "no message"
        return False, f"QEMU exited with status {rc} before Linux reached userspace ({last})"
    if console.strip():
        return False, f"the kernel started but did not reach userspace within {bound:g} s"
    return False, f"no console output from a Linux kernel within {bound:g} s"


def decide(kernels=(), say=None, probe=None):
    """Returns (accel, why): "kvm" or "tcg" and the reason, in one line.  PROBE(kernel) boots
    the probe guest (run.probe) when nothing is remembered.  SAY(line) gets the probe's
    verdict when a probe ran (the caller's log)."""
    forced = os.environ.get("NTSYNC_ACCEL")
    if forced:
        if forced not in ("kvm", "tcg"):
            raise ValueError(f"NTSYNC_ACCEL={forced!r}: use NTSYNC_ACCEL=kvm or NTSYNC_ACCEL=tcg, "
                             "or unset it to let the probe decide")
        return forced, f"NTSYNC_ACCEL={forced}"
    dev = _kvm_dev()
    if not os.access(dev, os.R_OK | os.W_OK):
        return "tcg", f"{dev} is missing or not writable"
    saved = remembered()
    if saved:
        return saved["accel"], saved.get("why") or "probed earlier in this boot"
    if not shutil.which(_qemu()):
        return "tcg", f"{_qemu()} not found (apt-get install {_arch().qemu.package})"
    cands = probe_kernels(kernels)
    if not cands:
        # Not remembered: the next call, with a guest kernel cached, probes for real.
        return "tcg", "no Linux kernel cached to probe KVM with yet"
    if probe is None:
        return "tcg", "no KVM probe was offered (a caller outside run.guest)"
    usable, why, secs = probe(cands[0])
    if usable is None:
        return "tcg", why
    accel = "kvm" if usable else "tcg"
    line = (f"KVM probe ({cands[0].name}, {secs:.1f} s): {why}; "
            f"{'using KVM' if usable else 'using TCG'} for this boot of the host ({OVERRIDE} overrides)")
    if say:
        say(line)
    remember(accel, why, round(secs, 2))
    return accel, why


def kvm_trouble(stderr, console_bytes, seconds, rc=None, silence=None):
    """Why a guest started under KVM must be booted again under TCG, or None."""
    silence = KVM_SILENCE_SECONDS if silence is None else silence
    for line in stderr.splitlines():
        if KVM_ERRORS.search(line):
            return f"QEMU: {line.strip()}"
    if rc is not None and rc != 0 and console_bytes == 0:
        last = (stderr.strip().splitlines() or ["no message"])[-1]
        return f"QEMU exited with status {rc} before the guest printed anything ({last})"
    if rc is None and console_bytes == 0 and seconds > silence:
        return f"the console stayed empty for {silence:g} s under KVM"
    return None
