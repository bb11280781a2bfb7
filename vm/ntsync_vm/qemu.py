"""The only place a QEMU command line is assembled and QEMU started.

A guest is a Machine (data); argv() turns it into a command line for an accelerator, start()
starts it (its one caller is run.py, the guest loop), stop() stops it. What differs between
architectures (binary, machine, CPUs, virtio transport) comes from the Machine's row of the
architecture table (arches.py). The lowest module of the launcher: it imports nothing of the
project's but arches."""

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import arches


def binary(arch=None):
    """The QEMU of ARCH (a row of arches.py; default the default architecture's);
    NTSYNC_QEMU overrides it (the host tests' stand-in)."""
    return os.environ.get("NTSYNC_QEMU") or (arch or arches.get()).qemu.binary


@dataclass
class Drive:
    """A disk: FILE with FORMAT; SERIAL names it in the guest (/dev/disk/by-id/virtio-SERIAL)."""
    file: str
    format: str = "raw"
    serial: str = None
    readonly: bool = False
    bootindex: int = None
    opts: str = ""  # extra -drive options, e.g. "discard=unmap,cache=unsafe"


@dataclass
class Firmware:
    """UEFI firmware in two flash chips: CODE read-only, VARS (the variable store) writable;
    a copy per run, as the guest writes it. SECURE: a Secure Boot build, which runs its
    variable services in SMM and needs the flash protected from the OS (q35, smm=on)."""
    code: str
    vars: str
    secure: bool = True


@dataclass
class Machine:
    console: Path                      # the serial console's file (or its log when interactive)
    arch: arches.Arch = field(default_factory=arches.get)  # what QEMU emulates
    name: str = "ntsync"
    mem: int = 2048                    # MiB
    smp: int = 2
    cpu: str = None                    # None: the arch's KVM or TCG cpu (or TCG_CPU under TCG)
    tcg_cpu: str = None                # the -cpu under TCG when CPU is None (Wine: max,-smap)
    icount: bool = False               # TCG only: guest time counts guest instructions
    kernel: str = None
    initrd: str = None
    append: str = None
    drives: list = field(default_factory=list)
    net: bool = False                  # QEMU's user network (virtio-net)
    rng: bool = True
    machine: str = None                # None: the arch's machine; "": none (raw arguments say it)
    no_reboot: bool = True
    interactive: bool = False          # the console on stdio too (ntsync-vm shell)
    extra: list = field(default_factory=list)  # raw arguments (ntsync-vm qemu -- ARGS)
    nice: int = 0                      # run QEMU under nice -n NICE (long fuzz runs)
    firmware: Firmware = None          # None: SeaBIOS (or -kernel); else UEFI from flash


def accel_args(accel, m):
    """The accelerator's part of the command line. A -cpu of the machine (or of its raw
    arguments) is kept; -icount and a single vCPU mean single-threaded TCG."""
    cpu_given = m.cpu or "-cpu" in m.extra
    smp = m.smp
    if "-smp" in m.extra:
        s = re.match(r"(?:cpus=)?(\d+)", m.extra[m.extra.index("-smp") + 1])
        smp = int(s.group(1)) if s else 1
    if accel == "kvm":
        return ["-accel", "kvm"] + ([] if cpu_given else ["-cpu", m.arch.qemu.cpu_kvm])
    icount = m.icount or "-icount" in m.extra
    return (["-accel", "tcg,thread=multi" if smp > 1 and not icount else "tcg"]
            + ([] if cpu_given else ["-cpu", m.tcg_cpu or m.arch.qemu.cpu_tcg]))


def argv(m, accel):
    """The command line of machine M under ACCEL (kvm or tcg)."""
    cmd = ["nice", "-n", str(m.nice)] if m.nice else []
    cmd += [binary(m.arch), "-name", m.name, "-nodefaults", "-display", "none"]
    if m.no_reboot:
        cmd.append("-no-reboot")
    machine = m.arch.qemu.machine if m.machine is None else m.machine
    if machine:
        cmd += ["-machine", machine + (",smm=on" if m.firmware and m.firmware.secure else "")]
    if m.firmware:
        if m.firmware.secure:
            cmd += ["-global", "driver=cfi.pflash01,property=secure,value=on"]
        cmd += ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={m.firmware.code}",
                "-drive", f"if=pflash,format=raw,unit=1,file={m.firmware.vars}"]
    q = m.arch.qemu
    if q.max_mem or q.max_smp:  # what the architecture's machine boots with at most
        m = replace(m, mem=min(m.mem, q.max_mem or m.mem), smp=min(m.smp, q.max_smp or m.smp))
    if "-m" not in m.extra:
        cmd += ["-m", str(m.mem)]
    if "-smp" not in m.extra:
        cmd += ["-smp", str(m.smp)]
    cmd += accel_args(accel, m)
    if m.cpu:
        cmd += ["-cpu", m.cpu]
    if m.icount and accel == "tcg":
        cmd += ["-icount", "shift=0,sleep=off"]
    if m.kernel:
        cmd += ["-kernel", str(m.kernel)]
    if m.initrd:
        cmd += ["-initrd", str(m.initrd)]
    if m.append is not None:
        cmd += ["-append", m.append]
    for i, d in enumerate(m.drives):
        opts = f"file={d.file},if=none,id=d{i},format={d.format}"
        opts += ",readonly=on" if d.readonly else ""
        opts += f",{d.opts}" if d.opts else ""
        dev = f"{m.arch.device('virtio-blk')},drive=d{i}"
        dev += f",serial={d.serial}" if d.serial else ""
        # bootindex: SeaBIOS would otherwise try another virtio disk first and find no
        # bootloader there ("No bootable device"); with -kernel the option ROM holds 0.
        dev += f",bootindex={d.bootindex}" if d.bootindex is not None else ""
        cmd += ["-drive", opts, "-device", dev]
    if m.rng:
        cmd += ["-device", m.arch.device("virtio-rng")]
    if "-nic" not in m.extra:
        cmd += ["-nic", f"user,model={m.arch.device('virtio-net')}"] if m.net else ["-nic", "none"]
    cmd += list(m.extra)
    if m.interactive:
        cmd += ["-chardev", f"stdio,id=ser0,mux=on,signal=off,logfile={m.console}",
                "-serial", "chardev:ser0", "-mon", "chardev=ser0"]
    else:
        cmd += ["-chardev", f"file,id=ser0,path={m.console}", "-serial", "chardev:ser0", "-monitor", "none"]
    return cmd


def start(m, accel, stderr_path=None, record=None):
    """Start machine M (the one Popen of QEMU; its caller is run.py); QEMU's stdout and stderr
    go to STDERR_PATH. RECORD: a file that gets the command line. An interactive machine
    keeps the terminal."""
    cmd = argv(m, accel)
    if record:
        Path(record).write_text(shlex.join(cmd) + "\n")
    ef = None if m.interactive else open(stderr_path or os.devnull, "wb")
    quiet = {} if m.interactive else {"stdin": subprocess.DEVNULL, "stdout": ef, "stderr": ef,
                                      "start_new_session": True}
    try:
        return subprocess.Popen(cmd, **quiet)
    finally:
        if ef:
            ef.close()


def stop(proc):
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
