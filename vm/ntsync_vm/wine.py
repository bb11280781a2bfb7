"""`ntsync-vm wine --source DIR|TARBALL`: a real Wine, built the way a Debian user builds it,
against this tree's ntsync-uapi-dev (issue 25).

The build runs in a trixie root (roots.cached_root: mmdebstrap, aged like every root) with
trixie's gcc, mingw-w64 (the PE side) and the ntsync-uapi-dev package built from this tree
and installed with dpkg, and Wine's configure is given `pkg-config --cflags ntsync-uapi`,
the README's recipe. 64-bit only (--enable-win64, x86_64 PE): the 32-bit PE side (WoW64)
needs gcc-mingw-w64-i686 and builds every DLL twice, which a 2-core machine pays for with
most of another build.

The result is cached by the source's hash under $NTSYNC_CACHE/wine/HASH: the install of
`make install-lib` as wine.tar (DESTDIR layout, /opt/wine), the sync test programs, the
build log and facts.txt, which proves the backend is compiled in (config.h says
HAVE_LINUX_NTSYNC_H, wineserver contains "/dev/ntsync") and shows the other case: Wine's two
ntsync files compiled without our flags against trixie's own <linux/ntsync.h> (the 6.10
preview, without NTSYNC_IOC_EVENT_READ) are the stubs: no ioctl call, no device path.

Beside it, stub.tar: the same tree's server/wineserver and dlls/ntdll/ntdll.so rebuilt
(incrementally: the two backend files compiled again, the two binaries linked again) without
our flags, i.e. against trixie's own header: a Wine "configured without our header", whose
backend is the stubs. `--links SUITE` runs both in one guest and breaks each link of "is this
Wine process using ntsync?" in turn (issue 39; vm/guest/jobs/wine-links.sh, LINK_CASES).

Wine's source is not part of this tree and is never fetched by it: a user downloads one
(WineHQ's tarball, a git checkout, a wine-staging or wine-tkg tree) and names it here.
"""

import argparse
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import image, roots, suites
from .util import REPO, Failure, Usage, cache, fmt_secs, require_root, say

PACKAGES = ["gcc", "make", "flex", "bison", "gcc-mingw-w64-x86-64", "pkgconf", "libc6-dev", "perl",
            "xz-utils", "ca-certificates", "patch"]
PREFIX = "/opt/wine"
# The README's configure line: everything that needs a library we do not install is off.
CONFIGURE = ["./configure", "--enable-win64", f"--prefix={PREFIX}", "--without-x", "--without-freetype",
             "--without-fontconfig", "--without-gstreamer", "--without-alsa", "--without-pulse",
             "--without-cups", "--without-dbus", "--without-gnutls", "--without-krb5", "--without-sane",
             "--without-usb", "--without-v4l2", "--without-vulkan", "--without-opengl", "--without-sdl",
             "--without-udev", "--without-capi", "--without-gphoto", "--without-netapi", "--without-pcap",
             "--without-pcsclite", "--without-ffmpeg", "--without-wayland"]
# The test programs the guests run (Wine's own conformance tests of synchronization).
TEST_DIRS = ["dlls/ntdll/tests", "dlls/kernel32/tests"]
BACKEND = ["server/inproc_sync.c", "dlls/ntdll/unix/sync.c"]
WHERE = ("a Wine source, 10.16 or later: WineHQ's tarball (https://dl.winehq.org/wine/source/), "
         "a git checkout of Wine, or a wine-staging/wine-tkg tree; this project's machines have one "
         "in ../shared/wine/")


def source_hash(src):
    """12 hex digits naming SRC: a tarball's bytes, or a folder's files (names and contents)."""
    h = hashlib.sha256()
    if src.is_file():
        with open(src, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()[:12]
    for path in sorted(p for p in src.rglob("*") if p.is_file() and ".git" not in p.relative_to(src).parts):
        h.update(str(path.relative_to(src)).encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:12]


def check_source(src):
    """SRC must be a Wine source: a folder with configure and server/, or a tarball of one."""
    if src.is_dir():
        if not (src / "configure").is_file() or not (src / "server").is_dir():
            raise Usage(f"--source {src}: no Wine source there (no configure and server/); want {WHERE}")
        return
    if not src.is_file():
        raise Usage(f"--source {src}: no such file or folder; want {WHERE}")
    seen = set()
    try:
        with tarfile.open(src) as tf:
            for ti in tf:
                m = re.fullmatch(r"[^/]+/(configure|server/inproc_sync\.c|server/request\.c)", ti.name)
                if m:
                    seen.add(m.group(1))
    except (tarfile.TarError, OSError, EOFError) as e:
        raise Usage(f"--source {src}: not a readable tarball ({e}); want {WHERE}")
    if "configure" not in seen or "server/request.c" not in seen:
        raise Usage(f"--source {src}: not a Wine source tarball (no TOP/configure and TOP/server/); want {WHERE}")
    if "server/inproc_sync.c" not in seen:
        raise Usage(f"--source {src}: this Wine has no ntsync backend (no server/inproc_sync.c), so it is older "
                    f"than 10.16; want {WHERE}")


def wine_version(tree):
    try:
        return (tree / "VERSION").read_text().strip()
    except OSError:
        return "Wine (version unknown)"


def build_root():
    return roots.cached_root(cache() / "wine" / "root", "trixie", suites.SUITES["trixie"].sources,
                             PACKAGES, "Wine build root")


def install_uapi(root):
    """This tree's ntsync-uapi-dev, built as a package and installed in ROOT with dpkg."""
    from .cloud import build_debs
    deb = next((d for d in build_debs() if d.name.startswith("ntsync-uapi-dev_")), None)
    if deb is None:
        raise Failure("the packages built from this tree have no ntsync-uapi-dev; see debian/control")
    shutil.copy2(deb, root / "tmp" / deb.name)
    r = roots.in_root(root, ["dpkg", "-i", f"/tmp/{deb.name}"], capture_output=True, text=True)
    (root / "tmp" / deb.name).unlink(missing_ok=True)
    if r.returncode:
        raise Failure(f"dpkg -i {deb.name} in the Wine build root failed:\n{r.stdout}{r.stderr}")
    return deb.name


def sh(root, script, logf, what):
    """SCRIPT (sh) in ROOT, appended to LOGF; a failure names the step and the log."""
    with open(logf, "a") as lf:
        lf.write(f"\n### {what}: {script}\n")
        lf.flush()
        r = roots.in_root(root, ["sh", "-c", script], stdout=lf, stderr=subprocess.STDOUT)
    if r.returncode:
        tail = "\n  ".join(Path(logf).read_text(errors="replace").splitlines()[-25:])
        raise Failure(f"{what} failed (exit {r.returncode}); last lines of {logf}:\n  {tail}")


def out_of(root, script):
    return roots.in_root(root, ["sh", "-c", script], capture_output=True, text=True).stdout.strip()


def patches_key(patches):
    h = hashlib.sha256()
    for p in patches:
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:8]


def tree_state(root):
    try:
        return json.loads((root / "build" / "state.json").read_text())
    except (OSError, ValueError):
        return {}


def prepare_tree(root, src, key, patches, logf):
    """/build/wine in ROOT holding SRC (hash KEY) with PATCHES applied: the tree of the last
    build is kept, so a build of the same source with other patches is incremental (the old
    patches are reversed, the new ones applied, make rebuilds what they touch)."""
    tree = root / "build" / "wine"
    state = tree_state(root)
    if state.get("source") == key and state.get("configured") and tree.is_dir():
        for old in reversed(state.get("patches", [])):
            sh(root, f"cd /build/wine && patch -R -s -p1 < /build/patches/{old}", logf, f"reversing {old}")
        say("reusing the configured build tree of this source (incremental)")
        state["incremental"] = True
    else:
        roots.safe_rm(root / "build")
        tree.mkdir(parents=True)
        say(f"unpacking the source into the build root; log {logf}")
        if src.is_dir():
            subprocess.run(["cp", "-a", f"{src}/.", str(tree)], check=True)
        else:
            subprocess.run(["tar", "-xf", str(src), "-C", str(tree), "--strip-components=1"], check=True)
        state = {"source": key, "configured": False, "patches": [], "incremental": False}
    pdir = root / "build" / "patches"
    pdir.mkdir(exist_ok=True)
    names = []
    for n, p in enumerate(patches, 1):
        name = f"{n:02d}-{Path(p).name}"
        shutil.copy2(p, pdir / name)
        sh(root, f"cd /build/wine && patch -s -p1 < /build/patches/{name}", logf, f"applying {Path(p).name}")
        names.append(name)
    state["patches"] = names
    (root / "build" / "state.json").write_text(json.dumps(state) + "\n")
    return tree, state


def build(src, jobs=None, rebuild=False, patches=()):
    """The cached build of SRC with PATCHES applied: its folder under $NTSYNC_CACHE/wine."""
    src = Path(src).resolve()
    check_source(src)
    for p in patches:
        if not Path(p).is_file():
            raise Usage(f"--patch {p}: no such file")
    say(f"hashing the Wine source {src}")
    key = source_hash(src)
    name = key + (f"+{patches_key(patches)}" if patches else "")
    out = cache() / "wine" / name
    if (out / "ok").exists() and not rebuild:
        say(f"Wine build: cached {out} ({(out / 'facts.txt').read_text().splitlines()[0]})")
        if (out / "tests" / WINBENCH_STAMP).exists() and \
                (out / "tests" / WINBENCH_STAMP).read_text().strip() == winbench_hash():
            return out
        # tools/winbench changed since: only it is built again (seconds, not a Wine build)
        require_root("wine (building ntsync-winbench in the Wine build root)")
        build_winbench(build_root(), out / "tests")
        say(f"ntsync-winbench rebuilt from {WINBENCH.relative_to(REPO)} into {out / 'tests'}")
        return out
    require_root("wine (the build runs in a Debian root)")
    root = build_root()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    logf = out / "build.log"
    uapi = install_uapi(root)
    t0 = time.monotonic()
    tree, state = prepare_tree(root, src, key, patches, logf)
    version = wine_version(tree)
    jobs = jobs or os.cpu_count() or 2
    if not state["configured"]:
        say(f"{version}: configure (about 15 s)")
        sh(root, f'cd /build/wine && {shlex.join(CONFIGURE)} CPPFLAGS="$(pkg-config --cflags ntsync-uapi)"',
           logf, "configure")
        state["configured"] = True
        (root / "build" / "state.json").write_text(json.dumps(state) + "\n")
    have = out_of(root, "grep -c '^#define HAVE_LINUX_NTSYNC_H 1' /build/wine/include/config.h || true")
    if have != "1":
        raise Failure(f"configure did not find <linux/ntsync.h> with ntsync-uapi's flags "
                      f"(include/config.h has no HAVE_LINUX_NTSYNC_H); see {logf}")
    # Every directory's all target but the test programs', then the two test programs the
    # guests run: most of Wine's 327 test programs are left out (the build's biggest cost).
    # programs/winetest is left out with them: its winetest.exe embeds every test program,
    # so its all target alone builds them all.
    targets = out_of(root, "cd /build/wine && sed -n 's,^\\([^ :#]*\\)/all:.*,\\1/all,p' Makefile "
                           "| grep -v -e '/tests/all$' -e '^po/all$' -e '^programs/winetest/all$' "
                           "| tr '\\n' ' '")
    if not targets:
        raise Failure(f"Wine's Makefile lists no DIR/all targets; see {logf}")
    targets += " " + " ".join(f"{d}/all" for d in TEST_DIRS)
    say(f"{version}: make -k -j{jobs} ({len(targets.split())} targets; a first build takes about 40 min "
        "on 2 cores)")
    t1 = time.monotonic()
    sh(root, f"cd /build/wine && make -k -j{jobs} {targets} >/build/make.log 2>&1; "
             "grep -E '^make(\\[[0-9]+\\])?: \\*\\*\\*' /build/make.log | sort -u | tail -n 40; true", logf, "make")
    make_secs = time.monotonic() - t1
    return finish_build(root, tree, src, name, out, uapi, version, jobs, make_secs, t0, patches)


def finish_build(root, tree, src, name, out, uapi, version, jobs, make_secs, t0, patches=()):
    """After make: install-lib, the package of the result, the test programs, the facts."""
    shutil.copy2(root / "build/make.log", out / "make.log")
    failed = sorted(set(re.findall(r"\*\*\* \[[^]]*: ([^]]+)\] Error",
                                   (out / "make.log").read_text(errors="replace"))))
    for needed in ("server/wineserver", "loader/wine", "dlls/ntdll/ntdll.so"):
        if not (tree / needed).exists():
            raise Failure(f"the build made no {needed}; failed targets: {', '.join(failed) or 'none named'}; "
                          f"see {out / 'make.log'}")
    # install-lib wants every target; the ones that cannot be built here (the fonts without
    # FreeType, sqlite3 without its amalgamation) are made empty, and said so.
    # The tree is kept between builds: an incremental make finds the empty files of the last
    # one up to date, so the list lives in the state file.
    state = tree_state(root)
    emptied = sorted(set(state.get("emptied", [])) | set(failed))
    for f in emptied:
        p = tree / f
        if not p.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"")
    state["emptied"] = emptied
    (root / "build" / "state.json").write_text(json.dumps(state) + "\n")
    roots.safe_rm(root / "build/inst")
    sh(root, "cd /build/wine && make -k install-lib DESTDIR=/build/inst >/build/install.log 2>&1; "
             f"test -x /build/inst{PREFIX}/bin/wine && test -x /build/inst{PREFIX}/bin/wineserver", out / "build.log",
       "make install-lib")
    # Wine builds with -g: the debug information is three quarters of the install, and the
    # guests (TCG) would unpack it for nothing.
    strip_debug(root, root / "build/inst")
    subprocess.run(["tar", "-cf", str(out / "wine.tar"), "-C", str(root / "build/inst"), "."], check=True)
    tests = out / "tests"
    tests.mkdir(exist_ok=True)
    for d in TEST_DIRS:
        exe = next(iter(sorted((tree / d).glob("*_test.exe")) + sorted((tree / d).glob("x86_64-windows/*_test.exe"))),
                   None)
        if exe is None:
            raise Failure(f"no test program in {d}; see {out / 'make.log'}")
        shutil.copy2(exe, tests / exe.name)
    build_winbench(root, tests)
    facts = prove_backend(root, tree)
    lines = [f"{version}, source {src.name} ({name}), built {time.strftime('%Y-%m-%d')} in a trixie root "
             f"with {uapi}" + (f"; patches: {', '.join(Path(p).name for p in patches)}" if patches else ""),
             f"make: {fmt_secs(make_secs)} with -j{jobs}"
             + (" (incremental: on the tree an earlier build of this source left)" if state.get("incremental") else
                " (from scratch)") + f"; whole build {fmt_secs(time.monotonic() - t0)}",
             f"targets that failed and were made empty for install-lib: {summarize(emptied)} (emptied.txt)",
             f"install: {sum(1 for _ in (root / 'build/inst').rglob('*'))} files, "
             f"{(out / 'wine.tar').stat().st_size // 2**20} MiB (wine.tar)"] + facts
    (out / "facts.txt").write_text("\n".join(lines) + "\n")
    (out / "emptied.txt").write_text("".join(f + "\n" for f in emptied))
    roots.safe_rm(root / "build/inst")
    (out / "ok").write_text("")
    for line in lines:
        print(line)
    return out


def summarize(paths):
    """'50 in fonts/, 1 in dlls/winsqlite3/x86_64-windows/ (winsqlite3.dll)': PATHS by folder."""
    if not paths:
        return "none"
    folders = {}
    for p in paths:
        folders.setdefault(str(Path(p).parent) + "/", []).append(Path(p).name)
    return ", ".join(f"{len(n)} in {d}" + (f" ({n[0]})" if len(n) == 1 else "")
                     for d, n in sorted(folders.items(), key=lambda kv: -len(kv[1])))


def strip_debug(root, top):
    """strip --strip-debug every ELF and PE file under TOP (inside ROOT), with the root's
    binutils and mingw-w64's."""
    kinds = {b"\x7fELF": "strip", b"MZ": "x86_64-w64-mingw32-strip"}
    files = {tool: [] for tool in kinds.values()}
    for f in sorted(p for p in top.rglob("*") if p.is_file() and not p.is_symlink()):
        with open(f, "rb") as fh:
            head = fh.read(4)
        for magic, tool in kinds.items():
            if head.startswith(magic):
                files[tool].append("/" + str(f.relative_to(root)))
    for tool, paths in files.items():
        for i in range(0, len(paths), 200):
            r = roots.in_root(root, [tool, "--strip-debug", *paths[i:i + 200]], capture_output=True, text=True)
            if r.returncode:
                raise Failure(f"{tool} --strip-debug failed in the Wine build root:\n{r.stderr[-2000:]}")
    return sum(len(p) for p in files.values())


WINBENCH = REPO / "tools/winbench/ntsync-winbench.c"
WINBENCH_STAMP = "ntsync-winbench.source"  # beside the .exe: the hash of the source it was built from


def winbench_hash():
    return hashlib.sha256(WINBENCH.read_bytes()).hexdigest()[:12]


def build_winbench(root, dest):
    """tools/winbench/ntsync-winbench.c as a Windows program, with the build root's mingw-w64."""
    shutil.copy2(WINBENCH, root / "tmp/ntsync-winbench.c")
    r = roots.in_root(root, ["x86_64-w64-mingw32-gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
                             "/tmp/ntsync-winbench.exe", "/tmp/ntsync-winbench.c"], capture_output=True, text=True)
    if r.returncode:
        raise Failure(f"building {WINBENCH.relative_to(REPO)} with mingw-w64 failed:\n{r.stdout}{r.stderr}")
    shutil.move(root / "tmp/ntsync-winbench.exe", dest / "ntsync-winbench.exe")
    (root / "tmp/ntsync-winbench.c").unlink()
    (dest / WINBENCH_STAMP).write_text(winbench_hash() + "\n")


def compile_command(root, f, uapi):
    """The build's own command line that compiles backend file F (make -n), which carries
    ntsync-uapi's flags UAPI literally (Wine's Makefile writes configure's CPPFLAGS into each
    rule, so `make CPPFLAGS=` cannot take them out)."""
    obj = f[:-2] + ".o"
    # make -n prints Wine's long command lines continued with backslashes: join them.
    cmd = out_of(root, f"cd /build/wine && make -n -B {obj} 2>/dev/null | sed -e :a -e '/\\\\$/N; "
                       f"s/\\\\\\n//; ta' | grep -F -- '-o {obj}' | tail -n 1")
    if f"-o {obj}" not in cmd or uapi not in cmd:
        raise Failure(f"cannot find the command that compiles {f} with ntsync-uapi's flags (make -n -B {obj})")
    return cmd


def prove_backend(root, tree):
    """Facts: the backend is compiled in; the same files without our flags give stubs."""
    facts = []
    hits = out_of(root, "grep -c /dev/ntsync /build/wine/server/wineserver || true")
    if hits in ("", "0"):
        raise Failure("the wineserver built has no /dev/ntsync in it: the ntsync backend is not compiled in")
    facts.append("backend compiled in: include/config.h has HAVE_LINUX_NTSYNC_H 1; server/wineserver "
                 "contains /dev/ntsync")
    # Each backend file compiled to assembly with the build's own command line (make -n),
    # with our flags and with them taken out: count the ioctl calls and the device path.
    uapi = out_of(root, "pkg-config --cflags ntsync-uapi")
    if not uapi:
        raise Failure("pkg-config --cflags ntsync-uapi printed nothing in the Wine build root")
    for f in BACKEND:
        obj = f[:-2] + ".o"
        cmd = compile_command(root, f, uapi)
        counts = {}
        for label, flags in (("with", uapi), ("without", "")):
            one = cmd.replace(f"-o {obj}", f"-S -o /tmp/{label}.s").replace(uapi, flags)
            script = (f"cd /build/wine && {one} 2>/tmp/cc.err && "
                      f"grep -c -E 'call[[:space:]]+ioctl|/dev/ntsync' /tmp/{label}.s || true")
            counts[label] = out_of(root, script) or f"not compiled ({out_of(root, 'head -n 1 /tmp/cc.err')})"
        facts.append(f"{f}: ioctl calls and device paths in its code: {counts['with']} with "
                     f"`pkg-config --cflags ntsync-uapi`, {counts['without']} without (trixie's own "
                     f"<linux/ntsync.h>: the stubs)")
        if counts["with"] in ("0", "") or counts["without"] != "0":
            raise Failure(f"{f}: expected ioctl calls with our flags and none without: {counts}")
    return facts


STUB = "stub.tar"  # beside wine.tar: the stub build's wineserver and ntdll.so, paths relative to PREFIX
NTDLL = "lib/wine/x86_64-unix/ntdll.so"


def build_stub(out):
    """OUT/stub.tar: the stub build of OUT's Wine, from the build tree kept in the build root.
    The two backend objects are compiled again by their own command lines with ntsync-uapi's
    flags taken out (so <linux/ntsync.h> is trixie's own, without NTSYNC_IOC_EVENT_READ: what
    configure without our header gives), wineserver and ntdll.so linked again and kept; then
    the objects are compiled again with the flags, so the tree stays the real build's (for
    --patch). About two minutes."""
    if (out / STUB).is_file():
        return out / STUB
    require_root("wine (the stub build runs in the Wine build root)")
    root = build_root()
    state = tree_state(root)
    if not out.name.startswith(state.get("source", "-")) or not (root / "build/wine/server/wineserver").exists() \
            or ("+" in out.name) != bool(state.get("patches")):
        raise Failure(f"the Wine build root's tree is not the tree of {out.name} (another build came since): "
                      f"build it again with --rebuild, then --links")
    logf = out / "build.log"
    objs = " ".join(f[:-2] + ".o" for f in BACKEND)
    bins = "server/wineserver dlls/ntdll/ntdll.so"
    say("the stub build: server/ and dlls/ntdll/'s backend files compiled without our flags, "
        "wineserver and ntdll.so linked again (incremental)")
    roots.safe_rm(root / "build/stub")
    uapi = out_of(root, "pkg-config --cflags ntsync-uapi")
    if not uapi:
        raise Failure("pkg-config --cflags ntsync-uapi printed nothing in the Wine build root")
    stubs = " && ".join(compile_command(root, f, uapi).replace(uapi, "") for f in BACKEND)
    try:
        sh(root, f"cd /build/wine && rm -f {objs} && {stubs} && make {bins} >/build/stub-make.log 2>&1 && "
                 f"install -D -m 755 server/wineserver /build/stub/bin/wineserver && "
                 f"install -D -m 755 dlls/ntdll/ntdll.so /build/stub/{NTDLL} && "
                 f"strip --strip-debug /build/stub/bin/wineserver /build/stub/{NTDLL}", logf, "the stub build")
    finally:
        # the tree back to the real build's
        sh(root, f"cd /build/wine && rm -f {objs} && make {bins} >>/build/stub-make.log 2>&1", logf,
           "the real build's backend objects again")
    # No check here on a string: the guest's ntsync-info --check-wine decides from the code
    # (and prove_backend showed that these two files compiled so have no ioctl calls).
    hits = out_of(root, "grep -c /dev/ntsync /build/stub/bin/wineserver || true") or "0"
    subprocess.run(["tar", "-cf", str(out / (STUB + ".tmp")), "-C", str(root / "build/stub"), "."], check=True)
    os.replace(out / (STUB + ".tmp"), out / STUB)
    roots.safe_rm(root / "build/stub")
    with open(out / "facts.txt", "a") as f:
        f.write(f"stub build ({STUB}): server/wineserver and dlls/ntdll/ntdll.so of the same tree, "
                f"{' and '.join(BACKEND)} compiled without `pkg-config --cflags ntsync-uapi` "
                f"(trixie's own <linux/ntsync.h>); lines of its wineserver with /dev/ntsync: {hits}\n")
    return out / STUB


GUEST_DEBS = ["bubblewrap"]  # Debian's packages the links guest installs (the image has no network)


def guest_debs():
    """$NTSYNC_CACHE/wine/debs: trixie's .debs of GUEST_DEBS, downloaded once with apt in the
    Wine build root."""
    d = cache() / "wine" / "debs"
    have = {p.name.split("_")[0] for p in d.glob("*.deb")} if d.is_dir() else set()
    if set(GUEST_DEBS) <= have:
        return d
    require_root("wine (apt-get download in the Wine build root)")
    root = build_root()
    say(f"apt-get download {' '.join(GUEST_DEBS)} (trixie) in the Wine build root")
    roots.safe_rm(root / "tmp/debs")
    r = roots.in_root(root, ["sh", "-c", "mkdir -p /tmp/debs && apt-get -o Acquire::Check-Valid-Until=false "
                             "update -qq && cd /tmp/debs && apt-get download -qq \"$@\"", "sh", *GUEST_DEBS],
                      capture_output=True, text=True)
    if r.returncode:
        raise Failure(f"apt-get download {' '.join(GUEST_DEBS)} in the Wine build root failed:\n{r.stdout}{r.stderr}")
    d.mkdir(parents=True, exist_ok=True)
    for p in (root / "tmp/debs").glob("*.deb"):
        shutil.copy2(p, d / p.name)
    roots.safe_rm(root / "tmp/debs")
    return d


# ------------------------------------------------------------------ guests

# What include/wine/test.h prints: "PID:TEST:ELAPSED N tests executed (T marked as todo, F as
# flaky, X failures), S skipped." (ELAPSED empty unless WINETEST_TIME is set) at the end of
# every process of a test (children print their own), and "FILE:LINE:ELAPSED Test failed: ...".
SUMMARY = re.compile(r"^[0-9a-f]+:(\w+):[0-9.]* (\d+) tests executed \((\d+) marked as todo, (\d+) as flaky, "
                     r"(\d+) failures?\), (\d+) skipped\.")
FAILED_LINE = re.compile(r"^(\w+\.c:\d+):[0-9.]* Test failed: (.*)$")


def judge_log(path):
    """(executed, todo, failures, skipped, [failing lines], exit) of one test program's log."""
    text = Path(path).read_text(errors="replace") if Path(path).exists() else ""
    executed = todo = failures = skipped = 0
    fails = []
    seen = False
    for line in text.splitlines():
        m = SUMMARY.match(line)
        if m:
            seen = True
            executed += int(m.group(2))
            todo += int(m.group(3))
            failures += int(m.group(5))
            skipped += int(m.group(6))
        f = FAILED_LINE.match(line)
        if f:
            fails.append(f"{f.group(1)}: {f.group(2).strip()}")
    ex = re.findall(r"^exit (\d+)$", text, re.M)
    return {"executed": executed, "todo": todo, "failures": failures, "skipped": skipped, "fails": fails,
            "exit": int(ex[-1]) if ex else None, "summary": seen}


def judge_run(results, label):
    """Rows of one guest run's Wine results: [(config, program, test, counts)]."""
    rows = []
    wdir = Path(results) / "wine"
    for t in TESTS:
        exe, name = t.split(":")
        for cfg in (label, "none"):
            rows.append((cfg, exe, name, judge_log(wdir / f"{cfg}-{exe[:-len('_test.exe')]}-{name}.log")))
    return rows


# The build root's suite, and the suites whose userland is older: their kernel is booted in
# an image of USERLAND (--run bookworm: 6.1 with our module, trixie's glibc).
USERLAND = "trixie"
OLDER_USERLAND = ("bookworm",)

TESTS = ["ntdll_test.exe:sync", "ntdll_test.exe:om", "ntdll_test.exe:thread", "kernel32_test.exe:sync",
         "kernel32_test.exe:thread", "kernel32_test.exe:process"]


def judge_snapshot(wdir, cfg):
    """Part 4: what ntsync-info (root, in the guest, while kernel32's sync test ran) saw.
    With a driver: wineserver and a Windows process hold the device and objects; without
    one: nobody does, and the wineserver is named as running without the device. Returns
    the failures (empty: it holds)."""
    f = Path(wdir) / f"{cfg}-ntsync-info.json"
    try:
        procs = json.loads(f.read_text())["processes"]
    except (OSError, ValueError, KeyError) as e:
        return [f"{cfg}: no ntsync-info snapshot ({f.name}: {e})"]
    users = procs.get("users", [])
    servers = [u for u in users if u.get("wineserver")]
    clients = [u for u in users if not u.get("wineserver")]
    if cfg == "none":
        bad = []
        if users:
            bad.append(f"none: without the driver ntsync-info lists {len(users)} users of the device")
        if not procs.get("wineservers_without_device"):
            bad.append("none: ntsync-info does not name the wineserver that runs without the device")
        return bad
    bad = []
    if not any(u["device_fds"] >= 1 and u["object_fds"] >= 1 for u in servers):
        bad.append(f"{cfg}: no wineserver with /dev/ntsync and objects open in ntsync-info's list")
    if not any(u["device_fds"] + u["object_fds"] >= 1 for u in clients):
        bad.append(f"{cfg}: no Windows process with the device or objects open in ntsync-info's list")
    if procs.get("wineservers_without_device"):
        bad.append(f"{cfg}: ntsync-info names a wineserver running without the device")
    return bad


def snapshot_line(wdir, cfg):
    """One line of what ntsync-info saw in CFG."""
    try:
        procs = json.loads((Path(wdir) / f"{cfg}-ntsync-info.json").read_text())["processes"]
    except (OSError, ValueError, KeyError):
        return f"{cfg}: no snapshot"
    who = ", ".join(f"{u['comm']} ({u['device_fds']} device, {u['object_fds']} objects)"
                    for u in procs.get("users", []))
    without = procs.get("wineservers_without_device") or []
    return (f"{cfg}: {procs.get('using', 0)} processes use the device{': ' + who if who else ''}"
            + (f"; wineserver pid {', '.join(map(str, without))} runs without it" if without else ""))


WINBENCH_ROW = re.compile(r"^([a-z][\w.-]+)\s+(\d+)\s+(\d+)$")


def winbench_rows(path):
    """{row: [ns per op of each run, in order]} of one ntsync-winbench output, or {} when it
    did not finish."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return {}
    if "ntsync-winbench: done" not in text:
        return {}
    rows = {}
    for line in text.splitlines():
        if m := WINBENCH_ROW.match(line.strip()):
            rows.setdefault(m.group(1), []).append(int(m.group(2)))
    return rows


def winbench_files(wdir, cfg):
    """The outputs of CFG's ntsync-winbench processes in WDIR (vm/guest/jobs/wine.sh runs
    two of them in --bench, one after the other): CFG-winbench.txt, CFG-winbench.2.txt..."""
    return sorted(wdir.glob(f"{cfg}-winbench*.txt"), key=lambda f: (len(f.name), f.name))


REPEATS_WITHIN = 0.01   # a row repeats when the medians of its processes lie within 1 % of each other


def median(v):
    v = sorted(v)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def run_guest(build_dir, suite, driver, kernel_debs=None, timeout=7200, bench=False):
    """Wine's tests in a cloud guest of SUITE with DRIVER, then without a driver. BENCH:
    ntsync-winbench only, one vCPU counting instructions (-icount), with the in-tree driver
    and ours where the kernel has both."""
    from . import cloud, jobs
    (build_dir / "tests.list").write_text("\n".join(TESTS) + "\n")
    (build_dir / "mode").write_text("bench\n" if bench else "tests\n")
    req = cloud.Request(
        job=jobs.get("wine", "cloud"), suite=suite, driver=driver,
        kernel_debs=Path(kernel_debs) if kernel_debs else None, mem=3072, smp=1 if bench else 2, icount=bench,
        timeout=timeout, compat=False,
        # QEMU 7.2's TCG emulates Wine's user-mode iretq with supervisor stack
        # reads: with SMAP each return from Wine's syscall dispatcher oopses.
        tcg_cpu="max,-smap",
        extra_files=(("wine/wine.tar", build_dir / "wine.tar"), ("wine/tests", build_dir / "tests"),
                     ("wine/tests.list", build_dir / "tests.list"), ("wine/mode", build_dir / "mode"))).check()
    res = cloud.run_guest(req, cloud.prepare(req))
    code, reasons = res.verdict()
    rows = [] if bench else judge_run(res.results, driver)
    return res, code, reasons, rows


FIGURES = "winbench.txt"  # under $NTSYNC_CACHE/wine: the last --bench table, which the demo shows


@functools.lru_cache(maxsize=None)
def git_head():
    """The commit this run started from: asked once, at the first call (main() makes it), so
    that a commit made while a guest runs is not taken for the one measured."""
    r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    out = r.stdout.strip() or "(not a git checkout)"
    d = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                       capture_output=True, text=True)
    return out + (" with local changes" if d.stdout.strip() else "")


def keep_figures(build_dir, res, lines):
    """The table of a --bench guest, kept for the demo ($NTSYNC_CACHE/wine/winbench.txt):
    which Wine, commit, kernel and date, then the table."""
    facts = (build_dir / "facts.txt").read_text().splitlines()[0]
    head = [f"# {facts.split(',')[0]} ({build_dir.name}), commit {git_head()}, {time.strftime('%Y-%m-%d')}, "
            f"{res.suite} {res.kernel}, run {Path(res.run_dir).name}"]
    write_figures(bench=head + lines)
    say(f"kept for the demo: {cache() / 'wine' / FIGURES}")


def bench_table(res):
    """The winbench rows of a --bench guest: per configuration the median ns/op over every
    run of every process, and the ratios, for the rows that repeat: in each configuration the
    medians of its processes within REPEATS_WITHIN of each other (wait-any.64 on ours once
    gave 16,679 in one boot and 28,927 in another, each run alike: that is what must not
    pass). A single run further than that from the median is counted beside the row (under
    -icount every instruction the guest runs in the timed loop counts, whichever process runs
    it). Then the rows that do not repeat, with each configuration's runs, process by process.
    Returns (lines, configurations that did not finish)."""
    wdir = Path(res.results) / "wine"
    cfgs = [c for c in ("in-tree", "ours", "none") if winbench_files(wdir, c)]
    procs = {c: [winbench_rows(f) for f in winbench_files(wdir, c)] for c in cfgs}
    bad = [c for c in cfgs if not all(procs[c])]
    cfgs = [c for c in cfgs if c not in bad]   # the table: the configurations that finished
    runs = {c: {} for c in cfgs}
    for c in cfgs:
        for p in procs[c]:
            for n, v in p.items():
                runs[c].setdefault(n, []).extend(v)
    names = list(dict.fromkeys(n for c in cfgs for n in runs[c]))
    med = {c: {n: median(v) for n, v in runs[c].items()} for c in cfgs}

    def between(c, n):
        """how far apart the medians of C's processes are for row N, relative to the median"""
        m = [median(p[n]) for p in procs[c] if p.get(n)]
        return (max(m) - min(m)) / med[c][n] if m and med[c][n] else 0.0

    def off(c, n):
        return sum(abs(x - med[c][n]) > REPEATS_WITHIN * med[c][n] for x in runs[c][n])
    nproc = max((len(procs[c]) for c in cfgs), default=0)
    nrun = max((len(v) for c in cfgs for v in runs[c].values()), default=0)
    lines = [f"ntsync-winbench under Wine on {res.suite} ({res.kernel}), 1 vCPU, -icount: guest ns per op, "
             f"median of {nrun} runs in {nproc} processes"]
    hdr = f"  {'row':18}" + "".join(f" {c:>10}" for c in cfgs)
    if "none" in cfgs:
        hdr += "".join(f" {'none/' + c:>13}" for c in cfgs if c != "none")
    if "in-tree" in cfgs and "ours" in cfgs:
        hdr += f" {'ours/in-tree':>13}"
    hdr += f"  runs off by >{REPEATS_WITHIN:.0%}"
    lines.append(hdr)
    steady = [n for n in names if all(n in med[c] and between(c, n) <= REPEATS_WITHIN for c in cfgs)]
    for n in steady:
        line = f"  {n:18}" + "".join(f" {med[c][n]:10,.0f}" for c in cfgs)
        if "none" in cfgs:
            line += "".join(f" {med['none'][n] / med[c][n]:12.1f}x" if med[c][n] else f" {'-':>13}"
                            for c in cfgs if c != "none")
        if "in-tree" in cfgs and "ours" in cfgs and med["in-tree"][n]:
            line += f" {med['ours'][n] / med['in-tree'][n]:12.3f}x"
        outliers = [f"{c} {off(c, n)}/{len(runs[c][n])}" for c in cfgs if off(c, n)]
        lines.append(line + "  " + (", ".join(outliers) if outliers else "none"))
    unsteady = [n for n in names if n not in steady]
    if unsteady:
        lines.append(f"  not shown: the medians of the processes differ by more than {REPEATS_WITHIN:.0%} "
                     "(runs of each process, | between processes):")
        for n in unsteady:
            for c in cfgs:
                if n not in runs[c]:
                    continue
                each = " | ".join(" ".join(f"{x:,d}" for x in p.get(n, [])) for p in procs[c])
                lines.append(f"    {n:18} {c:8} {between(c, n):6.1%} apart: {each}")
    return lines, bad


def print_rows(res, rows):
    print(f"Wine's tests on {res.suite} ({res.kernel}), driver {res.driver} then none:")
    print(f"  {'config':8} {'program':18} {'test':8} {'executed':>9} {'failures':>8} {'todo':>5} {'skipped':>7}  exit")
    for cfg, exe, name, c in rows:
        print(f"  {cfg:8} {exe:18} {name:8} {c['executed']:9d} {c['failures']:8d} {c['todo']:5d} {c['skipped']:7d}  "
              f"{c['exit'] if c['exit'] is not None else '-'}{'' if c['summary'] else ' (no summary line)'}")
        for f in c["fails"][:20]:
            print(f"      {f}")
    wdir = Path(res.results) / "wine"
    for f in sorted(wdir.glob("*-fds.txt")) + sorted(wdir.glob("*-ntsync-info.txt")):
        print(f"  {f.name}:")
        for line in f.read_text(errors="replace").splitlines()[:40]:
            print(f"    {line}")


# ------------------------------------------------------------------ links (issue 39)

@dataclass(frozen=True)
class LinkCase:
    """One case of the links guest (vm/guest/jobs/wine-links.sh writes links/NAME.*): what
    was broken, and what `ntsync-info --pid` must say about the Windows program then."""
    name: str
    broken: str        # the table's "link broken"
    # status: the JSON's status, using | not-using | unknown (for unknown also the error
    # "unreadable": a process it may not read, it cannot call Wine or not)
    status: str
    link: int = None   # not-using: the link its verdict must name first
    rc: int = 0        # ntsync-info's exit status
    found: tuple = ()  # (link, text) that link's "found" must contain


LINK_NAMES = ("driver", "build", "start", "environment", "visibility")  # tools/info-wine.c link_names
LINK_CASES = (
    LinkCase("whole", "none: all links whole (the real build, module loaded first)", "using", rc=0),
    LinkCase("unloaded", "1 driver: modprobe -r ntsync before wineserver started", "not-using", 1, 1),
    LinkCase("stub", "2 build: the stub build of the same source (server/, dlls/ntdll/ without our header)",
             "not-using", 2, 1),
    LinkCase("early-server", "3 start: wineserver -p before modprobe ntsync, the program after",
             "not-using", 3, 1),
    # Wine reads no variable about ntsync (tools/info-wine.c, link 4): a plain Wine under a
    # Proton-like environment with PROTON_NO_NTSYNC=1 still opens the device, and the honest
    # verdict is USING, the variable shown as set "yet the process holds the device".
    LinkCase("proton-var", "4 environment: PROTON_NO_NTSYNC=1 with STEAM_COMPAT_DATA_PATH set (a Proton-like "
             "environment; this Wine reads no such variable)", "using", rc=0,
             found=((4, "PROTON_NO_NTSYNC=1"), (4, "yet the process holds the device"))),
    LinkCase("bwrap-dev", "5 visibility: the program inside bwrap --dev /dev (a private /dev)", "not-using", 5, 1),
    LinkCase("bwrap-bound", "none: inside bwrap --dev /dev --dev-bind /dev/ntsync /dev/ntsync", "using", rc=0),
    LinkCase("user", "(no root) ntsync-info as user nobody, on root's program of case 'whole'", "unknown", rc=7),
)
CHECK_WINE = (("real", 0), ("stub", 1))  # ntsync-info --check-wine on /opt/wine and /opt/wine-stub


def judge_link_case(ldir, case):
    """(row, failures) of one case: row = (case, broken, verdict, fix, exit)."""
    ldir = Path(ldir)
    bad = []
    try:
        rc = int((ldir / f"{case.name}.rc").read_text().strip())
    except (OSError, ValueError):
        rc = None
    try:
        doc = json.loads((ldir / f"{case.name}.json").read_text())
    except (OSError, ValueError) as e:
        return (case.name, case.broken, f"(no JSON: {e})", "", rc), [f"{case.name}: no ntsync-info --json output"]
    if rc != case.rc:
        bad.append(f"{case.name}: ntsync-info exited {rc}, expected {case.rc}")
    if "error" in doc:  # no report: the process could not be read, or is not Wine
        verdict, fix = f"{doc.get('error')}: {doc.get('message', '')}", ""
        if case.status != "unknown" or doc.get("error") != "unreadable":
            bad.append(f"{case.name}: no report ({verdict}), expected status {case.status!r}")
        return (case.name, case.broken, verdict, fix, rc), bad
    procs = doc.get("processes") or [{}]
    p = procs[0]
    verdict, fix = p.get("verdict", ""), p.get("fix") or ""
    if p.get("status") != case.status:
        bad.append(f"{case.name}: status {p.get('status')!r}, expected {case.status!r}: {verdict}")
    if case.status == "using":
        if not verdict.startswith("USING ntsync"):
            bad.append(f"{case.name}: the verdict does not say USING: {verdict}")
    elif case.status == "unknown":
        if verdict.startswith(("USING", "NOT USING")):
            bad.append(f"{case.name}: a verdict without the right to read the process: {verdict}")
    else:
        want = f"NOT USING ntsync: {case.link} {LINK_NAMES[case.link - 1]}:"
        if not verdict.startswith(want):
            bad.append(f"{case.name}: the verdict does not name link {case.link} ({want}...): {verdict}")
        if not fix:
            bad.append(f"{case.name}: no fix printed")
        links = {k.get("link"): k for k in p.get("links", [])}
        if links.get(case.link, {}).get("state") != "broken":
            bad.append(f"{case.name}: link {case.link} is not marked broken")
    links = {k.get("link"): k for k in p.get("links", [])}
    for n, text in case.found:
        if text not in (links.get(n, {}).get("found") or ""):
            bad.append(f"{case.name}: link {n}'s evidence does not show '{text}': {links.get(n, {}).get('found')}")
    return (case.name, case.broken, verdict, fix, rc), bad


def judge_links(results):
    """(rows, check-wine lines, failures) of a links guest's results (RESULTS/links)."""
    ldir = Path(results) / "links"
    rows, bad = [], []
    for case in LINK_CASES:
        row, b = judge_link_case(ldir, case)
        rows.append(row)
        bad += b
    checks = []
    for name, want in CHECK_WINE:
        try:
            rc = int((ldir / f"check-wine-{name}.rc").read_text().strip())
            text = (ldir / f"check-wine-{name}.txt").read_text(errors="replace").strip().splitlines()
        except (OSError, ValueError):
            rc, text = None, []
        checks.append(f"ntsync-info --check-wine /opt/wine{'-stub' if name == 'stub' else ''}: exit {rc}"
                      + (f": {text[-1]}" if text else ""))
        if rc != want:
            bad.append(f"--check-wine on the {name} build exited {rc}, expected {want}")
    return rows, checks, bad


def links_table(rows):
    """The table of the cases, as Markdown: link broken | verdict | fix printed | exit."""
    out = ["| case | link broken | verdict | fix printed | exit |", "|---|---|---|---|---|"]
    for name, broken, verdict, fix, rc in rows:
        cell = [name, broken, verdict, fix or "-", "-" if rc is None else str(rc)]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cell) + " |")
    return out


def run_links(build_dir, suite, driver, kernel_debs=None, timeout=5400):
    """The links guest of SUITE with DRIVER: both builds, each link broken in turn."""
    from . import cloud, jobs
    stub = build_stub(build_dir)
    req = cloud.Request(
        job=jobs.get("wine-links", "cloud"), suite=suite, driver=driver,
        kernel_debs=Path(kernel_debs) if kernel_debs else None, mem=3072, smp=2, timeout=timeout, compat=False,
        tcg_cpu="max,-smap",  # as run_guest: Wine's iretq under TCG with SMAP oopses
        extra_files=(("wine/wine.tar", build_dir / "wine.tar"), ("wine/stub.tar", stub),
                     ("wine/tests", build_dir / "tests"), ("wine/debs", guest_debs()))).check()
    res = cloud.run_guest(req, cloud.prepare(req))
    code, reasons = res.verdict()
    rows, checks, bad = judge_links(res.results)
    return res, code, reasons + bad, rows, checks


VERDICT_MARK = "## ntsync-info --pid"  # in FIGURES: what follows is the links guest's verdict (the demo's end)


def figures_parts(text):
    """(the --bench lines, the verdict lines) of the FIGURES file's TEXT."""
    lines = text.splitlines()
    if VERDICT_MARK in lines:
        i = lines.index(VERDICT_MARK)
        return lines[:i], lines[i + 1:]
    return lines, []


def write_figures(bench=None, verdict=None):
    """FIGURES with BENCH or VERDICT lines replaced (None: kept as they are)."""
    f = cache() / "wine" / FIGURES
    old_bench, old_verdict = figures_parts(f.read_text() if f.is_file() else "")
    bench = old_bench if bench is None else bench
    verdict = old_verdict if verdict is None else verdict
    f.write_text("\n".join(bench + ([VERDICT_MARK] + verdict if verdict else [])) + "\n")


def keep_verdict(build_dir, res):
    """The links guest's 'all links whole' case, for the demo: which Wine, commit, kernel,
    date, then ntsync-info --pid's text."""
    facts = (build_dir / "facts.txt").read_text().splitlines()[0]
    text = (Path(res.results) / "links" / "whole.txt").read_text(errors="replace").splitlines()
    head = [f"{facts.split(',')[0]} ({build_dir.name}), commit {git_head()}, {time.strftime('%Y-%m-%d')}, "
            f"{res.suite} {res.kernel}, run {Path(res.run_dir).name}"]
    write_figures(verdict=head + text)
    say(f"kept for the demo: {cache() / 'wine' / FIGURES} (the verdict of the 'whole' case)")


def check_cached(src, patches=()):
    """./check's Wine step: the cached build of SRC, checked again without building anything.
    Prints PASS/FAIL lines and 'N passed, N failed, N skipped'; 77 when nothing is cached."""
    src = src.resolve()
    check_source(src)
    name = source_hash(src) + (f"+{patches_key(patches)}" if patches else "")
    out = cache() / "wine" / name
    if not (out / "ok").exists():
        print(f"SKIP wine: no cached build of {src.name} ({out}); build it with "
              f"vm/ntsync-vm wine --source {src} (about 40 min on 2 cores)")
        print("0 passed, 0 failed, 1 skipped")
        return 77
    results = []
    with tarfile.open(out / "wine.tar") as tf:
        try:
            server = tf.extractfile(f".{PREFIX}/bin/wineserver").read()
        except (KeyError, AttributeError):
            server = b""
    results.append(("wineserver of the build opens /dev/ntsync (the backend is compiled in)",
                    b"/dev/ntsync" in server))
    for d in TEST_DIRS:
        exe = Path(d).parts[1] + "_test.exe"
        results.append((f"{exe} is there for the guests", (out / "tests" / exe).is_file()))
    facts = (out / "facts.txt").read_text()
    results.append(("without our flags the backend files compile to stubs (facts.txt)",
                    all(re.search(rf"{re.escape(f)}: .* [1-9][0-9]* with .*, 0 without", facts) for f in BACKEND)))
    for what, ok in results:
        print(f"{'PASS' if ok else 'FAIL'} wine: {what}")
    print(facts.splitlines()[0])
    failed = sum(1 for _, ok in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed, 0 skipped")
    return 1 if failed else 0


def main(argv):
    ap = argparse.ArgumentParser(prog="ntsync-vm wine", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--source", metavar="DIR|TARBALL", help=f"the Wine source: {WHERE}")
    ap.add_argument("--jobs", type=int, help="make -j (default: the host's CPUs)")
    ap.add_argument("--rebuild", action="store_true", help="build again even if this source's build is cached")
    ap.add_argument("--patch", action="append", default=[], metavar="FILE",
                    help="apply this patch (-p1) to the source first; repeatable (upstream/wine/)")
    ap.add_argument("--run", action="append", default=[], metavar="SUITE[:DRIVER]",
                    help="then run Wine's sync tests in a cloud guest of SUITE with DRIVER (ours, or in-tree), "
                    "then with the driver unloaded; repeatable")
    ap.add_argument("--bench", action="store_true",
                    help="--run: ntsync-winbench only, in a 1-vCPU guest counting instructions (-icount): "
                    "the driver (in-tree and ours where the kernel has both) against none, as ratios")
    ap.add_argument("--links", action="append", default=[], metavar="SUITE[:DRIVER]",
                    help="then, in one cloud guest of SUITE with DRIVER, this build and its stub build (built "
                    "once, incrementally, beside it: stub.tar), each link of 'is this Wine process using ntsync?' "
                    "broken in turn (driver unloaded, stub build, wineserver before modprobe, PROTON_NO_NTSYNC=1, "
                    "bwrap --dev /dev, bwrap with the device bound in, ntsync-info without root), judged "
                    "against ntsync-info --pid's verdicts; prints the table; repeatable")
    ap.add_argument("--cached-only", action="store_true",
                    help="build nothing: check the cached build of this source (./check); exit 77 when none")
    ap.add_argument("--kernel-debs", metavar="DIR", help="--run: boot these kernel .debs in the guest image "
                    "(--run bookworm fetches bookworm's 6.1 itself and boots it under trixie's userland)")
    o = ap.parse_args(argv)
    if not o.source:
        raise Usage(f"no Wine source given: pass --source with {WHERE}")
    if o.cached_only:
        return check_cached(Path(o.source), [Path(p).resolve() for p in o.patch])
    git_head()  # the commit measured: the one at the start (see there)
    plans = []
    for r, links in [(r, False) for r in o.run] + [(r, True) for r in o.links]:
        suite, _, driver = r.partition(":")
        suite = suites.resolve(suite, image_only=True)
        driver = driver or ("in-tree" if suites.SUITES[suite].in_tree else "ours")
        if driver not in ("ours", "in-tree"):
            raise Usage(f"--{'links' if links else 'run'} {r}: the driver is ours or in-tree")
        if suite in OLDER_USERLAND and o.kernel_debs:
            raise Usage(f"--{'links' if links else 'run'} {r} boots {suite}'s own kernel under {USERLAND}'s "
                        "userland: leave out --kernel-debs")
        plans.append((suite, driver, links))
    if o.bench and o.links:
        raise Usage("--bench measures, --links judges verdicts: one of them at a time")
    out = build(Path(o.source), o.jobs, o.rebuild, [Path(p).resolve() for p in o.patch])
    rc = 0
    for suite, driver, links in plans:
        kernel_debs = o.kernel_debs
        if suite in OLDER_USERLAND:
            # This Wine was built on trixie (glibc 2.38 and later): bookworm's userland cannot
            # run it, so bookworm's kernel boots in a trixie image, our module built for it there.
            say(f"--run {suite}: {suite}'s kernel under {USERLAND}'s userland (a Wine built on {USERLAND} "
                f"needs its glibc)")
            kernel_debs = image.foreign_kernel_debs(suite, USERLAND)
            suite = USERLAND
        if links:
            res, code, reasons, rows, checks = run_links(out, suite, driver, kernel_debs)
            print(f"ntsync-info --pid on a Windows program (ntsync-winbench --hold) on {res.suite} ({res.kernel}), "
                  f"driver {res.driver}, {out.name} and its stub build:")
            print("\n".join(links_table(rows)))
            print("\n".join(checks))
            if not code and not reasons:
                keep_verdict(out, res)
            for r in reasons:
                print(f"FAIL: {r}")
            rc |= code or (1 if reasons else 0)
            continue
        res, code, reasons, rows = run_guest(out, suite, driver, kernel_debs, bench=o.bench)
        if o.bench:
            lines, bad = bench_table(res)
            print("\n".join(lines))
            reasons += [f"ntsync-winbench did not finish with {c}" for c in bad]
            if not bad and not code:
                keep_figures(out, res, lines)
        else:
            print_rows(res, rows)
            wdir = Path(res.results) / "wine"
            for cfg in (driver, "none"):
                bad = judge_snapshot(wdir, cfg)
                print(f"{'FAIL' if bad else 'PASS'} ntsync-info while Wine ran: {snapshot_line(wdir, cfg)}")
                reasons += bad
            if not any(c["summary"] for _, _, _, c in rows):
                reasons.append("no Wine test printed its summary line")
        for r in reasons:
            print(f"FAIL: {r}")
        rc |= code or (1 if reasons else 0)
    return rc
