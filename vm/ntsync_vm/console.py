"""The serial console of a guest: THE marker protocol, stage time-outs, boot crashes.

Every guest of the project (the cloud guests' vm/guest/guest.sh, the initramfs jobs'
vm/guest/init/*.sh, the package tests' vm/guest/autopkgtest.sh) reports to the host in one
form, a console line

    ##ntsync## KEY REST

KEY one word, REST the rest of the line (possibly empty). parse_mark() is the one parser;
run.py hands each parsed line to the job's Watch, and the jobs' verdicts read marks() of the
whole console. Which KEYs a job uses is the job's business: guest.sh says `stage NAME`,
`info TEXT` and `done rc=N`; the initramfs jobs `insmod`, `smoke-exit N`, `taint N`, ...;
autopkgtest.sh `| NAME LINE`, `result NAME PASS|FAIL|SKIP`, `taint N`, `done`.
"""

import os
import re
from pathlib import Path

STAGE_TIMEOUTS = {  # seconds under TCG; NTSYNC_TIMEOUT_SCALE multiplies them
    "boot": 300,
    "install": 900,
    "install-net": 2400,
    "driver": 600,
    "job": 1200,
    "unload": 120,
    "collect": 240,
}


def timeout_for(stage, override=None):
    scale = float(os.environ.get("NTSYNC_TIMEOUT_SCALE", "1"))
    return (override or STAGE_TIMEOUTS[stage]) * scale


def tail(path, n=40):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except (OSError, TypeError):
        return "(no console log)"
    return "\n".join("  | " + line for line in lines[-n:])


SUMMARY = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")


def boot_crash(console):
    """A kernel panic or oops on the console during boot, with no ntsync module among the
    modules it lists. Multi-threaded TCG (QEMU 7.2 here) now and then runs a stale int3 that
    the kernel's text patching left behind (seen: "Oops: int3" in sched_clock_cpu, 1 boot in ~15):
    QEMU's fault, not the driver's, and the cue to boot again."""
    try:
        text = Path(console).read_text(errors="replace")
    except OSError:
        return False
    if not re.search(r"Kernel panic - not syncing|\bOops: ", text):
        return False
    linked = re.findall(r"Modules linked in:(.*)", text)
    return not any(re.search(r"\bntsync\b", m) for m in linked) and "ntsync: " not in text


MARK = re.compile(r"##ntsync## (\S+)(?: (.*))?$")
TESTLINE = re.compile(r"^(PASS|FAIL|SKIP) \S+: ")


def parse_mark(line):
    """(KEY, REST) of a marker line, else None. Searched, not matched at the start: the
    kernel's own console output may share the line."""
    m = MARK.search(line.rstrip("\r"))
    return (m.group(1), (m.group(2) or "").strip()) if m else None


def clean_lines(text):
    """Console text as lines, without the serial console's carriage returns."""
    return [line.rstrip("\r") for line in text.replace("\r\n", "\n").split("\n")]


def marks(text):
    """Every marker of console TEXT, in order: [(key, rest)]."""
    return [mk for mk in map(parse_mark, clean_lines(text)) if mk]


def mark(found, key):
    """REST of the last KEY marker of FOUND (marks()), or None."""
    hits = [rest for k, rest in found if k == key]
    return hits[-1] if hits else None


def between(lines, begin, end):
    """The lines after the marker 'BEGIN' (key and rest, e.g. "json-begin intree") up to the
    marker 'END' (its first words)."""
    out, inside = [], False
    for line in lines:
        mk = parse_mark(line)
        said = f"{mk[0]} {mk[1]}".strip() if mk else None
        if said is not None and said == begin:
            inside = True
            continue
        if inside and said is not None and said.startswith(end):
            break
        if inside:
            out.append(line)
    return out


def shown(line):
    """A marker line as the jobs print it for people: '== KEY REST'; other lines unchanged."""
    mk = parse_mark(line)
    return f"== {mk[0]} {mk[1]}".rstrip() if mk else line
