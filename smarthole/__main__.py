"""``python -m smarthole``."""

import sys

from .cli import main

sys.exit(main())
