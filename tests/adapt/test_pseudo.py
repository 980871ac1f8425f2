"""Pseudo questions and their Labeler/Filter rows: every label checked on a hand-built chain."""

from __future__ import annotations

import pytest

from efficientrag.adapt.chunk_text import chunk_texts
from efficientrag.adapt.links import build_chains, mine_links
from efficientrag.adapt.pseudo_questions import R_NO_ANSWER, R_TITLE_INSIDE, make_question
from efficientrag.adapt.pseudo_rows import PseudoRowsConfig, build_pseudo_sets, write_pseudo_sets
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.jsonl import read_jsonl
from efficientrag.models.inputs import FilterRow, LabelerRow
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.factory import build_retriever
from efficientrag.synth.records import Reject

KISS = Chunk(
    "kiss",
    "Kiss and Tell (1945 film)",
    "Kiss and Tell is a 1945 American comedy film starring Shirley Temple as Corliss Archer.",
)
SHIRLEY = Chunk(
    "shirley",
    "Shirley Temple",
    "Shirley Temple was an American actress. As an adult, she was named ambassador to Ghana by the president.",
)
GHANA = Chunk("ghana", "Ghana", "Ghana is a country in West Africa; its largest city and capital is Accra.")


def _chain(chunks, ids):
    texts = {t.id: t for t in chunk_texts(chunks)}
    links = mine_links(list(texts.values()))
    chains = {c.chunk_ids: c for c in build_chains(links, {t.id: t.title for t in texts.values()})}
    return chains[ids], texts


def _marked(words, labels):
    return [w for w, x in zip(words, labels, strict=True) if x]


def test_a_two_hop_question_and_its_labels():
    chain, texts = _chain([KISS, SHIRLEY], ("kiss", "shirley"))
    q = make_question(chain, texts)

    assert q.question_words == (
        ["What", "was", "named", "ambassador", "to"]  # the answer's clue, from the last paragraph
        + ["a", "1945", "American", "comedy", "film", "starring"]  # the window before the mention
        + ["Kiss", "and", "Tell", "?"]  # the first title, without its parenthetical
    )
    assert q.answer == "Ghana" and q.gold == ["kiss", "shirley"] and q.mentions == ["Shirley Temple"]
    assert not {"Shirley", "Temple", "Ghana"} & set(q.question_words)

    first, second = q.hops
    assert first.query_words == q.question_words
    assert first.chunk_words == list(texts["kiss"].words)
    # The window's content words and the bridge mention are the useful words.
    assert _marked(first.chunk_words, first.labels) == [
        "1945",
        "American",
        "comedy",
        "film",
        "starring",
        "Shirley",
        "Temple",
    ]
    # The Filter keeps the answer part and the "?", drops what the hop resolved, and takes the mention.
    assert first.filter_words[:2] == ["Query", ":"] and "Info" in first.filter_words
    assert _marked(first.filter_words, first.filter_labels) == [
        "What",
        "was",
        "named",
        "ambassador",
        "to",
        "?",
        "Shirley",
        "Temple",
    ]
    assert second.query_words == ["What", "was", "named", "ambassador", "to", "?", "Shirley", "Temple"]
    assert _marked(second.chunk_words, second.labels) == ["named", "ambassador", "Ghana"]
    assert second.filter_words is None


def test_a_three_hop_question_resolves_one_link_per_hop():
    shirley = Chunk(
        "shirley",
        "Shirley Temple",
        "Shirley Temple was an American actress who served as ambassador to Ghana.",
    )
    chain, texts = _chain([KISS, shirley, GHANA], ("kiss", "shirley", "ghana"))
    q = make_question(chain, texts)
    assert q.answer == "Accra" and q.gold == ["kiss", "shirley", "ghana"]
    assert not {"Shirley", "Temple", "Ghana", "Accra"} & set(q.question_words)
    queries = [hop.query_words for hop in q.hops]
    assert queries[0][-4:] == ["Kiss", "and", "Tell", "?"]
    # Hop 2's query names the first bridge, hop 3's the second; each keeps the answer clue.
    assert queries[1][-3:] == ["?", "Shirley", "Temple"] and "Kiss" not in queries[1]
    assert queries[2][-2:] == ["?", "Ghana"] and "Shirley" not in queries[2]
    assert queries[2][:-2] == queries[0][: len(queries[2]) - 2]
    assert _marked(q.hops[1].chunk_words, q.hops[1].labels)[-1] == "Ghana"
    assert _marked(q.hops[2].chunk_words, q.hops[2].labels)[-1] == "Accra"


def test_chains_without_a_question_are_refused_with_a_reason():
    # The first title names the bridged entity outright.
    film = Chunk("tf", "Shirley Temple Black (film)", "Shirley Temple Black is a film about Shirley Temple.")
    chain, texts = _chain([film, SHIRLEY], ("tf", "shirley"))
    with pytest.raises(Reject) as exc:
        make_question(chain, texts)
    assert exc.value.reason == R_TITLE_INSIDE
    # The last paragraph has no name or number with a clue before it.
    bare = Chunk("bare", "Shirley Temple", "Shirley Temple sang.")
    chain, texts = _chain([KISS, bare], ("kiss", "bare"))
    with pytest.raises(Reject) as exc:
        make_question(chain, texts)
    assert exc.value.reason == R_NO_ANSWER


def test_rows_use_same_corpus_negatives_that_are_not_the_chain_or_its_answer(tmp_path):
    chunks = [KISS, SHIRLEY, GHANA]
    chunks += [
        Chunk("shirley2", "Shirley Temple", "Shirley Temple recorded songs as a child actress in 1934."),
        Chunk("d1", "Corliss Archer", "Corliss Archer is a fictional teenager in a 1945 comedy film."),
        Chunk("d2", "Comedy film", "A comedy film is a film whose story was named for laughter."),
        Chunk("d3", "Meet Corliss Archer", "Meet Corliss Archer was a radio comedy starring Janet Waldo."),
        Chunk("d4", "Janet Waldo", "Janet Waldo was an American actress and ambassador of voice acting."),
        Chunk("d5", "Ambassador", "An ambassador is a diplomat named to represent a state."),
    ]
    corpus = Corpus(chunks)
    retriever = build_retriever(RetrieverConfig(kind="bm25"), corpus, None, show_progress=False)
    cfg = PseudoRowsConfig(max_questions=50, max_per_source=5, validation_ratio=0.0, negatives_per_query=3)
    sets = build_pseudo_sets(corpus, retriever, cfg, progress=False)

    rows = sets.labeler["train"]
    ours = [r for r in rows if r["question_id"] == "pseudo/kiss>shirley"]
    by_suffix = {r["id"].split("/")[-1]: r for r in ours if r["id"].startswith("pseudo/kiss>shirley#2")}
    assert by_suffix["pos"]["chunk_id"] == "shirley" and by_suffix["pos"]["tag"] == "continue"
    # The question positive: the question itself with the second paragraph, same labels.
    assert by_suffix["qpos"]["query_words"] == ours[0]["query_words"]
    assert by_suffix["qpos"]["labels"] == by_suffix["pos"]["labels"]
    negatives = [r for r in ours if r["tag"] == "terminate"]
    assert negatives and all(sum(r["labels"]) == 0 for r in negatives)
    banned = {"kiss", "shirley", "shirley2", "ghana"}  # the chain, its title's other paragraph, the answer's
    assert not {r["chunk_id"] for r in negatives} & banned
    assert all("Ghana" not in r["chunk_words"] for r in negatives)
    for r in rows:
        LabelerRow.from_dict(r)  # the training rows' contract
    for r in sets.filter["train"]:
        FilterRow.from_dict(r)
    assert sets.stats["questions"]["2"] >= 1 and sets.stats["rows"]["labeler"]["train"] == len(rows)

    write_pseudo_sets(sets, tmp_path)
    assert len(list(read_jsonl(tmp_path / "labeler" / "train.jsonl"))) == len(rows)
    assert (tmp_path / "stats.json").is_file() and (tmp_path / "pseudo_validation.jsonl").is_file()


def test_the_validation_side_is_also_written_as_questions_with_gold():
    chunks = [KISS, SHIRLEY, GHANA, Chunk("n", "Noise", "Nothing to see in 1999 here.")]
    corpus = Corpus(chunks)
    retriever = build_retriever(RetrieverConfig(kind="bm25"), corpus, None, show_progress=False)
    sets = build_pseudo_sets(corpus, retriever, PseudoRowsConfig(validation_ratio=0.999), progress=False)
    assert not sets.labeler["train"] and sets.labeler["validation"]
    gold = {tuple(ex.gold_chunk_ids) for ex in sets.validation_questions}
    assert ("kiss", "shirley") in gold
    assert all(
        ex.answers and ex.question.endswith("?") or "?" in ex.question for ex in sets.validation_questions
    )


def test_the_pseudo_stage_records_what_making_it_cost_whoever_calls_it(tmp_path, monkeypatch):
    """The adaptation benchmark builds the stage before ``run_adapt`` finds it done: the seconds
    spent must be kept in the stage folder by the build itself, not by run_adapt's reuse."""
    import json
    import time

    from efficientrag.adapt import job, pseudo_rows
    from efficientrag.adapt.config import AdaptConfig
    from efficientrag.jsonl import write_jsonl

    chunks = [KISS, SHIRLEY, GHANA]
    chunks += [
        Chunk(f"d{i}", f"Town {i}", f"Town {i} is a place with a market and {i} bridges.") for i in range(6)
    ]
    write_jsonl(tmp_path / "corpus.jsonl", ({"id": c.id, "title": c.title, "text": c.text} for c in chunks))
    corpus = Corpus.load(tmp_path / "corpus.jsonl")
    cfg = AdaptConfig(
        corpus=str(tmp_path / "corpus.jsonl"),
        retriever=RetrieverConfig(kind="bm25"),
        pseudo=PseudoRowsConfig(validation_ratio=0.0),
        progress=False,
    )
    build = pseudo_rows.build_pseudo_sets

    def slow_build(*args, **kwargs):
        time.sleep(0.3)  # a build that takes measurable time
        return build(*args, **kwargs)

    monkeypatch.setattr(job, "build_pseudo_sets", slow_build)
    out, stats = job.pseudo_stage(cfg, corpus, tmp_path / "work", corpus.fingerprint())
    made = json.loads((out / "seconds.json").read_text())["seconds"]
    assert made >= 0.3 and stats["rows"]["labeler"]["train"] > 0
    # Found done: the same folder, the cost of making it kept as it was.
    again, _ = job.pseudo_stage(cfg, corpus, tmp_path / "work", corpus.fingerprint())
    assert again == out and json.loads((out / "seconds.json").read_text())["seconds"] == made
    # run_adapt's view of a reused stage is what making it cost (adds nothing of its own).
    assert job.stage_seconds(out, 0.0) == made


def test_each_chain_question_has_a_single_paragraph_question_beside_it():
    """The last paragraph's own question (its clue and the entity naming it), gold that paragraph
    alone: one search answers it, so pseudo-validation can tell where hops do not pay."""
    chunks = [KISS, SHIRLEY, GHANA, Chunk("n", "Noise", "Nothing to see in 1999 here.")]
    corpus = Corpus(chunks)
    retriever = build_retriever(RetrieverConfig(kind="bm25"), corpus, None, show_progress=False)
    sets = build_pseudo_sets(corpus, retriever, PseudoRowsConfig(validation_ratio=0.999), progress=False)
    chains = {ex.id: ex for ex in sets.validation_questions if ex.type == "pseudo"}
    singles = [ex for ex in sets.validation_questions if ex.type == "pseudo-single"]
    assert len(chains) == 3 and sets.stats["rows"]["validation_questions"] == 3
    # Two chains end in Ghana's paragraph: its question is asked once.
    assert {(ex.question, tuple(ex.gold_chunk_ids)) for ex in singles} == {
        ("What largest city and capital is Ghana?", ("ghana",)),
        ("What was named ambassador to Shirley Temple?", ("shirley",)),
    }
    assert len(singles) == 2 == sets.stats["rows"]["validation_single_questions"]
    for ex in singles:
        chain = chains[ex.id.removesuffix("/single")]
        assert ex.answers == chain.answers and ex.gold_chunk_ids == chain.gold_chunk_ids[-1:]
