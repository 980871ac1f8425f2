"""One Markdown report over eval run folders: `python eval/report.py RUN_DIR [RUN_DIR ...] --out DIR`.

Thin: the same entry as ``efficientrag report`` (:func:`efficientrag.cli.command_main`).
"""

import sys

from efficientrag.cli import command_main

if __name__ == "__main__":
    sys.exit(command_main("report", prog="eval/report.py"))
