"""``python -m tilec``: the command line (``tilec/cli.py``)."""
import sys

from tilec.cli import main

sys.exit(main())
