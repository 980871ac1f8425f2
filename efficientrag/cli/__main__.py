"""``python -m efficientrag.cli``: the ``efficientrag`` console script, for a checkout without it."""

import sys

from efficientrag.cli.main import main

if __name__ == "__main__":  # not when a tool walking the package imports it
    sys.exit(main())
