"""``python -m brokerlab``: the same as the ``brokerlab`` command."""

import sys

from brokerlab.cli import main

sys.exit(main())
