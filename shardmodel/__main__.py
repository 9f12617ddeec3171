"""``python -m shardmodel``: the command line."""

import sys

from shardmodel.cli import main

sys.exit(main())
