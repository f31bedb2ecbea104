"""``python -m fabricsim``: same as the ``fabricsim`` command."""

import sys

from fabricsim.cli.main import main

sys.exit(main())
