"""Hop chains derived from each dataset's gold annotations (shared samples; skipped when absent)."""

from __future__ import annotations

from collections import Counter

from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.loader import load_data
from efficientrag.treehop.chains import HopChain, derive_chains


def _chains(shared_data, dataset, path):
    pooled = load_data(DataConfig(dataset=dataset, path=str(shared_data / path)))
    chains = derive_chains(pooled.examples, pooled.corpus)
    titles = {c.id: c.title for c in pooled.corpus}
    return chains, {c.question_id: c for c in chains.chains}, titles


def _by_title(chain: HopChain, titles: dict[str, str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    return {titles[c]: h for c, h in chain.hops.items()}, [(titles[a], titles[b]) for a, b in chain.edges]


def test_musique_chain_follows_the_decomposition_references(shared_data):
    chains, by_id, titles = _chains(shared_data, "musique", "musique/musique_ans_v1.0_dev.70.jsonl")
    # "Gloria in D Major >> composer" -> "#1 >> place of birth" -> "... the famous bridge in #2"
    hops, edges = _by_title(by_id["3hop1__178435_547811_80702"], titles)
    assert hops == {"Gloria (Vivaldi)": 1, "Orlando furioso (Vivaldi, 1714)": 2, "Rialto Bridge": 3}
    assert edges == [("Gloria (Vivaldi)", "Orlando furioso (Vivaldi, 1714)"),
                     ("Orlando furioso (Vivaldi, 1714)", "Rialto Bridge")]  # fmt: skip
    # Two independent sub-questions feeding a third: two roots, two paths to the same chunk.
    merged = by_id["3hop2__782397_467331_162182"]
    assert sorted(merged.hops.values()) == [1, 1, 2] and len(merged.edges) == 2
    assert [len(p) for p in merged.paths()] == [1, 2, 1, 2]
    assert chains.stats()["max_depth"] == 4 and not chains.rejects


def test_2wiki_chain_from_evidence_triples(shared_data):
    chains, by_id, titles = _chains(shared_data, "2wikimultihopqa", "2wikimultihopqa/dev.350.json")
    # [Juan Carlos Gumucio, spouse, Marie Colvin], [Marie Colvin, place of death, Homs]
    hops, edges = _by_title(by_id["b5e9ef2c0bdd11eba7f7acde48001122"], titles)
    assert hops == {"Juan Carlos Gumucio": 1, "Marie Colvin": 2}
    assert edges == [("Juan Carlos Gumucio", "Marie Colvin")]
    # Comparison: both compared paragraphs are roots, no edge.
    hops, edges = _by_title(by_id["e618b2c608c911ebbd92ac1f6bf848b6"], titles)
    assert hops == {"Giuseppe Cesari": 1, "Nicos Poulantzas": 1} and edges == []
    edges_by_type = Counter((c.type, len(c.edges)) for c in chains.chains)
    assert edges_by_type[("bridge_comparison", 2)] > 50 and edges_by_type[("comparison", 1)] == 0


def test_2wiki_chain_without_triples_comes_from_supporting_facts(shared_data):
    _, by_id, titles = _chains(shared_data, "2wikimultihopqa", "2wikimultihopqa/train.200.json")
    # "What is the date of birth of Mina Gerhardsen's father?" (train slice: evidences is null)
    hops, _ = _by_title(by_id["633f80660bdd11eba7f7acde48001122"], titles)
    assert hops == {"Mina Gerhardsen": 1, "Rune Gerhardsen": 2}


def test_hotpotqa_bridge_order_from_supporting_facts(shared_data):
    chains, by_id, titles = _chains(shared_data, "hotpotqa", "hotpotqa/dev_ircot.350.jsonl")
    hops, edges = _by_title(by_id["5a8c7595554299585d9e36b6"], titles)
    assert hops == {"Kiss and Tell (1945 film)": 1, "Shirley Temple": 2}
    assert edges == [("Kiss and Tell (1945 film)", "Shirley Temple")]
    hops, edges = _by_title(by_id["5a7bbb64554299042af8f7cc"], titles)  # "Who is older, A or B?"
    assert hops == {"Annie Morton": 1, "Terry Richardson": 1} and edges == []
    # Undecidable bridge order is recorded with its reason, not guessed.
    assert chains.rejects and {r["reason"] for r in chains.rejects} == {"bridge order ambiguous"}
    assert len(chains.chains) + len(chains.rejects) == 350


def test_toy_world_chains_and_serialization():
    pooled = load_data(DataConfig(toy=ToyWorldConfig(num_questions=60)))
    chains = derive_chains(pooled.examples, pooled.corpus)
    assert not chains.rejects
    for chain in chains.chains:
        ex = next(e for e in pooled.examples if e.id == chain.question_id)
        assert set(chain.hops) == set(ex.gold_chunk_ids)
        for parent, child in chain.edges:
            assert chain.hops[child] > chain.hops[parent]
        assert HopChain.from_dict(chain.to_dict()) == chain
    bridges = [c for c in chains.chains if c.type == "bridge"]
    assert bridges and all(c.depth == 2 and len(c.edges) == 1 for c in bridges)
