"""The protocol's steps read typed options, built by each script from its own command line."""

import argparse
import dataclasses

import pytest

BENCHMARK = "retrieval_efficientrag"  # the conftest fixture `bench` imports it


def test_options_take_what_the_arguments_hold_and_keep_defaults_for_the_rest(bench):
    args = argparse.Namespace(shared_data="S", retriever="bm25", quiet=True, leave_one_out=True, epochs=5)
    opts = bench.ProtocolOptions.from_args(args, open_domain=100)
    assert (opts.shared_data, opts.retriever, opts.quiet, opts.epochs, opts.open_domain) == (
        "S",
        "bm25",
        True,
        5,
        100,
    )
    assert opts.grid == list(bench.GRID) and opts.validation_ratio == bench.VALIDATION_RATIO
    assert not hasattr(opts, "leave_one_out")  # a script's own option stays the script's
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.retriever = "dense"
    assert dataclasses.replace(opts, retriever="dense").retriever == "dense" and opts.retriever == "bm25"


def test_the_command_line_reaches_the_steps_as_options(bench, monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(
        bench, "run_protocol", lambda opts, work, train_on, eval_on: seen.append((opts, work)) or ""
    )
    argv = ["--shared-data", str(tmp_path), "--work-dir", str(tmp_path / "w"), "--retriever", "hybrid"]
    argv += ["--epochs", "2", "--no-token-stage", "--diagnose", "floor_k=3", "--train-on", "musique"]
    assert bench.main(argv) == 0
    ((opts, work),) = seen
    assert work == tmp_path / "w" / "hybrid"
    assert (opts.retriever, opts.epochs, opts.no_token_stage, opts.diagnose) == (
        "hybrid",
        2,
        True,
        ["floor_k=3"],
    )
    assert opts.shared_data == str(tmp_path)


def test_a_missing_shared_data_folder_stops_before_any_step(bench, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(bench, "run_protocol", lambda *a: pytest.fail("a step ran"))
    with pytest.raises(SystemExit) as stop:
        bench.main(["--shared-data", str(tmp_path / "nowhere")])
    assert stop.value.code == 2 and "nowhere" in capsys.readouterr().err


def test_treehop_options_are_protocol_options_with_treehop_training(bench):
    import retrieval_treehop as treehop

    opts = treehop.TreeHopOptions.from_args(argparse.Namespace(shared_data="S", variants=["gate512-lr3e-4"]))
    # The class retrieval_treehop imported (the fixture may have loaded the protocol script anew).
    assert isinstance(opts, treehop.ProtocolOptions) and opts.retriever == "dense"
    assert (
        opts.variants == ["gate512-lr3e-4"] and opts.preset == str(treehop.PRESET) and opts.data_curve == []
    )
