"""The latency benchmark's runners read each method's own timing records."""

from efficientrag.testing.scripted_models import ALPHA_QUESTION, OMEGA_QUESTION, scripted_rag

BENCHMARK = "treehop_latency"  # the conftest fixture `bench` imports it


def test_loop_runner_sums_the_typed_hop_timings_into_the_model_column(bench):
    import timed_methods

    rag = scripted_rag()
    ids, split = timed_methods.LoopRun(rag).run([ALPHA_QUESTION, OMEGA_QUESTION])
    again = rag.retrieve_batch([ALPHA_QUESTION, OMEGA_QUESTION])
    assert ids == [r.chunk_ids for r in again] and all(ids)
    assert set(split) == set(timed_methods.SPLIT) and split["labeler"] > 0.0 and split["filter"] > 0.0
    assert split["model"] == 0.0  # the loop has no network of its own beside its Labeler and Filter
    cells = bench.columns(split)
    assert set(cells) == set(bench.COLUMNS)
    assert cells["model"] == split["labeler"] + split["filter"]
    # Labeler + Filter seconds of every hop of both questions, nothing else.
    hops = [hop for r in again for hop in r.trace]
    assert len(hops) >= 2 and all(set(hop.timings_s) >= {"labeler", "filter"} for hop in hops)


def test_measure_rotates_and_merge_adds_up(bench):
    import timed_methods

    order = []

    class Fake:
        def __init__(self, name):
            self.name = name

        def run(self, questions):
            order.append(self.name)
            return [["c"] for _ in questions], dict.fromkeys(timed_methods.SPLIT, 0.5)

    class Ex:
        question, gold_chunk_ids, answers = "q", ["c"], ["a"]

    runs = {"a": Fake("a"), "b": Fake("b")}
    stats = timed_methods.measure(runs, [Ex()] * 3, 2)
    assert order == ["a", "b", "b", "a"]  # the second slice starts with the second method
    assert [len(s["scores"]) for s in stats.values()] == [3, 3] and stats["a"]["labeler"] == 1.0
    total: dict = {}
    timed_methods.merge(total, stats)
    timed_methods.merge(total, timed_methods.measure(runs, [Ex()], 1))
    assert len(total["a"]["scores"]) == 4 and total["a"]["labeler"] == 1.5


def test_the_report_holds_its_table_its_command_and_the_plot(bench, tmp_path, capsys):
    import timed_methods

    from efficientrag.retrieval.metrics import score_retrieval

    scores = [score_retrieval(["c1", "c2"], [], ["c1", "c9"], ["a"])]
    stats = {"Direct-R@10": {"wall": 0.5, **dict.fromkeys(timed_methods.SPLIT, 0.1), "scores": scores}}
    timed_methods.publish_timings(
        "Intro.", ["| row |"], {"batch": stats}, tmp_path, "latency.md", "python x.py"
    )
    text = (tmp_path / "latency.md").read_text()
    assert text.startswith("Intro.\n\n| row |\n\nRerun: `python x.py`\n") and "recall_vs_seconds.png" in text
    assert (tmp_path / "recall_vs_seconds.png").stat().st_size > 0 and "Intro." in capsys.readouterr().out
