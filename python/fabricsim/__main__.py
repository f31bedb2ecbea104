"""``python -m fabricsim``: same as the ``fabricsim`` command."""

import sys

from fabricsim.cli import main

sys.exit(main())
