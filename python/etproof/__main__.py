import sys

from etproof.cli.main import main

sys.exit(main())
