"""Evaluate one method: `python eval/run.py --config configs/experiments/<preset>.yaml --method direct_r [key=value ...]`.

Thin: the same entry as ``efficientrag eval`` (:func:`efficientrag.cli.command_main`), which calls
:func:`efficientrag.eval.evaluate`; from Python, call that directly.
"""

import sys

from efficientrag.cli import command_main

if __name__ == "__main__":
    sys.exit(command_main("eval", prog="eval/run.py"))
