"""The latency benchmark's runners read each method's own timing records."""

from efficientrag.testing.scripted_models import ALPHA_QUESTION, OMEGA_QUESTION, scripted_rag

BENCHMARK = "treehop_latency"  # the conftest fixture `bench` imports it


def test_efficientrag_runner_sums_the_typed_hop_timings(bench):
    rag = scripted_rag()
    ids, split = bench.EfficientRAGRun(rag).run([ALPHA_QUESTION, OMEGA_QUESTION])
    again = rag.retrieve_batch([ALPHA_QUESTION, OMEGA_QUESTION])
    assert ids == [r.chunk_ids for r in again] and all(ids)
    assert set(split) == set(bench.SPLIT) and split["model"] > 0.0
    # Labeler + Filter seconds of every hop of both questions, nothing else.
    hops = [hop for r in again for hop in r.trace]
    assert len(hops) >= 2 and all(set(hop.timings_s) >= {"labeler", "filter"} for hop in hops)
