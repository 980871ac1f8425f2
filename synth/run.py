"""Synthesize Labeler/Filter training data: ``python synth/run.py --config configs/synth/toy.yaml``.

Thin: everything is in :mod:`efficientrag.cli.synth` (also ``efficientrag synth``).
"""

import sys

from efficientrag.cli.synth import main

if __name__ == "__main__":
    sys.exit(main())
