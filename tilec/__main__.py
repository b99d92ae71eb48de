"""``python -m tilec``: the command line (``tilec/cli.py``)."""
import sys

from .cli import main

sys.exit(main())
