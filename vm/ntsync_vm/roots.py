"""Debian roots: the only mmdebstrap caller (image roots, the kernel-header roots of the W=1
matrix and the initramfs boots, the debug-kernel build root), with one cache policy and one
stale-root cleanup; in_root() runs a command inside a root."""

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from . import arches, suites
from .util import REPO, Failure, Usage, cache, ensure_host_tools, require_root, say, tail_text

# Packages of every kernel root: the compiler and tools the cloud kernel's headers need
# (perl and python3 run kernel-doc, which W=1 builds call), sparse for `make C=2`.
KROOT_PACKAGES = ["make", "libc6-dev", "binutils", "perl", "python3", "sparse"]
# And of every cross root: what the native roots get from the header packages' dependencies,
# which nothing installs there (pahole: the BTF of modules against headers that ship vmlinux).
XROOT_PACKAGES = ["dwarves"]


def max_age_days():
    """The one cache policy: a root or image older than this is built again (default 14)."""
    v = os.environ.get("NTSYNC_MAX_AGE_DAYS", os.environ.get("NTSYNC_IMAGE_MAX_AGE_DAYS", "14"))
    try:
        return float(v)
    except ValueError:
        raise Failure(f"NTSYNC_MAX_AGE_DAYS={v!r}: give a number of days", 2)


def stale(stamp):
    """Why the root or image whose stamp file is STAMP must be built (again), or None."""
    stamp = Path(stamp)
    if not stamp.exists():
        return "not built yet"
    age = (time.time() - stamp.stat().st_mtime) / 86400
    if age > max_age_days():
        return f"{age:.0f} days old (NTSYNC_MAX_AGE_DAYS={max_age_days():g})"
    return None


def mounts_under(d):
    d = str(Path(d).resolve()) + "/"
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(d)]


def safe_rm(d):
    """Remove a root an interrupted mmdebstrap may have left with /proc, /sys or /dev mounted
    inside: unmount first, never delete through a mount."""
    d = Path(d)
    if not d.exists() and not d.is_symlink():
        return
    for m in sorted(mounts_under(d), key=len, reverse=True):
        subprocess.run(["umount", "-l", m], check=False)
    if mounts_under(d):
        raise Failure(f"{d} still has mounts inside; unmount them and remove it by hand")
    shutil.rmtree(d, ignore_errors=True)


def clean_stale():
    """Half-built roots of earlier, interrupted runs (*.tmp-PID whose PID is gone)."""
    for d in list(cache().glob("images/.build-*")) + list(cache().glob("kroots/*.tmp-*")) \
            + list(cache().glob("*-kernel/root.tmp-*")) + list(cache().glob("firmware/*.tmp-*")):
        pid = d.name.rsplit("-", 1)[-1]
        if pid.isdigit() and Path(f"/proc/{pid}").exists():
            continue
        safe_rm(d)


BINFMT_MISC = Path("/proc/sys/fs/binfmt_misc")


def foreign_ready(arch):
    """Make this host run ARCH's programs (a foreign root's maintainer scripts, chroot): its
    static qemu-user (qemu-user-static, installed with apt-get when missing) registered with
    binfmt_misc, which is mounted first when it is not (containers and minimal hosts leave it
    out). The registration is the one qemu-user-static ships in /usr/lib/binfmt.d, with its
    F flag (the interpreter opened now, so it works inside a chroot). Nothing for the host's
    own architecture."""
    if arch.uname == os.uname().machine:
        return
    require_root(f"running {arch.name} programs in a foreign root (binfmt_misc)")
    if not arch.qemu_user:
        raise Failure(f"{arch.name} has no qemu_user in vm/ntsync_vm/arches.py: no foreign root of it can be built")
    ensure_host_tools([arch.qemu_user])
    if not (BINFMT_MISC / "register").exists():
        r = subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT_MISC)],
                           capture_output=True, text=True)
        if r.returncode or not (BINFMT_MISC / "register").exists():
            raise Failure(f"binfmt_misc is not mounted at {BINFMT_MISC} and mounting it failed "
                          f"({r.stderr.strip() or 'no register file after mount'}): a foreign {arch.name} root "
                          f"needs it. Run 'mount -t binfmt_misc binfmt_misc {BINFMT_MISC}' as root (in a "
                          "container: on the host, or give the container CAP_SYS_ADMIN) and rerun")
        say(f"mounted binfmt_misc at {BINFMT_MISC}")
    name = Path(arch.qemu_user).name.removesuffix("-static")  # qemu-ARCH (its binfmt entry)
    entry = BINFMT_MISC / name
    if entry.exists():
        lines = entry.read_text().splitlines()
        flags = next((ln.split()[1] for ln in lines if ln.startswith("flags:") and len(ln.split()) > 1), "")
        if lines and lines[0] == "enabled" and "F" in flags:
            return
        raise Failure(f"{entry} is registered but disabled or without the F flag (a chroot cannot find "
                      f"its interpreter then): 'echo -1 > {entry}' removes it, then rerun")
    conf = Path("/usr/lib/binfmt.d") / f"{name}.conf"
    if not conf.exists():
        raise Failure(f"{conf} is missing although {arch.qemu_user} is installed; reinstall qemu-user-static")
    line = next((ln for ln in conf.read_text().splitlines() if ln.startswith(":")), None)
    if not line:
        raise Failure(f"{conf} has no registration line (:name:type:...)")
    try:
        (BINFMT_MISC / "register").write_text(line)
    except OSError as e:
        raise Failure(f"registering {name} with binfmt_misc failed ({e}); "
                      f"'cat {conf} > {BINFMT_MISC}/register' as root, then rerun")
    say(f"registered {name} ({arch.qemu_user}) with binfmt_misc")


def mmdebstrap(release, target, sources, packages, logf, variant="apt", hooks=(), keep_debs=False,
               timeout=1800, docs=False, architectures=(), essential_hooks=()):
    """THE mmdebstrap call: a Debian RELEASE root in TARGET with PACKAGES from SOURCES. Every
    root shares the .deb cache $NTSYNC_CACHE/apt/RELEASE; an archive snapshot whose Release
    files expired is accepted. HOOKS: more --customize-hook commands. KEEP_DEBS leaves the
    downloaded .debs in the root (the hook removes them itself). DOCS keeps /usr/share/doc,
    locales and info pages (dropped otherwise: no root here reads them). ARCHITECTURES: Debian
    architecture names, the first the root's own (a foreign one runs through qemu-user:
    foreign_ready), the others added to dpkg (packages NAME:ARCH of them); default the host's.
    ESSENTIAL_HOOKS: --essential-hook commands (after the Essential packages, before the rest)."""
    require_root("building a Debian root")
    ensure_host_tools(["mmdebstrap"])
    if architectures:
        foreign_ready(arches.get(architectures[0]))
    apt_cache = cache() / "apt" / release
    apt_cache.mkdir(parents=True, exist_ok=True)
    cmd = [
        "nice", "-n", "10", "mmdebstrap", "--mode=root", f"--variant={variant}",
        "--include=" + ",".join(packages),
        "--aptopt=Acquire::Languages \"none\"",
        "--aptopt=APT::Install-Recommends \"false\"",
        "--aptopt=Acquire::Check-Valid-Until \"false\"",
        *([] if docs else ["--dpkgopt=path-exclude=/usr/share/doc/*",
                           "--dpkgopt=path-include=/usr/share/doc/*/copyright",
                           "--dpkgopt=path-exclude=/usr/share/locale/*",
                           "--dpkgopt=path-exclude=/usr/share/info/*"]),
        *([f"--architectures={','.join(architectures)}"] if architectures else []),
        "--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/",
        f"--setup-hook=sync-in {apt_cache} /var/cache/apt/archives/",
        *[f"--essential-hook={h}" for h in essential_hooks],
        f"--customize-hook=sync-out /var/cache/apt/archives {apt_cache}",
        *[f"--customize-hook={h}" for h in hooks],
        *(["--skip=download/empty"] if keep_debs else []),
        release, str(target), *sources,
    ]
    Path(logf).parent.mkdir(parents=True, exist_ok=True)
    with open(logf, "w") as lf:
        try:
            subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           check=True, timeout=timeout)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            raise Failure(f"mmdebstrap {release} failed ({e}); last lines of {logf}:\n{tail_text(logf, 25)}")


def in_root(root, cmd, **kw):
    """Run CMD inside ROOT with /proc and /dev (objtool and apt need them) and a clean
    environment, in private mount and pid namespaces: nothing stays mounted or running."""
    script = ('r=$1; shift; mount --rbind /dev "$r/dev" && mount -t proc proc "$r/proc" && '
              'exec chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"')
    return subprocess.run(["unshare", "--mount", "--fork", "--pid", "--propagation", "private",
                           "sh", "-c", script, "sh", str(root), *cmd], **kw)


def kroot_dir(suite, arch=None):
    """$NTSYNC_CACHE/kroots/SUITE (the default architecture) or SUITE-ARCH."""
    name = suites.resolve(suite, quiet=True)
    arch = arch or arches.get()
    return cache() / "kroots" / (name if arch.name == arches.DEFAULT else f"{name}-{arch.name}")


def _add_missing(name, root, packages, logf):
    """Install into a cached root what a newer version of this tool needs (sparse, say),
    rather than building the root again."""
    r = in_root(root, ["dpkg-query", "-W", "-f=${Package} ${Status}\n", *[p.split("/")[0] for p in packages]],
                capture_output=True, text=True)
    installed = {line.split()[0] for line in r.stdout.splitlines() if line.endswith("ok installed")}
    missing = [p for p in packages if p.split("/")[0].split(":")[0] not in installed]
    if not missing:
        return
    say(f"adding {' '.join(missing)} to the {name}")
    with open(logf, "a") as lf:
        r = in_root(root, ["sh", "-c", "apt-get -o Acquire::Check-Valid-Until=false update -qq && "
                           "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \"$@\" && apt-get clean",
                           "sh", *missing], stdout=lf, stderr=subprocess.STDOUT)
    if r.returncode:
        raise Failure(f"could not add {' '.join(missing)} to {root} (log {logf}); remove the root and rerun")


def add_packages(root, packages, what):
    """Install PACKAGES into the existing root ROOT (WHAT names it) unless they are there:
    for a tool that one command adds to a root built by another (lcov in the gcov kernel's
    build root), without making the root again."""
    root = Path(root)
    _add_missing(what, root, packages, root.parent / "logs" / f"{root.name}-root.log")


def kroot(suite, arch=None):
    """The kernel root of SUITE for ARCH (kroot_dir()): the suite's kernel and its headers
    with the compiler they were built with; built when missing or stale."""
    s = suites.get(suite, quiet=True)
    arch = arch or arches.get()
    return cached_root(kroot_dir(s.name, arch), s.release, s.sources, KROOT_PACKAGES + s.kernel_packages(arch),
                       f"{s.name} kernel root")


def native_arch():
    """The row of the architecture this host runs (its kernel roots are native, the others'
    are cross roots); the default architecture on a host the table lacks."""
    return arches.host() or arches.get()


def foreign_arches(suite):
    """The architectures of SUITE (a row of suites.py) that are not the host's, in table order
    (a kernel flavour row included, beside its Debian architecture's: arches.py dpkg_arch)."""
    native = native_arch()
    return [arches.get(a) for a in suite.architectures if a != native.name]


def foreign_debian_arches(suite):
    """The Debian architectures of foreign_arches(SUITE), each once, in table order."""
    return list(dict.fromkeys(a.debian_arch for a in foreign_arches(suite)))


def xroot_dir(suite):
    """$NTSYNC_CACHE/kroots/SUITE-cross."""
    return cache() / "kroots" / f"{suites.resolve(suite, quiet=True)}-cross"


def xroot(suite):
    """The cross root of SUITE: a root of the host's own architecture with make, perl, python3
    and the cross compilers of the gcc that built the suite's kernels (gcc-N-TRIPLET), one for
    each of the suite's other architectures; cross_headers() extracts their header packages
    into it. Built when missing or stale, like every kernel root."""
    s = suites.get(suite, quiet=True)
    gccs = list(dict.fromkeys(a.cross_gcc(s.gcc) for a in foreign_arches(s)))
    if not gccs:
        raise Usage(f"suite {s.name} has no architecture besides the host's: no cross root")
    return cached_root(xroot_dir(s.name), s.release, s.sources, KROOT_PACKAGES + XROOT_PACKAGES + gccs,
                       f"{s.name} cross root")


# The Debian release the cross-built packages of another architecture are built on: the oldest
# supported (what the host's own packages are built on, dpkg-buildpackage on a Debian 12 host),
# so that they install on every suite
DEB_CROSS_RELEASE = "bookworm"


def deb_cross_root(arch):
    """The root that cross-builds our architecture-dependent packages for ARCH as Debian's
    cross build daemons do (debian/build-debs --host-arch, dpkg-buildpackage -a ARCH): the
    host's architecture with ARCH added to dpkg, crossbuild-essential-ARCH and the build
    dependencies of debian/control (ARCH's libcmocka-dev); $NTSYNC_CACHE/kroots/RELEASE-debs-ARCH,
    built when missing or stale like every root."""
    s = suites.get(DEB_CROSS_RELEASE, quiet=True)
    native = native_arch().name
    deb = arch.debian_arch
    pkgs = ["build-essential", f"crossbuild-essential-{deb}", "dpkg-dev", "debhelper", "dh-dkms",
            "meson", "ninja-build", "pkgconf", f"libcmocka-dev:{deb}"]
    return cached_root(cache() / "kroots" / f"{s.name}-debs-{deb}", s.release, s.sources, pkgs,
                       f"{s.name} cross build root of the {deb} packages", architectures=[native, deb])


def _vkey(version):
    """A sort key of a Debian version good enough for one kernel series' versions."""
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", version)]


def _depends(stanza):
    """The package names of a stanza's Depends (alternatives included, versions dropped)."""
    names = []
    for part in stanza.get("Depends", "").replace("|", ",").split(","):
        if part.strip():
            names.append(part.split()[0].split(":")[0])
    return names


def extract_deb(deb, root):
    """DEB's files into ROOT, not installed (dpkg-deb -x as dpkg does it on a merged-/usr
    system: tar keeps ROOT's /lib -> usr/lib; plain `dpkg-deb -x` would replace that link by
    a folder holding the headers' lib/modules/KREL/build, and the root's loader is gone)."""
    r = subprocess.run(["bash", "-o", "pipefail", "-c",
                        'dpkg-deb --fsys-tarfile "$1" | tar -x --keep-directory-symlink -C "$2"',
                        "bash", str(deb), str(root)], capture_output=True, text=True)
    if r.returncode:
        raise Failure(f"extracting {Path(deb).name} into {root}: {r.stderr.strip()}")


class CrossHeaders:
    """The foreign architectures' kernel headers of one suite, in its cross root: for each, the
    header flavour's meta package (linux-headers-FLAVOUR) leads to the versioned package, its
    -common package and the linux-kbuild package of the host (whose fixdep and modpost run
    here). They are fetched with the project's private apt (Apt, every architecture of the
    suite) and extracted with dpkg-deb -x into the root, not installed: nothing of the foreign
    architecture has to be installable on this one. The newest version of the suite's kernel
    series whose three packages all download is taken (the archive answers 404 for some
    architectures' newest files); which one, and why not the newest, is said. A stamp per
    architecture (ROOT/.headers-ARCH) keeps what was extracted while the root lives."""

    def __init__(self, suite, root):
        self.suite = suites.get(suite, quiet=True)
        self.root = Path(root)
        self._apt = None

    def apt(self):
        if self._apt is None:
            native = native_arch().name
            foreign = foreign_debian_arches(self.suite)
            say(f"reading the {self.suite.name} archive for {', '.join(foreign)}")
            self._apt = Apt(self.root.parent / f"{self.root.name}.apt", self.suite.sources,
                            architectures=[native] + foreign, reuse=True)
        return self._apt

    def series_versions(self, versions):
        """VERSIONS of the suite's kernel series, newest first, then those of older series of
        the same major version (trixie-backports: 7.3's, then the 7.2 backports it had before,
        for architectures whose 7.3 files the archive lacks; never trixie's 6.12 that the same
        sources offer)."""
        major = self.suite.series.split(".")[0] + "."
        ours = sorted({v for v in versions if v and v.startswith(self.suite.series + ".")}, key=_vkey, reverse=True)
        older = sorted({v for v in versions if v and v.startswith(major) and v not in ours
                        and _vkey(v) < _vkey(self.suite.series)}, key=_vkey, reverse=True)
        return ours + older

    def candidates(self, arch):
        """[(version, [package=version...])] of ARCH's headers in the suite's series, newest
        first: the versioned headers, their -common, the host's linux-kbuild. Every version the
        indexes list, not only the meta package's (linux-headers-FLAVOUR names the newest two;
        the archive may lack their files for some architectures while older ones download)."""
        apt, native, deb = self.apt(), native_arch().name, arch.debian_arch
        rx = re.compile(rf"^linux-headers-\d\S*-{re.escape(arch.headers_flavour)}$")
        names = [n for n in apt.pkgnames(f"linux-headers-{self.suite.series.split('.')[0]}.") if rx.match(n)]
        found = {}
        for st in apt.stanzas(*[f"{n}:{deb}" for n in sorted(names)]):
            if st.get("Architecture") == deb:
                found.setdefault(st.get("Version"), st)
        out = []
        for version in self.series_versions(found):
            st = found[version]
            deps = _depends(st)
            common = next((d for d in deps if re.match(r"^linux-headers-\S+-common$", d)), None)
            kbuild = next((d for d in deps if d.startswith("linux-kbuild-")), None)
            if common and kbuild:
                out.append((version, [f"{st['Package']}:{deb}={version}", f"{common}={version}",
                                      f"{kbuild}:{native}={version}"]))
        return out

    def _keep_newer_kbuild(self, deb, version):
        """The version of the linux-kbuild package of DEB's name already in the root when it is
        newer than VERSION (then DEB is not extracted), else None (and DEB's version recorded).
        bookworm's is one package per series (linux-kbuild-6.1): two architectures whose
        headers differ in version would otherwise overwrite each other's fixdep and modpost."""
        stamp = self.root / f".{deb.name.split('_')[0]}"
        have = stamp.read_text().strip() if stamp.exists() else None
        if have and have != version and _vkey(have) > _vkey(version):
            return have
        stamp.write_text(version + "\n")
        return None

    def get(self, arch):
        """(headers folder inside the root, note or "") of ARCH, fetched and extracted when the
        root has none yet."""
        stamp = self.root / f".headers-{arch.name}"
        if stamp.exists():
            kdir, _, note = stamp.read_text().partition("\n")
            return kdir, note.strip()
        cands = self.candidates(arch)
        if not cands:
            raise Failure(f"the {self.suite.name} archive has no linux-headers-{arch.headers_flavour} of "
                          f"{self.suite.series} for {arch.name}")
        tried = []
        for version, pkgs in cands:
            dl = self.apt().dir / "dl"
            for f in dl.glob("*.deb"):
                f.unlink()
            try:
                debs = self.apt().download(pkgs)
            except Failure:
                tried.append(version)
                continue
            notes = [f"headers {version} (newest {', '.join(tried)}: not downloadable here)"] if tried else []
            for deb in debs:
                if deb.name.startswith("linux-kbuild-"):
                    kept = self._keep_newer_kbuild(deb, version)
                    if kept:
                        notes.append(f"fixdep and modpost of {kept} (one {deb.name.split('_')[0]} per root)")
                        continue
                extract_deb(deb, self.root)
            name = pkgs[0].split(":")[0]
            kdir = f"/usr/src/{name}"
            if not (self.root / kdir.lstrip("/") / "Makefile").exists():
                raise Failure(f"{pkgs[0]} has no {kdir}/Makefile")
            note = "; ".join(notes)
            stamp.write_text(f"{kdir}\n{note}\n")
            say(f"{arch.name} headers of {self.suite.name}: {' '.join(p.split(':')[0] for p in pkgs)} {version}"
                + (f"; {note}" if note else ""))
            return kdir, note
        raise Failure(f"no version of linux-headers-{arch.headers_flavour} ({arch.name}, {self.suite.name}) "
                      f"downloads: tried {', '.join(tried)}; see {self.apt().dir}/download.log")


class CrossKernel:
    """A foreign architecture's kernel of SUITE for the initramfs guests, as a porter boots
    one: the release whose headers the suite's cross root has (CrossHeaders: the module is
    cross-built there against them, with the kernel's own gcc), its image and busybox-static
    of that architecture fetched with the same private apt and extracted, not installed, into
    $NTSYNC_CACHE/kernels/SUITE-ARCH (the image, the kernel's own ntsync.ko where it has one,
    busybox). The image package is linux-image-KREL (6.x) or linux-binary-KREL and
    linux-modules-KREL (7.x, where linux-image-KREL is a meta package of both); the image is
    /boot/IMAGE-KREL or /usr/lib/modules/KREL/vmlinuz. A stamp (.complete, the release) keeps
    it while the headers stay."""

    def __init__(self, suite, arch):
        self.suite = suites.get(suite, quiet=True)
        self.arch = arch
        self.root = xroot(self.suite.name)
        self.headers = CrossHeaders(self.suite.name, self.root)
        self.kdir, self.note = self.headers.get(arch)
        self.release = self.kdir.rsplit("linux-headers-", 1)[1]
        self.dir = cache() / "kernels" / f"{self.suite.name}-{arch.name}"
        self.files = self.dir / "root"
        self._fetch()

    @property
    def image(self):
        for p in (self.files / "boot" / f"{self.arch.kernel_image}-{self.release}",
                  self.files / "usr/lib/modules" / self.release / "vmlinuz"):
            if p.is_file():
                return p
        return None

    @property
    def busybox(self):
        for p in (self.files / "bin/busybox", self.files / "usr/bin/busybox"):
            if p.is_file():
                return p
        return None

    def _packages(self, apt):
        """The packages of the image (and modules) of the release, for the architecture (one
        apt-cache call: each costs a minute with every architecture's indexes)."""
        a = self.arch.debian_arch
        split = [f"linux-binary-{self.release}", f"linux-modules-{self.release}"]
        plain = [f"linux-image-{self.release}", f"linux-image-{self.release}-unsigned"]
        found = {st.get("Package") for st in apt.stanzas(*[f"{n}:{a}" for n in split + plain], strict=True)
                 if st.get("Architecture") == a}
        if split[0] in found:
            return [f"{p}:{a}" for p in split]
        for name in plain:
            if name in found:
                return [f"{name}:{a}"]
        raise Failure(f"the {self.suite.name} archive has no linux-image-{self.release} for {a} "
                      f"(the release of its headers in {self.root})")

    def _fetch(self):
        stamp = self.dir / ".complete"
        if stamp.exists() and stamp.read_text().strip() == self.release and self.image and self.busybox:
            return
        say(f"fetching the {self.arch.name} kernel {self.release} and busybox-static of {self.suite.name}")
        apt = self.headers.apt()
        pkgs = self._packages(apt) + [f"busybox-static:{self.arch.debian_arch}"]
        for f in (apt.dir / "dl").glob("*.deb"):
            f.unlink()
        debs = apt.download(pkgs)
        safe_rm(self.dir)
        self.files.mkdir(parents=True)
        for deb in debs:
            # the image, the kernel's own ntsync.ko (7.x) and busybox; not the other modules
            r = subprocess.run(["bash", "-o", "pipefail", "-c",
                                'dpkg-deb --fsys-tarfile "$1" | tar -x --wildcards --keep-directory-symlink '
                                '-C "$2" "./boot/*" "./usr/lib/modules/*/vmlinuz" "*/ntsync.ko*" '
                                '"./bin/busybox" "./usr/bin/busybox" 2>&1 | grep -v "Not found in archive" '
                                '| grep -v "Exiting with failure" || true',
                                "bash", str(deb), str(self.files)], capture_output=True, text=True)
            if r.stdout.strip():
                raise Failure(f"extracting {deb.name}: {r.stdout.strip()}")
        if not self.image:
            raise Failure(f"no kernel image {self.arch.kernel_image}-{self.release} (or "
                          f"usr/lib/modules/{self.release}/vmlinuz) in {' '.join(d.name for d in debs)}")
        if not self.busybox:
            raise Failure(f"no busybox in busybox-static:{self.arch.debian_arch}")
        stamp.write_text(self.release + "\n")
        say(f"{self.arch.name} kernel {self.release}: {self.image.relative_to(self.dir)}")

    def build_module(self, logf, src=REPO, flags=("W=1",)):
        """Cross-build the module from SRC against the release's headers (build_module)."""
        return build_module(self.root, self.kdir, logf, src=src, dest=f"/tmp/ntsync-boot-{self.arch.name}",
                            flags=[*flags, *self.arch.cross_make_flags()])


def cached_root(root, release, sources, packages, what, architectures=()):
    """A root of PACKAGES from RELEASE kept in ROOT (stamp ROOT/.complete, log in
    ROOT/../logs/NAME-root.log), built when missing or stale under the one cache policy;
    packages a newer version of this tool wants are added to a fresh root in place."""
    root = Path(root)
    name = root.name
    logf = root.parent / "logs" / f"{name}-root.log"
    complete = root / ".complete"
    why = stale(complete)
    if why is None:
        _add_missing(what, root, packages, logf)
        return root
    require_root(f"building the {what}")
    clean_stale()
    tmp = root.with_name(f"{name}.tmp-{os.getpid()}")
    say(f"building the {what} ({why}; mmdebstrap, a minute or more; log {logf})")
    t = time.monotonic()
    try:
        mmdebstrap(release, tmp, sources, packages, logf, architectures=architectures)
    except Failure:
        safe_rm(tmp)
        raise
    safe_rm(root)
    tmp.rename(root)
    complete.write_text(",".join(packages) + "\n")
    say(f"{what} ready in {time.monotonic() - t:.0f} s")
    return root


def base_tarball(suite):
    """The minimal root of SUITE as a tarball, as piuparts wants its base chroot (-b): what
    `debootstrap --variant=minbase` makes (mmdebstrap's minbase: Essential, Priority required,
    apt), with the suite's sources; $NTSYNC_CACHE/piuparts/SUITE-base.tar, built when missing or
    stale under the one cache policy."""
    s = suites.get(suite, quiet=True)
    out = cache() / "piuparts" / f"{s.name}-base.tar.gz"  # piuparts unpacks it with tar -z
    stamp = out.with_name(out.name + ".complete")
    why = stale(stamp)
    if why is None and "docs" not in stamp.read_text():
        why = "made with /usr/share/doc left out (piuparts: broken symlinks)"
    if why is None and out.exists():
        return out
    require_root("building piuparts' base tarball")
    out.parent.mkdir(parents=True, exist_ok=True)
    for old in out.parent.glob(f"{s.name}-base.tmp-*.tar*"):  # of an interrupted run
        pid = old.name.split(".tmp-", 1)[1].split(".", 1)[0]
        if not (pid.isdigit() and Path(f"/proc/{pid}").exists()):
            old.unlink(missing_ok=True)
    tmp = out.with_name(f"{s.name}-base.tmp-{os.getpid()}.tar.gz")  # mmdebstrap: the name says the format
    logf = out.parent / "logs" / f"{s.name}-base.log"
    say(f"building the {s.name} base tarball for piuparts ({why or 'missing'}; mmdebstrap minbase; log {logf})")
    t = time.monotonic()
    try:
        # With its documentation: a root without /usr/share/doc has symlinks there that
        # piuparts reports as broken.
        mmdebstrap(s.release, tmp, s.sources, ["apt"], logf, variant="minbase", docs=True)
    except Failure:
        tmp.unlink(missing_ok=True)
        raise
    tmp.rename(out)
    stamp.write_text(f"{s.release} minbase docs\n")
    say(f"{s.name} base tarball ready in {time.monotonic() - t:.0f} s")
    return out


def kernel_release(root, pattern="*", arch=None):
    """The newest kernel of a kernel root: (release, path of its image)."""
    prefix = (arch or arches.get()).kernel_image + "-"

    def vkey(p):
        return [int(x) if x.isdigit() else 0 for x in p.name[len(prefix):].replace("-", ".").split(".")]
    kernels = sorted(Path(root, "boot").glob(f"{prefix}{pattern}"), key=vkey)
    if not kernels:
        raise Failure(f"no kernel image {prefix}{pattern} in {root}/boot; remove {root} and rerun")
    return kernels[-1].name[len(prefix):], kernels[-1]


def headers_dir(root, arch=None):
    """/usr/src/linux-headers-*-FLAVOUR of a kernel root (the path inside it)."""
    dirs = sorted(Path(root, "usr/src").glob((arch or arches.get()).headers_glob()))
    if not dirs:
        raise Failure(f"no cloud headers in {root}/usr/src; remove {root} and rerun")
    return "/" + str(dirs[-1].relative_to(root))


def install_module_source(root, dest, src=REPO):
    """Lay out the module's sources of tree SRC in ROOT/DEST as DKMS sees them, through THE
    script that does it (module/install-source); returns the path inside the root. A tree
    older than that script (boot --module-src) gets this tree's copy of it."""
    target = Path(str(root) + dest)
    safe_rm(target)
    script = Path(src) / "module/install-source"
    with tempfile.TemporaryDirectory(prefix="ntsync-src-") as tmp:
        if not script.exists():
            shutil.copytree(src, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
            script = Path(tmp) / "module/install-source"
            shutil.copy2(REPO / "module/install-source", script)
        r = subprocess.run(["bash", str(script), str(target)], capture_output=True, text=True)
    if r.returncode:
        raise Failure(f"{script} {target} failed: {r.stderr.strip()}")
    return dest


def build_module(root, kdir, logf, src=REPO, dest="/tmp/ntsync", flags=("W=1",)):
    """Build the module from SRC in ROOT against KDIR (a path inside the root). Returns
    (ok, path of ntsync.ko on the host); the build's output is in LOGF."""
    install_module_source(root, dest, src)
    with open(logf, "w") as lf:
        r = in_root(root, ["make", "-s", "--no-print-directory", "-C", f"{dest}/module", f"KDIR={kdir}", *flags],
                    stdout=lf, stderr=subprocess.STDOUT)
    ko = Path(str(root) + dest) / "module" / "ntsync.ko"
    return r.returncode == 0 and ko.exists(), ko


class Apt:
    """The host's apt-get with a private state under DIR (its own sources list, lists and
    cache; nothing of the host's apt is read or written): how packages that no root installs
    are fetched (linux-source-7.3 for the upstream job, bookworm's kernel for the 6.1 Wine
    guest). SOURCES: sources.list lines, signed by Debian's archive keyring."""

    # REUSE: indexes younger than this are read again rather than fetched again
    REUSE_HOURS = 6

    def __init__(self, dir, sources, architectures=(), reuse=False):
        keyring = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
        if not keyring.exists():
            raise Failure(f"{keyring} is missing; install debian-archive-keyring", 2)
        self.dir = Path(dir)
        sources_text = "".join(line.replace("deb ", f"deb [signed-by={keyring}] ", 1) + "\n" for line in sources)
        fresh = self.dir / ".updated"
        self.opts = ["-q", "-o", f"Dir::Etc::SourceList={self.dir}/sources.list",
                     "-o", "Dir::Etc::SourceParts=/dev/null", "-o", f"Dir::State::Lists={self.dir}/lists",
                     "-o", f"Dir::State::status={self.dir}/status",
                     "-o", f"Dir::Cache={self.dir}/cache", "-o", "Acquire::Check-Valid-Until=false"]
        if architectures:
            # the first is the native one (the host's: its linux-kbuild runs here), the others
            # foreign: `apt-get download NAME:ARCH` fetches their packages, nothing installs them
            self.opts += ["-o", f"APT::Architecture={architectures[0]}",
                          "-o", f"APT::Architectures={','.join(architectures)}"]
        said = sources_text + ",".join(architectures) + "\n"
        if (reuse and fresh.exists() and fresh.read_text() == said
                and time.time() - fresh.stat().st_mtime < self.REUSE_HOURS * 3600):
            return
        shutil.rmtree(self.dir, ignore_errors=True)
        for d in ("lists/partial", "cache/archives/partial", "dl"):
            (self.dir / d).mkdir(parents=True)
        (self.dir / "status").write_text("")  # the host's installed packages are not offered
        (self.dir / "sources.list").write_text(sources_text)
        self._run("update", ["apt-get", *self.opts, "update"])
        fresh.write_text(said)

    def _run(self, what, cmd, **kw):
        with open(self.dir / f"{what}.log", "a") as lf:
            r = subprocess.run(cmd, cwd=self.dir / "dl", stdout=kw.pop("stdout", lf), stderr=lf, text=True, **kw)
        if r.returncode:
            raise Failure(f"apt-get {what} failed; last lines of {self.dir}/{what}.log:\n"
                          f"{tail_text(self.dir / f'{what}.log', 15)}", 3)
        return r

    def depends(self, package):
        """The packages PACKAGE depends on (apt-cache depends), first alternative only."""
        r = self._run("depends", ["apt-cache", *self.opts, "depends", "--no-recommends", "--no-suggests",
                                  package], stdout=subprocess.PIPE)
        deps, alternative = [], False
        for line in r.stdout.splitlines():
            kind, _, name = line.strip().partition(": ")
            if kind in ("Depends", "|Depends"):
                if not alternative and not name.startswith("<"):
                    deps.append(name.split()[0])
                alternative = kind == "|Depends"
        return deps

    def download(self, packages):
        """PACKAGES' .debs in DIR/dl."""
        self._run("download", ["apt-get", *self.opts, "download", *packages])
        return sorted((self.dir / "dl").glob("*.deb"))

    def pkgnames(self, prefix):
        """The names of every package the sources offer (any architecture) starting with PREFIX."""
        r = subprocess.run(["apt-cache", *self.opts, "pkgnames", prefix], capture_output=True, text=True)
        return sorted(set(r.stdout.split()))

    def stanzas(self, *packages, strict=False):
        """Every version the sources offer of PACKAGES (NAME or NAME:ARCH): their control
        fields as dicts, as `apt-cache show` prints them (packages nobody offers: none).
        STRICT: apt-cache's own failure is a Failure, not an empty answer."""
        if not packages:
            return []
        r = subprocess.run(["apt-cache", *self.opts, "show", *packages], capture_output=True, text=True)
        if strict and r.returncode:
            raise Failure(f"apt-cache show {' '.join(packages)} failed: {r.stderr.strip()[-800:]}", 3)
        out, cur, key = [], {}, None
        for line in r.stdout.splitlines() + [""]:
            if not line.strip():
                if cur:
                    out.append(cur)
                cur, key = {}, None
            elif line[0] in " \t" and key:
                cur[key] += "\n" + line.strip()
            else:
                key, _, value = line.partition(":")
                cur[key] = value.strip()
        return out

    def has(self, package):
        """Whether the sources offer PACKAGE, as a package or as what one provides (trixie's
        libssl3t64 provides bookworm's libssl3: fetching that would replace it)."""
        r = subprocess.run(["apt-cache", *self.opts, "showpkg", package], capture_output=True, text=True)
        lines = r.stdout.splitlines()
        if r.returncode or f"Package: {package}" not in lines:
            return False
        # showpkg prints "Versions: " and "Reverse Provides: " each followed by its lines.
        sections, current = {}, None
        for line in lines:
            if line.endswith(": ") or line.endswith(":"):
                current = line.rstrip(": ")
                sections[current] = []
            elif current and line.strip():
                sections[current].append(line)
        return bool(sections.get("Versions") or sections.get("Reverse Provides"))
