"""The kernel-log gates, read from tests/kernel-log-gates (the one list), the taint rule and
the KCSAN sorting: every job's kernel log is judged here, on the host."""

import re
from pathlib import Path

from .util import REPO, Failure

GATES_FILE = REPO / "tests" / "kernel-log-gates"
TAINT_LETTERS = "PFSRMBUDAWCIOELKXTN"
TAINT_ALLOWED = (1 << 12) | (1 << 13)  # O: out-of-tree module, E: unsigned module
TAINT_ALLOWED_SECURE_BOOT = 1 << 12     # under Secure Boot every module loaded was signed
KCSAN_REPORT = re.compile(r"BUG: KCSAN: ")
TIMESTAMP = re.compile(r"^\[ *[0-9.]+\] ?")


def load(path=GATES_FILE):
    """[(compiled pattern, what)] from the gate file (PATTERN<TAB>what; # comments)."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise Failure(f"the kernel-log gate list {path} cannot be read ({e}); it is part of the tree")
    gates = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        pat, sep, what = line.partition("\t")
        if not sep or not pat or not what.strip():
            raise Failure(f"{path}:{n}: not 'PATTERN<TAB>what it reports': {line!r}")
        try:
            gates.append((re.compile(pat), what.strip()))
        except re.error as e:
            raise Failure(f"{path}:{n}: bad pattern {pat!r}: {e}")
    if not gates:
        raise Failure(f"{path}: no gates in it")
    return gates


def judge(lines, source="console", kcsan=False, gates=None):
    """Reports in LINES (one problem per gate, its first line). On a KCSAN kernel the
    'BUG: KCSAN: ' lines are left out here and judged by kcsan_reports()."""
    gates = load() if gates is None else gates
    problems = []
    for rx, what in gates:
        for line in lines:
            if kcsan and KCSAN_REPORT.search(line):
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
    inrep = first = False
    is_ours = is_via = False
    head = ""
    for raw in lines:
        line = TIMESTAMP.sub("", raw.rstrip("\r"))
        if KCSAN_REPORT.search(line):
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
    """A problem line when TAINT (the value at the end) has flags beyond ALLOWED (O and E
    unless said) that were not set at START, else None."""
    new = taint & ~start & ~(TAINT_ALLOWED if allowed is None else allowed)
    if not new:
        return None
    flags = "".join(TAINT_LETTERS[b] for b in range(len(TAINT_LETTERS)) if new >> b & 1)
    return f"kernel tainted: {flags} (tainted={taint})"
