# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "shell": leave the guest to the user; `ntsync-vm-exit` runs the end-of-job checks.
cat >/usr/local/bin/ntsync-vm-exit <<'EOS'
#!/bin/sh
touch /run/ntsync-vm-exit
EOS
chmod +x /usr/local/bin/ntsync-vm-exit
say ""
say "== guest ready: $(uname -r), driver $LOADED_BY"
say "== press Enter for the root shell; 'ntsync-vm-exit' checks the kernel log and powers off,"
say "== 'poweroff' just leaves; Ctrl-A X kills QEMU"
while [ ! -e /run/ntsync-vm-exit ]; do sleep 1; done
JOB_RC=0
