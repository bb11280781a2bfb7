"""accel: which QEMU accelerator really runs Linux on this host, and a QEMU runner that
falls back from KVM to TCG.

Every script of the project that boots a guest asks this module (vm/ntsync-vm asks it
directly; the shell scripts through `vm/ntsync-vm accel` and `vm/ntsync-vm qemu`), so there
is one decision per boot of the host.

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
kvm_trouble() recognises that from QEMU's stderr and an empty console, and run() (the
runner of `vm/ntsync-vm qemu`) then stops QEMU, remembers TCG and boots the same guest again
under TCG with a warning.

NTSYNC_ACCEL=kvm|tcg overrides all of it.
"""

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _qemu():
    return os.environ.get("NTSYNC_QEMU", "qemu-system-x86_64")


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
    found += sorted(c.glob("kroots/*/boot/vmlinuz-*"), reverse=True)
    found += sorted(HOST_BOOT.glob("vmlinuz-*"), reverse=True)
    seen, out = set(), []
    for k in found:
        if k in seen or not k.is_file() or not os.access(k, os.R_OK):
            continue
        seen.add(k)
        out.append(k)
    return out


def _static_busybox():
    """A statically linked busybox (Debian's busybox-static), or (None, why)."""
    for cand in (os.environ.get("NTSYNC_BUSYBOX"), shutil.which("busybox"), "/bin/busybox"):
        if not cand or not os.path.isfile(cand):
            continue
        with open(cand, "rb") as f:
            head = f.read(4096)
        if head[:4] != b"\x7fELF":
            return None, f"{cand} is not an ELF program"
        if b"ld-linux" in head:
            return None, f"{cand} is dynamically linked; apt-get install busybox-static"
        return cand, None
    return None, "no busybox for the probe's initramfs; apt-get install busybox-static"


def _cpio_entry(name, mode, data=b""):
    """One entry of a newc cpio archive (the format of an initramfs)."""
    namez = name.encode() + b"\0"
    hdr = "070701" + "".join(f"{v:08x}" for v in (
        0, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(namez), 0))
    out = hdr.encode() + namez
    out += b"\0" * (-len(out) % 4)
    out += data + b"\0" * (-len(data) % 4)
    return out


def make_probe_initramfs(dest, busybox):
    """/init prints MARKER and powers the guest off; /bin/sh is busybox."""
    init = f"#!/bin/sh\necho '{MARKER}'\n/bin/busybox poweroff -f\n".encode()
    parts = [
        _cpio_entry("bin", 0o040755),
        _cpio_entry("bin/busybox", 0o100755, Path(busybox).read_bytes()),
        _cpio_entry("bin/sh", 0o120777, b"busybox"),
        _cpio_entry("init", 0o100755, init),
        _cpio_entry("TRAILER!!!", 0),
    ]
    with gzip.open(dest, "wb", compresslevel=1) as f:
        for p in parts:
            f.write(p)


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


def probe(kernel, bound=None):
    """Boot KERNEL under KVM with the marker initramfs.  Returns (usable, why, seconds)."""
    bound = PROBE_SECONDS if bound is None else bound
    busybox, why = _static_busybox()
    if not busybox:
        return None, why, 0.0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ntsync-accel-") as tmp:
        tmp = Path(tmp)
        initrd = tmp / "probe.cpio.gz"
        make_probe_initramfs(initrd, busybox)
        console, err = tmp / "console", tmp / "stderr"
        cmd = [_qemu(), "-accel", "kvm", "-cpu", "host", "-machine", "q35", "-m", "256", "-smp", "1",
               "-nodefaults", "-display", "none", "-no-reboot", "-kernel", str(kernel),
               "-initrd", str(initrd), "-append", "console=ttyS0 panic=-1 rdinit=/init quiet",
               "-chardev", f"file,id=ser0,path={console}", "-serial", "chardev:ser0", "-monitor", "none"]
        with open(err, "wb") as ef:
            try:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=ef, stderr=ef,
                                        start_new_session=True)
            except OSError as e:
                return False, f"cannot start {_qemu()}: {e}", 0.0
            rc, timed_out = None, False
            while True:
                rc = proc.poll()
                text = _read(console)
                if MARKER in text or rc is not None:
                    break
                if KVM_ERRORS.search(_read(err)):
                    break
                if time.monotonic() - t0 > bound:
                    timed_out = True
                    break
                time.sleep(0.1)
            _stop(proc)
        usable, why = classify(_read(console), _read(err), rc, timed_out, bound)
    return usable, why, time.monotonic() - t0


def _read(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _stop(proc):
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def decide(kernels=(), say=None):
    """Returns (accel, why): "kvm" or "tcg" and the reason, in one line.  SAY(line) gets the
    probe's verdict when a probe ran (the caller's log)."""
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
        return "tcg", f"{_qemu()} not found (apt-get install qemu-system-x86)"
    cands = probe_kernels(kernels)
    if not cands:
        # Not remembered: the next call, with a guest kernel cached, probes for real.
        return "tcg", "no Linux kernel cached to probe KVM with yet"
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


def accel_args(accel, qemu_args):
    """The accelerator's part of a QEMU command line.  A -cpu in QEMU_ARGS is kept (TCG only)."""
    if accel == "kvm":
        return ["-accel", "kvm"] + ([] if "-cpu" in qemu_args else ["-cpu", "host"])
    smp = 1
    if "-smp" in qemu_args:
        m = re.match(r"(?:cpus=)?(\d+)", qemu_args[qemu_args.index("-smp") + 1])
        smp = int(m.group(1)) if m else 1
    multi = smp > 1 and "-icount" not in qemu_args
    return ["-accel", "tcg,thread=multi" if multi else "tcg"] + ([] if "-cpu" in qemu_args else ["-cpu", "max"])


def warn(msg):
    print(f"ntsync-vm: warning: {msg}", file=sys.stderr, flush=True)


def run(qemu_args, console, timeout, tcg_only=False, say=None, kernels=()):
    """Run QEMU with the serial console in the file CONSOLE and the accelerator decided here;
    a guest that KVM cannot run is stopped and booted again under TCG.  Returns QEMU's exit
    status, or 124 when TIMEOUT seconds passed (as timeout(1) does).  QEMU's stderr is
    appended to CONSOLE when it ends."""
    say = say or (lambda m: print(f"ntsync-vm: {m}", file=sys.stderr, flush=True))
    if tcg_only:
        accel, why = "tcg", "the run needs TCG (-icount)"
    else:
        accel, why = decide(kernels, say=say)
    say(f"accelerator {accel.upper()} ({why})")
    console = Path(console)
    while True:
        console.write_bytes(b"")
        err_path = console.with_name(console.name + ".qemu-stderr")
        cmd = [_qemu()] + accel_args(accel, qemu_args) + list(qemu_args) + [
            "-chardev", f"file,id=ser0,path={console}", "-serial", "chardev:ser0", "-monitor", "none"]
        t0 = time.monotonic()
        with open(err_path, "wb") as ef:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=ef, stderr=ef)
            trouble, rc = None, None
            try:
                while True:
                    rc = proc.poll()
                    secs = time.monotonic() - t0
                    if accel == "kvm":
                        size = console.stat().st_size if console.exists() else 0
                        trouble = kvm_trouble(_read(err_path), size, secs, rc)
                        if trouble:
                            break
                    if rc is not None:
                        break
                    if secs > timeout:
                        rc = 124
                        break
                    time.sleep(0.25)
            finally:
                _stop(proc)
        errtext = _read(err_path)
        err_path.unlink(missing_ok=True)
        if trouble and os.environ.get("NTSYNC_ACCEL") == "kvm":
            warn(f"KVM could not run this guest ({trouble}); NTSYNC_ACCEL=kvm is set, so no "
                 "fallback: unset it (or set NTSYNC_ACCEL=tcg)")
            return 1
        if trouble:
            warn(f"KVM could not run this guest ({trouble}); stopped it and booting it again under "
                 f"TCG; TCG is remembered for this boot of the host ({OVERRIDE} overrides)")
            remember("tcg", f"a guest failed under KVM: {trouble}")
            accel = "tcg"
            continue
        if errtext.strip():
            with open(console, "a") as f:
                f.write("\n" + errtext)
        return rc


def main(argv):
    """`ntsync-vm accel [--why]` prints kvm or tcg; `ntsync-vm qemu --console FILE --timeout S
    [--tcg-only] -- QEMU-ARGS` runs a guest (its accelerator and serial console are added)."""
    import argparse
    if argv and argv[0] == "accel":
        ap = argparse.ArgumentParser(prog="ntsync-vm accel",
                                     description="print the QEMU accelerator guests use here: kvm or tcg")
        ap.add_argument("--why", action="store_true", help="also print the reason on stderr")
        ap.add_argument("--kernel", action="append", default=[], help="probe with this kernel first")
        o = ap.parse_args(argv[1:])
        try:
            accel, why = decide(o.kernel, say=lambda m: print(f"ntsync-vm: {m}", file=sys.stderr))
        except ValueError as e:
            print(f"ntsync-vm accel: {e}", file=sys.stderr)
            return 2
        print(accel)
        if o.why:
            print(f"ntsync-vm accel: {accel} ({why})", file=sys.stderr)
        return 0
    ap = argparse.ArgumentParser(prog="ntsync-vm qemu", description="run QEMU with the accelerator "
                                 "decided for this host, falling back from KVM to TCG")
    ap.add_argument("--console", required=True, help="file that receives the serial console")
    ap.add_argument("--timeout", type=float, required=True, help="seconds; then QEMU is stopped, exit 124")
    ap.add_argument("--tcg-only", action="store_true", help="never KVM (runs that use -icount)")
    if "--" not in argv:
        ap.error("the QEMU arguments follow '--'")
    i = argv.index("--")
    o = ap.parse_args(argv[1:i])
    qargs = argv[i + 1:]
    kernels = [qargs[qargs.index("-kernel") + 1]] if "-kernel" in qargs else []
    # timeout(1) or a caller's kill: stop QEMU on the way out (run()'s finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return run(qargs, o.console, o.timeout, tcg_only=o.tcg_only, kernels=kernels)
    except ValueError as e:
        print(f"ntsync-vm qemu: {e}", file=sys.stderr)
        return 2
