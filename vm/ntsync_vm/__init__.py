"""ntsync-vm: the one launcher of ntsync's QEMU guests (stdlib only).

Modules by concern: suites (the suite table), roots (the only mmdebstrap caller), image
(cloud guest disk images), initramfs (newc cpio), qemu (the only place a QEMU command line is
assembled and started), console (markers, stage time-outs), gates (tests/kernel-log-gates),
lock (the one guest lock), artifacts (job input and results), accel (KVM or TCG), static
(the static test binaries), and the jobs: cloud (demo/test/bench/exec/shell/matrix), boot
(initramfs boots: smoke, fuzz, bench, upstream), kbuild (W=1 header matrix), kernel (debug
kernels), lifecycle (package tests in a cloud guest); cli dispatches.
"""
