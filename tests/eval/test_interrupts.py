"""An interrupted run ends with one line that says how to resume, from the CLI and the benchmarks."""

import argparse
import signal
from pathlib import Path

import pytest

from efficientrag.cli.main import _run
from efficientrag.cli.parser import add_verbose
from efficientrag.eval.interrupts import RunInterrupted, main_reporting_interrupts

REPO = Path(__file__).resolve().parents[2]
# What a benchmark calls when it evaluates: each of these can raise RunInterrupted.
RUNNER_ENTRIES = ("run_method", "evaluate_method", "evaluate_direct", "evaluate_efficientrag", "job_runs")


@pytest.fixture
def restored_handlers():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def _interrupted(signum: int):
    def main():
        raise RunInterrupted(signum, done=3, to_go=2)

    return main


def test_a_script_main_ends_with_the_resume_line_and_the_signal_status(restored_handlers, capsys):
    assert main_reporting_interrupts(_interrupted(signal.SIGTERM)) == 143
    err = capsys.readouterr().err
    assert err.strip() == "interrupted (SIGTERM): 3 done, 2 to go; rerun the same command to resume"
    # On its way out: a further Ctrl-C no longer changes the status.
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_script_main_that_finishes_keeps_its_status():
    assert main_reporting_interrupts(lambda: 0) == 0
    assert main_reporting_interrupts(lambda: 3) == 3
    with pytest.raises(ValueError):
        main_reporting_interrupts(lambda: int("x"))


def test_every_cli_command_reports_an_interrupted_evaluation(restored_handlers, capsys):
    # quickstart and adapt evaluate too, not only eval: the entry, not one command, reports it.
    parser = argparse.ArgumentParser()
    add_verbose(parser)
    parser.set_defaults(handler=lambda args: _interrupted(signal.SIGINT)())
    assert _run(parser, []) == 130
    assert (
        "interrupted (SIGINT): 3 done, 2 to go; rerun the same command to resume" in capsys.readouterr().err
    )


def test_every_benchmark_that_evaluates_reports_an_interrupt_without_a_traceback():
    scripts = [
        p
        for p in sorted((REPO / "benchmarks").glob("*.py"))
        if 'if __name__ == "__main__":' in p.read_text() and any(e in p.read_text() for e in RUNNER_ENTRIES)
    ]
    assert len(scripts) >= 8, scripts
    missing = [p.name for p in scripts if "sys.exit(main_reporting_interrupts(main))" not in p.read_text()]
    assert missing == []
