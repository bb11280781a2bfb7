#!/usr/bin/python3
"""Host test of the signed apt repository (vm/ntsync_vm/repo.py), with apt itself as the judge:
a repository of two small packages, signed by a key made for the test, is accepted by
`apt-get update` with the shipped keyring as Signed-By, its packages download; a Release
changed after signing, a Release whose signature is stripped, a package changed in the pool,
and a repository signed by another key are each refused, with apt's own message. apt runs
with a private state (its own sources list, lists, cache and dpkg status), never the host's.
Skips (exit 77) when gpg, apt-ftparchive or dpkg-deb is missing. Runs in `meson test`."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "vm"))

from ntsync_vm import repo  # noqa: E402

NEEDED = ("gpg", "apt-ftparchive", "dpkg-deb", "apt-get")


def dummy_deb(out, name, arch="all", version="1.0"):
    with tempfile.TemporaryDirectory() as t:
        root = Path(t)
        (root / "DEBIAN").mkdir()
        (root / "DEBIAN/control").write_text(f"Package: {name}\nVersion: {version}\nArchitecture: {arch}\n"
                                             "Maintainer: test <t@invalid>\nDescription: a test package\n")
        (root / f"usr/share/{name}").mkdir(parents=True)
        (root / f"usr/share/{name}/file").write_text(f"{name}\n")
        deb = Path(out) / f"{name}_{version}_{arch}.deb"
        subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(root), str(deb)], check=True,
                       capture_output=True)
    return deb


class Apt:
    """apt-get with everything private under DIR, one source: SOURCE."""

    def __init__(self, d, source):
        self.dir = Path(d)
        for sub in ("lists/partial", "cache/archives/partial", "dl"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        (self.dir / "status").write_text("")
        (self.dir / "sources.list").write_text(source + "\n")
        self.opts = ["-o", f"Dir::Etc::SourceList={self.dir}/sources.list", "-o", "Dir::Etc::SourceParts=/dev/null",
                     "-o", f"Dir::State::Lists={self.dir}/lists", "-o", f"Dir::State::status={self.dir}/status",
                     "-o", f"Dir::Cache={self.dir}/cache", "-o", "APT::Sandbox::User=root",
                     "-o", "Debug::NoLocking=1", "-o", "Dir::Etc::TrustedParts=/dev/null",
                     "-o", "Dir::Etc::Trusted=/dev/null", "-o", "APT::Architecture=amd64"]

    def run(self, *args):
        if args[0] == "update":  # nothing of an earlier update counts
            shutil.rmtree(self.dir / "lists", ignore_errors=True)
            (self.dir / "lists/partial").mkdir(parents=True)
        return subprocess.run(["apt-get", "-q", *self.opts, *args], cwd=self.dir / "dl", capture_output=True,
                              text=True)


@unittest.skipIf(any(shutil.which(t) is None for t in NEEDED), f"needs {', '.join(NEEDED)}")
class SignedRepository(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = Path(cls.tmp.name)
        (t / "debs").mkdir()
        cls.debs = [dummy_deb(t / "debs", "ntsync-dkms"), dummy_deb(t / "debs", "libntsync1", arch="amd64")]
        cls.home, cls.fpr = repo.test_key(t / "key")
        cls.keyring = t / "keyring.gpg"

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def fresh(self, name):
        """A new repository and an apt pointed at it with the shipped keyring."""
        t = Path(self.tmp.name)
        out = repo.build(t / name, self.debs, ["trixie", "bookworm"], ["amd64"], home=self.home, fpr=self.fpr)
        # the key as the keyring package ships it
        subprocess.run(["dpkg-deb", "-x", str(next((out / "pool/main").glob("ntsync-archive-keyring_*.deb"))),
                        str(t / f"{name}-kr")], check=True)
        keyring = t / f"{name}-kr/usr/share/keyrings" / repo.KEYRING
        src = f"deb [signed-by={keyring}] file:{out} trixie main"
        return out, Apt(t / f"{name}-apt", src)

    def test_accepted_and_downloads(self):
        out, apt = self.fresh("good")
        r = apt.run("update")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("W:", r.stderr)
        r = apt.run("download", "ntsync-dkms", "libntsync1", "ntsync-archive-keyring")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(list((apt.dir / "dl").glob("*.deb"))), 3)
        for suite in ("trixie", "bookworm"):
            rel = (out / "dists" / suite / "Release").read_text()
            self.assertIn(f"Suite: {suite}", rel)
            self.assertIn("Architectures: amd64", rel)
            self.assertIn("main/binary-amd64/Packages", rel)
        self.assertIn("Signed-By: /usr/share/keyrings/ntsync-archive-keyring.gpg", repo.sources_text("x", "trixie"))

    def test_release_changed_after_signing_is_refused(self):
        out, apt = self.fresh("tampered-release")
        inrel = out / "dists/trixie/InRelease"
        inrel.write_text(inrel.read_text().replace("Suite: trixie", "Suite: trixie-evil"))
        (out / "dists/trixie/Release.gpg").unlink()
        r = apt.run("update")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("The following signatures were invalid: BADSIG", r.stdout + r.stderr)

    def test_unsigned_release_is_refused(self):
        out, apt = self.fresh("unsigned")
        (out / "dists/trixie/InRelease").unlink()
        (out / "dists/trixie/Release.gpg").unlink()
        r = apt.run("update")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("is not signed", r.stdout + r.stderr)

    def test_package_changed_in_the_pool_is_refused(self):
        out, apt = self.fresh("tampered-deb")
        self.assertEqual(apt.run("update").returncode, 0)
        deb = out / "pool/main/ntsync-dkms_1.0_all.deb"
        data = bytearray(deb.read_bytes())
        data[-1] ^= 0xff
        deb.write_bytes(bytes(data))
        r = apt.run("download", "ntsync-dkms")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Hash Sum mismatch", r.stdout + r.stderr)
        self.assertFalse(list((apt.dir / "dl").glob("ntsync-dkms*.deb")))

    def test_another_key_is_refused(self):
        t = Path(self.tmp.name)
        home, fpr = repo.test_key(t / "other-key")
        out = repo.build(t / "other", self.debs, ["trixie"], ["amd64"], home=home, fpr=fpr)
        _, apt = self.fresh("theirs")  # the keyring of our key
        src = (apt.dir / "sources.list").read_text().replace(str(t / "theirs"), str(out))
        (apt.dir / "sources.list").write_text(src)
        r = apt.run("update")
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stdout + r.stderr, r"NO_PUBKEY|not signed|signatures couldn't be verified|Missing key")

    def test_the_keyring_package(self):
        out, _ = self.fresh("keyring")
        deb = next((out / "pool/main").glob("ntsync-archive-keyring_*_all.deb"))
        files = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
        self.assertIn(f"./usr/share/keyrings/{repo.KEYRING}", files)
        self.assertIn("ntsync.sources.example", files)
        again = repo.keyring_package(self.home, self.fpr, deb.name.split("_")[1], Path(self.tmp.name))
        self.assertEqual(again.read_bytes(), deb.read_bytes(), "the same key gives the same package")


if __name__ == "__main__":
    if any(shutil.which(t) is None for t in NEEDED):
        print(f"skip: needs {', '.join(NEEDED)} (apt-get install gnupg apt-utils)")
        sys.exit(77)
    os.environ.setdefault("GNUPGHOME", "/nonexistent")  # never the caller's keyring
    unittest.main(verbosity=2)
