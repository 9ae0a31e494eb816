import sys

from sentvec.cli import main

sys.exit(main())
