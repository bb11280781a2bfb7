"""The kernel-log gates, read from tests/kernel-log-gates (the one list), the taint rule and
the KCSAN sorting: every job's kernel log is judged here, on the host. The allowed taint
flags and the KCSAN reports' header are the list's @ directives (written there once, for the
guest's readers too): TAINT_ALLOWED, TAINT_ALLOWED_SECURE_BOOT and KCSAN_REPORT (a compiled
pattern) are read from it on first use."""

import re
from pathlib import Path

from .util import REPO, Failure

GATES_FILE = REPO / "tests" / "kernel-log-gates"
TAINT_LETTERS = "PFSRMBUDAWCIOELKXTN"
TIMESTAMP = re.compile(r"^\[ *[0-9.]+\] ?")
# @NAME of the list: (module attribute, how its VALUE is read)
DIRECTIVES = {"taint-allowed": ("TAINT_ALLOWED", int),
              "taint-allowed-secure-boot": ("TAINT_ALLOWED_SECURE_BOOT", int),
              "kcsan-report": ("KCSAN_REPORT", lambda v: re.compile(re.escape(v)))}
_policy = {}


def _read(path):
    """([(compiled pattern, what)], {@NAME: VALUE text}) of the gate file PATH."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise Failure(f"the kernel-log gate list {path} cannot be read ({e}); it is part of the tree")
    gates, directives = [], {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        pat, sep, what = line.partition("\t")
        if not sep or not pat or not what.strip():
            raise Failure(f"{path}:{n}: not 'PATTERN<TAB>what it reports': {line!r}")
        if pat.startswith("@"):
            value, sep, what = what.partition("\t")
            if pat[1:] not in DIRECTIVES or not sep or not value.strip() or not what.strip():
                raise Failure(f"{path}:{n}: not '@NAME<TAB>VALUE<TAB>what it means' with NAME one of "
                              f"{', '.join(DIRECTIVES)}: {line!r}")
            directives[pat[1:]] = value
            continue
        try:
            gates.append((re.compile(pat), what.strip()))
        except re.error as e:
            raise Failure(f"{path}:{n}: bad pattern {pat!r}: {e}")
    if not gates:
        raise Failure(f"{path}: no gates in it")
    return gates, directives


def load(path=GATES_FILE):
    """[(compiled pattern, what)] from the gate file (PATTERN<TAB>what; # comments; @ directives)."""
    return _read(path)[0]


def policy(path=GATES_FILE):
    """{TAINT_ALLOWED: int, TAINT_ALLOWED_SECURE_BOOT: int, KCSAN_REPORT: compiled pattern}
    from the @ directives of the gate file; each must be there."""
    directives = _read(path)[1]
    out = {}
    for name, (attr, conv) in DIRECTIVES.items():
        if name not in directives:
            raise Failure(f"{path}: no @{name} directive in it (see the comments at its top)")
        try:
            out[attr] = conv(directives[name])
        except ValueError:
            raise Failure(f"{path}: @{name} {directives[name]!r}: not a decimal number")
    return out


def _rule(attr):
    """TAINT_ALLOWED, TAINT_ALLOWED_SECURE_BOOT or KCSAN_REPORT of the tree's list, read once."""
    if not _policy:
        _policy.update(policy())
    return _policy[attr]


def __getattr__(name):
    """gates.TAINT_ALLOWED and the other rules as module attributes (PEP 562), read on first use."""
    if name not in (attr for attr, _ in DIRECTIVES.values()):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _rule(name)


def judge(lines, source="console", kcsan=False, gates=None):
    """Reports in LINES (one problem per gate, its first line). On a KCSAN kernel the lines
    of KCSAN's reports (@kcsan-report) are left out here and judged by kcsan_reports()."""
    gates = load() if gates is None else gates
    kcsan_rx = _rule("KCSAN_REPORT") if kcsan else None
    problems = []
    for rx, what in gates:
        for line in lines:
            if kcsan_rx and kcsan_rx.search(line):
                continue
            if rx.search(line):
                problems.append(f"{what}: {line.strip()} ({source})")
                break
    return problems


def kcsan_reports(lines):
    """Sort KCSAN reports: (in_ntsync, via_ntsync, kernels_own) lists of report headers. A
    report is in ntsync's code when the first frame of either racing access is in the module
    ([ntsync]); one whose accesses are both the kernel's but whose stacks pass through ntsync
    is the kernel's own, reached through it."""
    ours, via, own = [], [], []
    kcsan_rx = _rule("KCSAN_REPORT")
    inrep = first = False
    is_ours = is_via = False
    head = ""
    for raw in lines:
        line = TIMESTAMP.sub("", raw.rstrip("\r"))
        if kcsan_rx.search(line):
            inrep, head, is_ours, is_via, first = True, line.strip(), False, False, False
            continue
        if not inrep:
            continue
        if re.match(r"^(read|write)( \(marked\))?( \(reordered\))? to 0x.* by ", line):
            first = True
            continue
        if first and re.match(r"^ +[^ ]", line):
            first = False
            if "[ntsync]" in line:
                is_ours = True
        if "[ntsync]" in line:
            is_via = True
        if re.match(r"^=+$", line):
            inrep = False
            (ours if is_ours else via if is_via else own).append(head)
    return ours, via, own


def taint_problem(taint, start=0, allowed=None):
    """A problem line when TAINT (the value at the end) has flags beyond ALLOWED (the list's
    @taint-allowed, O and E, unless said) that were not set at START, else None."""
    new = taint & ~start & ~(_rule("TAINT_ALLOWED") if allowed is None else allowed)
    if not new:
        return None
    flags = "".join(TAINT_LETTERS[b] for b in range(len(TAINT_LETTERS)) if new >> b & 1)
    return f"kernel tainted: {flags} (tainted={taint})"
