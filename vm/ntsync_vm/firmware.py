"""UEFI firmware: for the Secure Boot guests, and (uefi()) the plain firmware an "efi" disk of
another architecture boots through (the row's uefi: Debian's build of it).

For the Secure Boot guests: Debian's OVMF built for Secure Boot, its variable
store with Microsoft's keys enrolled and Secure Boot on (OVMF_VARS_4M.ms.fd), as a PC that
boots Debian's Microsoft-signed shim. Enrolling a key into shim's MokList, the step a user
does with `mokutil --import`, a reboot and MokManager, is done before boot with virt-fw-vars
(python3-virt-firmware, trixie and later).

Both come from trixie, in a root of their own ($NTSYNC_CACHE/firmware/trixie), so that a fresh
Debian 12 host needs nothing installed by hand and every guest suite boots the same firmware.
Which packages and files: the architecture's SecureBoot row (arches.py)."""

import base64
import shutil
from pathlib import Path

from . import arches, roots
from .util import MIRROR, Failure, Usage, cache

RELEASE = "trixie"
# The owner GUID of the MokList entries we add: shim's own.
SHIM_LOCK_GUID = "605dab50-e046-4300-abb6-3dd810dd8b23"


def spec(arch=None):
    """The SecureBoot row of ARCH (Usage when the architecture has none)."""
    arch = arch or arches.get()
    if not arch.secure_boot:
        raise Usage(f"no Secure Boot guest for {arch.name} (its row in vm/ntsync_vm/arches.py has none)")
    return arch.secure_boot


def root(arch=None):
    sb = spec(arch)
    name = RELEASE if arch is None or arch.name == arches.DEFAULT else f"{RELEASE}-{arch.name}"
    return roots.cached_root(cache() / "firmware" / name, RELEASE, [f"deb {MIRROR} {RELEASE} main"],
                             list(sb.firmware_packages), f"UEFI firmware root ({', '.join(sb.firmware_packages)})")


def der_to_pem(der):
    """An X.509 certificate in DER (what DKMS writes to /var/lib/dkms/mok.pub) as PEM."""
    if not der or der[0] != 0x30:
        raise Failure("the key to enroll is not a DER certificate (it must start with an ASN.1 SEQUENCE)")
    b64 = base64.b64encode(der).decode()
    return ("-----BEGIN CERTIFICATE-----\n" + "\n".join(b64[i:i + 64] for i in range(0, len(b64), 64))
            + "\n-----END CERTIFICATE-----\n")


def virt_fw_vars(fw, args, what):
    r = roots.in_root(fw, ["virt-fw-vars", *args], capture_output=True, text=True)
    if r.returncode:
        raise Failure(f"virt-fw-vars ({what}) failed: {(r.stderr or r.stdout).strip()[-800:]}")
    return r.stdout + r.stderr


def install(dest, mok_der=None, arch=None):
    """Put the firmware for one guest image into folder DEST: efi-code.fd, efi-vars.fd (Secure
    Boot on, Microsoft's keys, an empty MokList) and, with MOK_DER (a DER certificate),
    efi-vars-mok.fd, the same store with that certificate in shim's MokList as MokManager
    would have put it there. Returns the paths."""
    sb = spec(arch)
    code, varstore = sb.code, sb.vars
    fw = root(arch)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = {"code": dest / "efi-code.fd", "vars": dest / "efi-vars.fd"}
    shutil.copy2(fw / code, out["code"])
    shutil.copy2(fw / varstore, out["vars"])
    listing = virt_fw_vars(fw, ["-i", f"/{varstore}", "-p"], "reading the variable store")
    if "SecureBootEnable    : bool: ON" not in listing:
        raise Failure(f"{varstore} of the firmware root does not have Secure Boot enabled:\n{listing[-600:]}")
    if mok_der is not None:
        work = fw / "tmp" / "ntsync-mok"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            (work / "key.pem").write_text(der_to_pem(mok_der))
            virt_fw_vars(fw, ["-i", f"/{varstore}", "--add-mok", SHIM_LOCK_GUID, "/tmp/ntsync-mok/key.pem",
                              "-o", "/tmp/ntsync-mok/vars.fd"], "adding the key to MokList")
            listing = virt_fw_vars(fw, ["-i", "/tmp/ntsync-mok/vars.fd", "-p"], "reading the new store")
            if "MokList" not in listing:
                raise Failure(f"virt-fw-vars --add-mok left no MokList in the store:\n{listing[-600:]}")
            out["vars_mok"] = dest / "efi-vars-mok.fd"
            shutil.copy2(work / "vars.fd", out["vars_mok"])
        finally:
            shutil.rmtree(work, ignore_errors=True)
    out["version"] = roots.in_root(fw, ["dpkg-query", "-W", "-f=${Version}", sb.firmware_packages[0]],
                                   capture_output=True, text=True).stdout.strip()
    return out


def uefi(arch):
    """(code, vars template) of the firmware that boots ARCH's "efi" disks (its row's uefi:
    Debian's build, no Secure Boot), from a trixie root of its own
    ($NTSYNC_CACHE/firmware/trixie-ARCH-uefi, the packages are arch all); a run writes a copy
    of the variable store."""
    if not arch.uefi:
        raise Usage(f"no UEFI firmware for {arch.name} in vm/ntsync_vm/arches.py (its row has no uefi)")
    fw = roots.cached_root(cache() / "firmware" / f"{RELEASE}-{arch.name}-uefi", RELEASE,
                           [f"deb {MIRROR} {RELEASE} main"], list(arch.uefi.packages),
                           f"{arch.name} UEFI firmware root ({', '.join(arch.uefi.packages)})")
    code, varstore = fw / arch.uefi.code, fw / arch.uefi.vars
    for p in (code, varstore):
        if not p.is_file():
            raise Failure(f"{p} is missing in the firmware root (packages {', '.join(arch.uefi.packages)}); "
                          f"remove {fw} and rerun")
    return code, varstore
