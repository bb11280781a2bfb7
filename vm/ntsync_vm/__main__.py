import sys

from ntsync_vm.cli import main

sys.exit(main(sys.argv[1:]))
