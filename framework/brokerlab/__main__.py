"""``python -m brokerlab``: the same as the ``brokerlab`` command.

(The package has been imported by now; the console script's entry module guards that import
against a Ctrl-C, and guards the rest here too.)
"""

import sys

from _brokerlab_entry import main

sys.exit(main())
