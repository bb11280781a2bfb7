"""`ntsync-vm repo`: our packages as a signed apt repository, the way a user gets them.

One command builds, from this tree's packages (cloud.build_debs), a repository with a
`dists/SUITE/` for each suite with a cloud image (bookworm, trixie, ...), each with a
`Release` signed by the project's archive key (`InRelease`, clear-signed, and the detached
`Release.gpg`), Packages indices per architecture, and the packages in `pool/main/`. The key
is shipped as Debian's keyring packages ship theirs (debian-archive-keyring, the keyrings
extrepo points at): `ntsync-archive-keyring`, a package of
/usr/share/keyrings/ntsync-archive-keyring.gpg (a binary OpenPGP key, what `Signed-By:` takes)
and an example deb822 sources file, in the repository itself, so that a new key reaches users
through apt.

The archive key here is a TEST key: made once per machine with gpg (no passphrase) under
$NTSYNC_CACHE/repo-key/, never committed. A real release signs with the project's offline
key instead (--gnupghome and --key).

The repository is served to guests as a folder (apt's file: method, from the job's input
disk) or by any web server; apt then refuses a `Release` or a package that does not match the
signature and hashes: vm/tests/test_repo.py shows both refusals.
"""

import argparse
import gzip
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from . import arches, suites
from .util import Failure, Usage, cache, ensure_host_tools, repo_version, say

KEYRING = "ntsync-archive-keyring.gpg"
KEY_UID = "ntsync test archive key (not for production) <ntsync-archive@invalid>"
ORIGIN = "ntsync"
COMPONENT = "main"


def gpg(home, *args, **kw):
    """gpg with the keyring of HOME, batch mode, never asking."""
    env = dict(os.environ, GNUPGHOME=str(home))
    r = subprocess.run(["gpg", "--batch", "--quiet", "--no-tty", "--pinentry-mode", "loopback",
                        "--passphrase", "", *args], env=env, capture_output=True, **kw)
    if r.returncode:
        err = r.stderr.decode(errors="replace") if isinstance(r.stderr, bytes) else r.stderr
        raise Failure(f"gpg {' '.join(args[:2])} failed: {err.strip()[-400:]}")
    return r


def test_key(home=None):
    """(GNUPGHOME, fingerprint) of the machine's test archive key, made on first use."""
    home = Path(home or cache() / "repo-key")
    fpr_file = home / "fingerprint"
    if fpr_file.exists():
        return home, fpr_file.read_text().strip()
    ensure_host_tools(["gpg"])
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)
    say(f"making the test archive key in {home} (gpg, ed25519, no passphrase)")
    gpg(home, "--quick-generate-key", KEY_UID, "ed25519", "sign", "never")
    out = gpg(home, "--with-colons", "--list-secret-keys", text=True).stdout
    fpr = next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:"))
    fpr_file.write_text(fpr + "\n")
    return home, fpr


def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", str(deb), field], capture_output=True, text=True,
                          check=True).stdout.strip()


def keyring_package(home, fpr, version, out):
    """ntsync-archive-keyring_VERSION_all.deb in folder OUT: the public key as
    /usr/share/keyrings/ntsync-archive-keyring.gpg and an example sources file."""
    with tempfile.TemporaryDirectory(prefix="ntsync-keyring-") as t:
        root = Path(t) / "pkg"
        keyring = root / "usr/share/keyrings" / KEYRING
        keyring.parent.mkdir(parents=True)
        keyring.write_bytes(gpg(home, "--export", fpr).stdout)
        doc = root / "usr/share/doc/ntsync-archive-keyring"
        doc.mkdir(parents=True)
        (doc / "ntsync.sources.example").write_text(sources_text("https://REPOSITORY", "trixie"))
        (doc / "copyright").write_text("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
                                       "Files: *\nCopyright: the ntsync authors\nLicense: GPL-2.0-only\n")
        (root / "DEBIAN").mkdir()
        (root / "DEBIAN/control").write_text(
            f"Package: ntsync-archive-keyring\nVersion: {version}\nArchitecture: all\n"
            "Maintainer: ntsync developers <ntsync-archive@invalid>\nSection: misc\nPriority: optional\n"
            "Multi-Arch: foreign\n"
            "Description: OpenPGP key of the ntsync apt repository\n"
            " The key that signs the Release files of the ntsync repository, as\n"
            " /usr/share/keyrings/ntsync-archive-keyring.gpg, for the Signed-By field\n"
            " of its sources entry (an example is in the documentation folder).\n")
        for p in sorted(root.rglob("*")):
            os.utime(p, (0, 0))  # the same key gives the same package
        deb = Path(out) / f"ntsync-archive-keyring_{version}_all.deb"
        subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "-b", str(root), str(deb)], check=True,
                       capture_output=True, env=dict(os.environ, SOURCE_DATE_EPOCH="0"))
    return deb


def sources_text(uri, suite):
    """The deb822 sources entry a user (or a guest) writes to /etc/apt/sources.list.d/."""
    return (f"Types: deb\nURIs: {uri}\nSuites: {suite}\nComponents: {COMPONENT}\n"
            f"Signed-By: /usr/share/keyrings/{KEYRING}\n")


def build(out, debs, suite_names=None, arch_names=None, home=None, fpr=None):
    """The signed repository in folder OUT (made anew) of the packages DEBS, for SUITE_NAMES
    (default: the suites with cloud images) and ARCH_NAMES (default: the default architecture).
    Returns OUT."""
    ensure_host_tools(["gpg", "apt-ftparchive", "dpkg-deb"])
    if not debs:
        raise Usage("no packages to put in the repository")
    if home is None:
        home, fpr = test_key()
    suite_names = suite_names or suites.names(image_only=True)
    arch_names = arch_names or [arches.DEFAULT]
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    pool = out / "pool" / COMPONENT
    pool.mkdir(parents=True)
    for d in debs:
        shutil.copy2(d, pool / Path(d).name)
    keyring_package(home, fpr, repo_version(), pool)
    for suite in suite_names:
        dist = out / "dists" / suite
        for arch in arch_names:
            bdir = dist / COMPONENT / f"binary-{arch}"
            bdir.mkdir(parents=True)
            # paths relative to the repository's root, for apt's Filename: fields
            packages = subprocess.run(["apt-ftparchive", "--arch", arch, "packages", f"pool/{COMPONENT}"],
                                      cwd=out, capture_output=True, text=True, check=True).stdout
            (bdir / "Packages").write_text(packages)
            with gzip.GzipFile(bdir / "Packages.gz", "wb", mtime=0) as f:
                f.write(packages.encode())
        opts = [f"-oAPT::FTPArchive::Release::{k}={v}" for k, v in (
            ("Origin", ORIGIN), ("Label", ORIGIN), ("Suite", suite), ("Codename", suite),
            ("Architectures", " ".join(arch_names)), ("Components", COMPONENT),
            ("Description", f"ntsync for Debian {suite} (test archive key)"))]
        release = subprocess.run(["apt-ftparchive", *opts, "release", "."], cwd=dist, capture_output=True,
                                 text=True, check=True).stdout
        (dist / "Release").write_text(release)
        gpg(home, "--local-user", fpr, "--digest-algo", "SHA512", "--clearsign", "--output",
            str(dist / "InRelease"), str(dist / "Release"))
        gpg(home, "--local-user", fpr, "--digest-algo", "SHA512", "--armor", "--detach-sign", "--output",
            str(dist / "Release.gpg"), str(dist / "Release"))
    (out / KEYRING).write_bytes(gpg(home, "--export", fpr).stdout)
    return out


def main(argv):
    ap = argparse.ArgumentParser(prog="ntsync-vm repo", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--out", metavar="DIR", help="the repository's folder (default $NTSYNC_CACHE/repo)")
    ap.add_argument("--debs", metavar="DIR", help="these packages (default: built from this tree)")
    ap.add_argument("--suite", action="append", default=[],
                    help=f"a suite of the repository (repeatable; default {', '.join(suites.names(True))})")
    o = ap.parse_args(argv)
    names = [suites.resolve(s, image_only=True) for s in o.suite] or None
    if o.debs:
        if not Path(o.debs).is_dir():
            raise Usage(f"--debs {o.debs}: not a folder")
        debs = sorted(p for p in Path(o.debs).glob("*.deb") if "-dbgsym_" not in p.name)
        if not debs:
            raise Usage(f"--debs {o.debs}: no .deb files there")
    else:
        from .cloud import build_debs
        debs = build_debs()
    t = time.monotonic()
    out = build(Path(o.out) if o.out else cache() / "repo", debs, names)
    _, fpr = test_key()
    say(f"repository {out} in {time.monotonic() - t:.0f} s: {len(debs) + 1} packages, suites "
        f"{', '.join(p.name for p in sorted((out / 'dists').iterdir()))}, signed by {fpr} (test key)")
    print(out)
    return 0
