import sys

from etproof.cli import main

sys.exit(main())
