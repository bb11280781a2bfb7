#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Write the /proc, /sys and /dev layouts of ntsync-info's Wine tests.

Each layout (layouts/NAME/) is a root for NTSYNC_INFO_SYSROOT in the shape
the kernel gives: /proc/PID/{stat,comm,environ,maps,exe,fd/,ns/mnt,root,
attr/current}, /proc/stat's btime, /proc/self/ns/mnt, /sys/module/ntsync/
and /dev/ntsync (a plain file: a recording holds no device node).  Its
layout.txt says what the test does with it: the load time to give
/dev/ntsync's mtime (git keeps no mtimes), which stand-in binary goes
where, and the cases (arguments, exit status, verdict and fix patterns).
PATH.errno holding EACCES makes reading PATH fail so, as for another
user's process (the tests run as root, where no mode bit would).

Run from tools/info-tests/ after changing it; the trees are committed.
"""

import os
import shutil

BTIME = 1700000000
HZ = 100          # USER_HZ, what /proc/PID/stat counts in
LOAD = BTIME + 100
AFTER = 200 * HZ  # ticks after boot: 100 s after the load
BEFORE = 50 * HZ  # 50 s before it
NS_HOST = 'mnt:[4026531841]'
NS_BOX = 'mnt:[4026532500]'
WINE = '/opt/wine'
NTDLL = WINE + '/lib/wine/x86_64-unix/ntdll.so'
PROTON = '/opt/proton/files'


def write(path, text, mode='w'):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(text)


def link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def stat_line(pid, comm, state, ppid, start):
    # fields 1-22 of proc_pid_stat(5), then a few more
    f = [str(pid), '(%s)' % comm, state, str(ppid), str(pid), str(pid),
         '0', '-1', '4194560', '500', '0', '0', '0', '10', '5', '0', '0',
         '20', '0', '1', '0', str(start), '123456789', '300']
    return ' '.join(f) + '\n'


class Layout:
    def __init__(self, name, what, loaded=True):
        self.root = os.path.join('layouts', name)
        shutil.rmtree(self.root, ignore_errors=True)
        self.lines = ['# ' + what]
        write(self.r('proc/stat'), 'cpu  100 0 100 10000 0 0 0 0 0 0\n'
              'btime %d\n' % BTIME)
        link(self.r('proc/self/ns/mnt'), NS_HOST)
        write(self.r('dev/null'), '')
        if loaded:
            write(self.r('dev/ntsync'), '')
            for k, v in (('initstate', 'live'), ('version', '1.1.0'),
                         ('taint', 'OE'), ('srcversion', '1A39F00D')):
                write(self.r('sys/module/ntsync/' + k), v + '\n')
            self.lines.append('load %d' % LOAD)

    def r(self, path):
        return os.path.join(self.root, path)

    def proc(self, pid, comm, exe, start=AFTER, ppid=1, env=(), fds=(),
             maps=(), ns=NS_HOST, root='../..', state='S',
             attr='unconfined', denied=()):
        d = 'proc/%d/' % pid
        write(self.r(d + 'stat'), stat_line(pid, comm, state, ppid, start))
        write(self.r(d + 'comm'), comm + '\n')
        if state == 'Z':
            return
        link(self.r(d + 'exe'), exe)
        write(self.r(d + 'environ'), ''.join(e + '\0' for e in env))
        write(self.r(d + 'maps'), ''.join(
            '7f00%08x-7f00%08x r-xp 00000000 08:01 %d    %s\n'
            % (i << 20, (i + 1) << 20, 1000 + i, m)
            for i, m in enumerate([exe, '/usr/lib/x86_64-linux-gnu/libc.so.6']
                                  + list(maps))))
        for n, target in enumerate(['/dev/null', 'socket:[31337]'] +
                                   list(fds)):
            link(self.r(d + 'fd/%d' % n), target)
        link(self.r(d + 'ns/mnt'), ns)
        link(self.r(d + 'root'), root)
        write(self.r(d + 'attr/current'), attr + '\n')
        for name in denied:
            write(self.r(d + name + '.errno'), 'EACCES\n')

    def binary(self, kind, path):
        self.lines.append('bin %s %s' % (kind, path.lstrip('/')))

    def case(self, args, rc, verdict, fix='-'):
        self.lines.append('case %s|%d|%s|%s' % (args, rc, verdict, fix))

    def done(self):
        write(self.r('layout.txt'), '\n'.join(self.lines) + '\n')


ENV = ('HOME=/home/user', 'WINEPREFIX=/home/user/.wine', 'USER=user')
USING = ('/dev/ntsync', 'anon_inode:ntsync', 'anon_inode:ntsync',
         'anon_inode:ntsync')
DENIED = ('environ', 'maps', 'fd', 'exe', 'root', 'ns/mnt')


def wine_pair(lay, kind='backend', start=AFTER, env=ENV, fds=(),
              ppid=1, ns=NS_HOST, root='../..', attr='unconfined',
              prefix=WINE, ntdll=NTDLL, denied=()):
    lay.proc(100, 'wineserver', prefix + '/bin/wineserver', start=start,
             ppid=ppid, env=env, fds=fds, ns=ns, root=root, attr=attr,
             denied=denied)
    lay.proc(200, 'game.exe', prefix + '/bin/wine-preloader', ppid=ppid,
             env=env, fds=fds[:2], maps=(ntdll,), ns=ns, root=root,
             attr=attr, denied=denied)
    lay.binary(kind, prefix + '/bin/wineserver')
    lay.binary(kind, ntdll)


lay = Layout('using', 'all links whole: wineserver and game.exe hold '
             '/dev/ntsync and its objects')
wine_pair(lay, fds=USING)
lay.proc(300, 'game.exe', '', state='Z', ppid=200)
lay.proc(400, 'bash', '/usr/bin/bash', env=ENV)
for pid in (100, 200):
    lay.case('--pid %d' % pid, 0, '^verdict: USING ntsync: pid %d holds '
             '/dev/ntsync' % pid)
lay.case('--pid 300', 6, '^verdict: NO VERDICT: pid 300 (game.exe) is a '
         'zombie')
lay.case('--pid 400', 5, '^verdict: NO VERDICT: pid 400 (bash) is not a '
         'Wine process')
lay.case('--pid 999', 4, '^verdict: NO VERDICT: no process with pid 999$')
lay.case('--wine', 0, '^verdict: USING ntsync: pid 200 holds')
lay.done()

lay = Layout('unloaded', 'the driver is not loaded: no /sys/module/ntsync, '
             'no /dev/ntsync', loaded=False)
wine_pair(lay)
lay.case('--pid 200', 1, '^verdict: NOT USING ntsync: 1 driver: the ntsync '
         'driver is not loaded$', '^fix: *as root: modprobe ntsync .*'
         'wineserver -k')
lay.done()

lay = Layout('stub', 'a stub build: wineserver and ntdll.so without the '
             'backend (they still name /dev/ntsync)')
wine_pair(lay, kind='stub')
for pid in (100, 200):
    lay.case('--pid %d' % pid, 1, '^verdict: NOT USING ntsync: 2 build: '
             '/opt/wine/bin/wineserver is built without the ntsync backend',
             '^fix: *rebuild Wine against the complete header: install '
             'ntsync-uapi-dev, ./configure CPPFLAGS="$(pkg-config --cflags '
             'ntsync-uapi)"')
lay.done()

lay = Layout('mixed', 'wineserver with the backend, ntdll.so a stub')
wine_pair(lay)
lay.lines[-1] = 'bin stub ' + NTDLL.lstrip('/')
lay.case('--pid 200', 1, '^verdict: NOT USING ntsync: 2 build: '
         '/opt/wine/lib/wine/x86_64-unix/ntdll.so is built without',
         '^fix: *rebuild Wine')
lay.done()

lay = Layout('before', 'the wineserver started 50 s before the driver was '
             'loaded (started 1700000050, /dev/ntsync made 1700000100)')
wine_pair(lay, start=BEFORE)
lay.case('--pid 200', 1, '^verdict: NOT USING ntsync: 3 start: its '
         'wineserver (pid 100) started 2023-11-14 22:14:10 UTC, before the '
         'driver was loaded', '^fix: *restart Wine .*wineserver -k')
lay.case('--pid 100', 1, '^verdict: NOT USING ntsync: 3 start:',
         'wineserver -k')
lay.done()

PENV = ('HOME=/home/user', 'STEAM_COMPAT_DATA_PATH=/home/user/.steam/'
        'steam/steamapps/compatdata/620', 'WINEPREFIX=/home/user/.steam/'
        'steam/steamapps/compatdata/620/pfx')
lay = Layout('env', 'Proton with PROTON_NO_NTSYNC=1')
wine_pair(lay, env=PENV + ('PROTON_NO_NTSYNC=1',), prefix=PROTON,
          ntdll=PROTON + '/lib/wine/x86_64-unix/ntdll.so')
lay.case('--pid 200', 1, '^verdict: NOT USING ntsync: 4 environment: '
         'PROTON_NO_NTSYNC=1 is set', '^fix: *unset PROTON_NO_NTSYNC ')
lay.done()

lay = Layout('env-noop', 'Proton with PROTON_ENABLE_NTSYNC=1 (no such '
             'switch) and no PROTON_USE_NTSYNC')
wine_pair(lay, env=PENV + ('PROTON_ENABLE_NTSYNC=1',), prefix=PROTON,
          ntdll=PROTON + '/lib/wine/x86_64-unix/ntdll.so')
lay.case('--pid 200', 1, '^verdict: NOT USING ntsync: 4 environment: a '
         'Proton process with neither WINENTSYNC=1.*PROTON_ENABLE_NTSYNC '
         'is no such switch', '^fix: *set WINENTSYNC=1 .* instead of '
         'PROTON_ENABLE_NTSYNC$')
lay.done()


def sandbox(lay, with_dev=False):
    link(lay.r('sandbox/opt'), '../opt')
    write(lay.r('sandbox/dev/null'), '')
    if with_dev:
        write(lay.r('sandbox/dev/ntsync'), '')
    lay.proc(50, 'bwrap', '/usr/bin/bwrap', env=ENV)


lay = Layout('bwrap', 'inside bwrap --dev /dev: its own mount namespace, a '
             '/dev without ntsync')
sandbox(lay)
wine_pair(lay, ppid=50, ns=NS_BOX, root='../../sandbox')
lay.case('--pid 200', 1, '^verdict: NOT USING ntsync: 5 visibility: the '
         'bubblewrap sandbox (bwrap, pid 50) has a private /dev without '
         '/dev/ntsync', '^fix: *bind the device into the sandbox: bwrap '
         '.*--dev-bind /dev/ntsync /dev/ntsync')
lay.case('--wine', 1, '5 visibility: the bubblewrap sandbox')
lay.done()

lay = Layout('bwrap-bound', 'inside bwrap with the device bound in '
             '(--dev-bind /dev/ntsync /dev/ntsync): all links whole')
sandbox(lay, with_dev=True)
wine_pair(lay, ppid=50, ns=NS_BOX, root='../../sandbox', fds=USING)
lay.case('--pid 200', 0, '^verdict: USING ntsync: pid 200 holds')
lay.done()

lay = Layout('flatpak', 'a Flatpak app (Flatpak 1.14.10, Debian 12) '
             'without --device=all')
sandbox(lay)
write(lay.r('sandbox/.flatpak-info'), '[Application]\n'
      'name=com.valvesoftware.Steam\nruntime=runtime/org.freedesktop.'
      'Platform/x86_64/24.08\n\n[Instance]\ninstance-id=1234567890\n'
      'flatpak-version=1.14.10\n')
wine_pair(lay, ppid=50, ns=NS_BOX, root='../../sandbox')
lay.case('--pid 200', 1, '^verdict: NOT USING ntsync: 5 visibility: the '
         'Flatpak sandbox of com.valvesoftware.Steam hides /dev/ntsync',
         '^fix: *flatpak override --user --device=all '
         'com.valvesoftware.Steam (Flatpak 1.14.10')
lay.done()

lay = Layout('apparmor', 'every other link whole, the device visible but '
             'not held, an enforcing AppArmor profile')
wine_pair(lay, attr='wine-games (enforce)')
lay.case('--pid 200', 1, "^verdict: NOT USING ntsync: 5 visibility: the "
         "AppArmor profile 'wine-games' confines it",
         "^fix: *allow the device in that profile ('/dev/ntsync rw,')")
lay.done()

lay = Layout('other-user', "another user's Wine, seen without root: "
             "environ, maps, fd, exe, root and ns/mnt give EACCES")
wine_pair(lay, fds=USING, denied=DENIED)
lay.proc(500, 'other', '/usr/bin/other', denied=DENIED)
lay.case('--pid 100', 7, '^verdict: UNKNOWN: cannot read /proc/100/fd: '
         'Permission denied', '^fix: *run ntsync-info --pid 100 as root')
lay.case('--pid 200', 7, '^verdict: UNKNOWN: cannot read /proc/200/fd')
lay.case('--pid 500', 7, '^verdict: UNKNOWN: cannot tell whether pid 500 '
         '(other) is Wine: /proc/500/maps: Permission denied')
lay.done()
