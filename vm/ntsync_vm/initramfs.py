"""Initramfs images as newc cpio archives, written in Python: a static busybox with its
applets, an /init, and files. Used by the boot jobs and by the KVM probe."""

import gzip
import os
import shutil
from pathlib import Path

from .util import Failure

APPLETS = ["sh", "mount", "umount", "insmod", "rmmod", "cat", "grep", "ls", "dmesg", "poweroff",
           "sleep", "wc", "tail", "head", "dirname", "sed", "nproc", "uname", "env", "tr", "mkdir",
           "echo", "test", "[", "cut", "rm", "sort", "uniq", "cp", "chmod"]


def cpio_entry(name, mode, data=b""):
    """One entry of a newc cpio archive (the format of an initramfs)."""
    namez = name.encode() + b"\0"
    hdr = "070701" + "".join(f"{v:08x}" for v in (
        0, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(namez), 0))
    out = hdr.encode() + namez
    out += b"\0" * (-len(out) % 4)
    out += data + b"\0" * (-len(data) % 4)
    return out


def static_busybox():
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
    return None, "no static busybox for the initramfs; apt-get install busybox-static"


def build(dest, init, files=None, busybox=None, applets=APPLETS, dirs=("dev", "proc", "sys", "tmp")):
    """Write a gzip'd newc initramfs to DEST: /init (text), busybox as /bin/busybox with its
    APPLETS as symlinks, the directories DIRS, and FILES {path in the image: bytes, or a host
    path (a file, or a folder copied whole)}. Files are mode 0755 when executable on the host."""
    if busybox is None:
        busybox, why = static_busybox()
        if not busybox:
            raise Failure(why)
    entries = {}

    def add_dirs(name):
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            entries.setdefault("/".join(parts[:i]), (0o040755, b""))

    def add_file(name, data, mode):
        add_dirs(name)
        entries[name] = (0o100000 | mode, data)

    for d in dirs:
        entries[d] = (0o040755, b"")
    add_file("bin/busybox", Path(busybox).read_bytes(), 0o755)
    for a in applets:
        entries[f"bin/{a}"] = (0o120777, b"busybox")
    add_file("init", init.encode() if isinstance(init, str) else init, 0o755)
    for name, src in (files or {}).items():
        name = name.strip("/")
        if isinstance(src, (bytes, str)) and not isinstance(src, Path):
            add_file(name, src.encode() if isinstance(src, str) else src, 0o644)
            continue
        src = Path(src)
        if src.is_dir():
            for p in sorted(src.rglob("*")):
                if p.is_file():
                    add_file(f"{name}/{p.relative_to(src)}", p.read_bytes(),
                             0o755 if os.access(p, os.X_OK) else 0o644)
        elif src.is_file():
            add_file(name, src.read_bytes(), 0o755 if os.access(src, os.X_OK) else 0o644)
        else:
            raise Failure(f"initramfs: {src} is missing (wanted as /{name})")
    with gzip.open(dest, "wb", compresslevel=1) as f:
        for name in sorted(entries, key=lambda n: (n.count("/"), n)):
            mode, data = entries[name]
            f.write(cpio_entry(name, mode, data))
        f.write(cpio_entry("TRAILER!!!", 0))
    return dest


def read(path):
    """{name: (mode, data)} of a gzip'd newc archive (the self-tests)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    out, pos = {}, 0
    while pos < len(raw):
        hdr = raw[pos:pos + 110]
        fields = [int(hdr[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        pos += 110
        name = raw[pos:pos + namesize - 1].decode()
        pos += namesize
        pos += -pos % 4
        data = raw[pos:pos + size]
        pos += size
        pos += -pos % 4
        if name == "TRAILER!!!":
            break
        out[name] = (mode, data)
    return out
