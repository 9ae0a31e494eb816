import sys

from sentvec.cli import console_main

sys.exit(console_main())
