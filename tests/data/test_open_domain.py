"""2WikiMultihopQA's open-domain slices: questions without paragraphs over a document corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from efficientrag.data.config import DataConfig
from efficientrag.data.loader import load_data
from efficientrag.errors import DataFormatError

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "2wikimultihopqa"

QUESTIONS = [
    {
        "id": "q1",
        "question": "Where was the director of film Kuru Kuru born?",
        "answer": "Rome",
        "type": "compositional",
        "supporting_facts": [["Kuru Kuru", 0], ["Lucio Fulci", 1]],
    }
]
DOCS = [
    {"title": "Kuru Kuru", "content": ["Kuru Kuru is a 1999 film directed by Lucio Fulci."]},
    {"title": "Lucio Fulci", "content": ["Lucio Fulci was a director.", " He was born in Rome."]},
    {"title": "Noise", "content": ["Noise is a band."]},
]


def _write(tmp_path: Path, questions, docs) -> DataConfig:
    q, c = tmp_path / "questions.json", tmp_path / "corpus.json"
    q.write_text(json.dumps(questions))
    c.write_text(json.dumps(docs))
    return DataConfig(dataset="2wikimultihopqa", path=str(q), corpus_path=str(c))


def test_open_domain_questions_take_their_gold_documents_from_the_corpus(tmp_path):
    pooled = load_data(_write(tmp_path, QUESTIONS, DOCS))
    assert len(pooled.corpus) == 3
    (ex,) = pooled.examples
    assert ex.id == "q1" and ex.answers == ["Rome"] and ex.type == "compositional"
    assert ex.gold_chunk_ids == ["title:Kuru Kuru", "title:Lucio Fulci"]
    lucio = next(c for c in pooled.corpus if c.id == "title:Lucio Fulci")
    assert lucio.title == "Lucio Fulci" and "born in Rome" in lucio.text


def test_a_document_without_a_title_is_named_by_its_position(tmp_path):
    with pytest.raises(DataFormatError, match="record 1.*title"):
        load_data(_write(tmp_path, QUESTIONS, [DOCS[0], {"content": ["x"]}]))


def test_a_repeated_title_is_refused(tmp_path):
    with pytest.raises(DataFormatError, match="appears twice"):
        load_data(_write(tmp_path, QUESTIONS, [DOCS[0], DOCS[0]]))


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared data not present")
def test_shared_open_domain_slice_has_every_gold_document():
    pooled = load_data(
        DataConfig(
            dataset="2wikimultihopqa",
            path=str(SHARED / "train_opendomain.questions1000.json"),
            corpus_path=str(SHARED / "train_opendomain.corpus5813.json"),
        )
    )
    ids = {c.id for c in pooled.corpus}
    assert len(pooled.examples) == 1000 and len(ids) == 5813
    assert all(g in ids for ex in pooled.examples for g in ex.gold_chunk_ids)
