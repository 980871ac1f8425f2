"""``efficientrag serve``: the loop behind HTTP until SIGTERM/SIGINT (the service is :mod:`efficientrag.serve`)."""

from __future__ import annotations

import argparse

from efficientrag.cli.command_config import command_overrides
from efficientrag.config import load_config


def cmd_serve(args: argparse.Namespace) -> int:
    """``efficientrag serve``: open the loop once and answer over HTTP until SIGTERM/SIGINT.

    Args:
        args: the parsed command line (``--config``, the data and model flags, ``--host``,
            ``--port``, ``--workers``, overrides; those three win over both).

    Returns:
        The server's exit status (0 after a drained stop).
    """
    from efficientrag.serve.config import ServeExperimentConfig
    from efficientrag.serve.startup import serve

    # --host/--port/--workers given on the command line win over the preset and key=value.
    flags = ("host", "port", "workers")
    ports = [f"serve.{k}={getattr(args, k)}" for k in flags if getattr(args, k) is not None]
    return serve(
        load_config(
            ServeExperimentConfig, args.config, [*command_overrides(args, ServeExperimentConfig), *ports]
        )
    )
