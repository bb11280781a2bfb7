"""The one lock implementation: an exclusive flock that says whom it waits for.

guest() is THE guest lock ($NTSYNC_CACHE/guest.lock): one TCG guest at a time on a machine,
shared by every job of every ntsync-vm on it. NTSYNC_VM_PARALLEL=1 skips it.
"""

import fcntl
import os
import sys
import threading
import time
from pathlib import Path

from .util import cache, fmt_secs, say

WAITED = [0.0]  # seconds spent queued for the guest lock in this process
# (path, thread): depth. A thread that holds a lock takes it again at once: the KVM probe is a
# guest booted while the guest that asked for it holds the lock.
_HELD = {}


class Locked:
    """An exclusive flock on PATH for the with-block; WHAT names the wait in the message."""

    def __init__(self, path, what, skip=False):
        self.path, self.what, self.skip = Path(path), what, skip
        self.f = None

    def __enter__(self):
        if self.skip:
            return self
        key = (str(self.path), threading.get_ident())
        if _HELD.get(key):
            _HELD[key] += 1
            self.nested = True
            return self
        self.nested = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(self.path, "a+")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.f.seek(0)
            holder = self.f.read().strip()
            say(f"waiting for {self.what} ({holder or 'lock ' + str(self.path)})")
            t = time.monotonic()
            fcntl.flock(self.f, fcntl.LOCK_EX)
            WAITED[0] += time.monotonic() - t
            say(f"waited {fmt_secs(time.monotonic() - t)}")
        self.f.seek(0)
        self.f.truncate()
        self.f.write(f"pid {os.getpid()}: ntsync-vm {' '.join(sys.argv[1:])}\n")
        self.f.flush()
        _HELD[key] = 1
        return self

    def __exit__(self, *exc):
        if self.skip:
            return
        _HELD[(str(self.path), threading.get_ident())] -= 1
        if self.nested:
            return
        if self.f:
            self.f.truncate(0)
            fcntl.flock(self.f, fcntl.LOCK_UN)
            self.f.close()
            self.f = None


def guest(skip=False):
    """The guest lock; SKIP (an interactive shell) or NTSYNC_VM_PARALLEL=1 does not queue."""
    return Locked(cache() / "guest.lock", "another guest to finish",
                  skip=skip or os.environ.get("NTSYNC_VM_PARALLEL") == "1")
