"""``efficientrag <command>``: the command line. Thin: it parses a config and calls the library.

``main`` (the ``efficientrag`` console script) and ``command_main`` (the scripts under ``eval/``)
are the entrances, both in ``main``; ``parser`` holds every command's arguments, ``flags`` the
shorthand flags, ``data_flags`` what ``--dataset``/``--data``/``--corpus`` mean beside a preset,
``command_config`` how a command's config is assembled, and one module per command family runs
it: ``corpus`` (corpus, index), ``evaluate`` (eval, report), ``retrieve``, ``serve``,
``quickstart``, ``jobs`` (adapt, distill). ``synth`` and ``train`` run the entries of
``synth/run.py`` and ``train/*.py``.
"""

from __future__ import annotations

from efficientrag.cli.main import command_main, main

__all__ = ["command_main", "main"]
