"""``python -m kbroker_cli``: the same as the ``kbroker`` command."""

import sys

from kbroker_cli.main import main

sys.exit(main())
