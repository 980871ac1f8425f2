"""Bad input gets one clear line naming the file, line or record, early: non-UTF-8 files, damaged
or missing model folders, empty and over-long questions, empty chunk texts, and a corpus with no
question file."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from efficientrag.baselines.efficientrag import EfficientRAGRetrieval
from efficientrag.cli import main
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.errors import DataFormatError
from efficientrag.eval.runner import run_method
from efficientrag.experiment.prepared_data import default_work_dir
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.word_overlap import WordOverlapRetriever


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


CHUNKS = [
    {"id": "alpha", "title": "Alpha Film", "text": "Alpha Film was directed by Bob Stone."},
    {"id": "bob", "title": "Bob Stone", "text": "Bob Stone was born in Lisbon."},
    {"id": "omega", "title": "Omega", "text": "Omega is a city on the coast."},
]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, str]:
    from efficientrag.models import Filter, Labeler
    from efficientrag.testing.tiny_backbones import tiny_modernbert
    from efficientrag.testing.token_tasks import sentences

    root = tmp_path_factory.mktemp("tiny")
    backbone = str(tiny_modernbert(root / "mb", sentences(200)))
    return {
        "labeler": str(
            Labeler.from_backbone(backbone, max_length=64, device="cpu").save_pretrained(root / "labeler")
        ),
        "filter": str(
            Filter.from_backbone(backbone, max_length=64, device="cpu").save_pretrained(root / "filter")
        ),
    }


def last_error(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


# -- encodings ------------------------------------------------------------------------------------


def test_a_non_utf8_corpus_names_the_file_line_and_byte(tmp_path):
    path = tmp_path / "corpus.jsonl"
    good = json.dumps(CHUNKS[0]).encode() + b"\n"
    path.write_bytes(good + b'{"id": "x", "title": "Caf\xe9", "text": "t"}\n')
    with pytest.raises(DataFormatError) as info:
        Corpus.load(path)
    msg = str(info.value)
    offset = path.read_bytes().index(b"\xe9")
    assert offset > len(good)
    assert str(path) in msg and "line 2" in msg and f"byte offset {offset}" in msg and "0xe9" in msg


def test_a_non_utf8_question_file_names_the_file_line_and_byte(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CHUNKS)
    questions = tmp_path / "questions.json"  # a JSON list, read whole
    questions.write_bytes(
        b'[{"id": "q1",\n "question": "Who directed Alpha Film?",\n "answers": ["Bob \xe9"]}]'
    )
    code = main(["eval", "--dataset", "jsonl", "--data", str(questions), "--corpus", str(corpus),
                 "--work-dir", str(tmp_path / "w"), "--method", "direct_r", "retriever.kind=bm25"])  # fmt: skip
    assert code == 2
    line = last_error(capsys)
    offset = questions.read_bytes().index(b"\xe9")
    assert str(questions) in line and "line 3" in line and f"byte offset {offset}" in line


# -- model folders --------------------------------------------------------------------------------


def test_a_truncated_weights_file_is_one_line_naming_it(tmp_path, tiny_models, capsys):
    import shutil

    broken = Path(shutil.copytree(tiny_models["labeler"], tmp_path / "labeler"))
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CHUNKS)
    code = main(["retrieve", "--corpus", str(corpus), "--work-dir", str(tmp_path / "w"), "-q", "Who?",
                 "--labeler", str(broken), "--filter", tiny_models["filter"], "retriever.kind=bm25"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert str(weights) in err[0] and "incomplete or corrupt" in err[0]
    # The Python API says the same through the loader.
    from efficientrag.models import Labeler

    with pytest.raises(ValueError, match="incomplete or corrupt"):
        Labeler.from_pretrained(broken)


def test_a_missing_model_folder_fails_before_the_corpus_is_encoded(
    tmp_path, tiny_models, capsys, minilm_path
):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CHUNKS)
    work = tmp_path / "w"
    for command in (["retrieve", "-q", "Who directed Alpha Film?"], ["eval", "--method", "efficientrag"]):
        code = main([*command, "--dataset", "jsonl", "--data", str(write_jsonl(tmp_path / "q.jsonl", [
            {"id": "q1", "question": "Who directed Alpha Film?", "answers": ["Bob Stone"], "gold_ids": ["alpha"]}
        ])), "--corpus", str(corpus), "--work-dir", str(work), "--labeler", str(tmp_path / "no-such-labeler"),
            "--filter", tiny_models["filter"], f"retriever.encoder={minilm_path}"])  # fmt: skip
        assert code == 2
        line = last_error(capsys)
        assert "efficientrag.labeler" in line and "no-such-labeler" in line
        assert not (work / "index").exists() and not (work / "data").exists()


# -- questions ------------------------------------------------------------------------------------


def test_empty_questions_are_errors_that_name_the_question(tmp_path, tiny_models, capsys):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CHUNKS)
    code = main(["retrieve", "--corpus", str(corpus), "--work-dir", str(tmp_path / "w"), "-q", "  ",
                 "--labeler", tiny_models["labeler"], "--filter", tiny_models["filter"]])  # fmt: skip
    assert code == 2 and last_error(capsys) == "error: --question: the question is empty"

    rag = EfficientRAG.from_config(WordOverlapRetriever(Corpus.load(corpus)), _config(tiny_models))
    with pytest.raises(ValueError, match=r"questions\[1\]: the question is empty"):
        rag.retrieve_batch(["Who directed Alpha Film?", ""])
    with pytest.raises(ValueError, match="must be a string, got NoneType"):
        rag.retrieve(None)  # type: ignore[arg-type]

    # In a long run the empty question is a recorded failure; the others are answered.
    examples = [Example(id=f"q{i}", question=q, answers=["x"], gold_chunk_ids=["alpha"])
                for i, q in enumerate(["Who directed Alpha Film?", "", "Where was Bob Stone born?"])]  # fmt: skip
    summary = run_method(
        EfficientRAGRetrieval(None, None, rag=rag), examples, tmp_path / "run", ks=(), progress=False
    )
    assert summary["n"] == 2 and summary["num_failed"] == 1
    errors = [json.loads(line) for line in (tmp_path / "run" / "errors.jsonl").read_text().splitlines()]
    assert (
        errors[0]["id"] == "q1"
        and errors[0]["error"] == "InvalidArgumentError: questions: the question is empty"
    )


def test_every_empty_question_of_a_file_is_named_up_to_twenty(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CHUNKS)
    rows = [{"id": "ok", "question": "Who directed Alpha Film?", "answers": ["Bob"], "gold_ids": []}]
    rows += [{"id": f"e{i}", "question": " ", "answers": ["x"], "gold_ids": []} for i in range(25)]
    questions = write_jsonl(tmp_path / "questions.jsonl", rows)
    code = main(["eval", "--dataset", "jsonl", "--data", str(questions), "--corpus", str(corpus),
                 "--work-dir", str(tmp_path / "w"), "--method", "direct_r", "retriever.kind=bm25"])  # fmt: skip
    assert code == 2
    line = last_error(capsys)
    assert line.startswith(f"error: {questions}: 25 bad records (data.strict=false skips them): ")
    named = re.findall(r"line (\d+), record (e\d+), field 'question': empty question", line)
    assert named == [(str(i + 2), f"e{i}") for i in range(20)]
    assert line.endswith("; and 5 more")


def test_every_empty_question_of_a_batch_is_named(tmp_path, tiny_models):
    rag = EfficientRAG.from_config(
        WordOverlapRetriever(Corpus([_chunk(c) for c in CHUNKS])), _config(tiny_models)
    )
    with pytest.raises(ValueError, match=r"^2 questions are empty: questions\[0\], questions\[2\]$"):
        rag.retrieve_batch(["", "Who directed Alpha Film?", "  "])
    batch = ["Who?"] + [""] * 23
    with pytest.raises(
        ValueError, match=r"^23 questions are empty: questions\[1\], .*questions\[20\] and 3 more$"
    ):
        rag.retrieve_batch(batch)


def test_a_probability_outside_0_1_is_refused_naming_its_key(tmp_path, tiny_models, capsys):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CHUNKS)
    code = main(["retrieve", "--corpus", str(corpus), "--work-dir", str(tmp_path / "w"), "-q", "Who?",
                 "--labeler", tiny_models["labeler"], "--filter", tiny_models["filter"], "retriever.kind=bm25",
                 "efficientrag.tag_threshold=2"])  # fmt: skip
    assert code == 2
    assert last_error(capsys).endswith("efficientrag.tag_threshold=2: a probability, must be in [0, 1]")
    assert not (tmp_path / "w" / "index").exists()

    from efficientrag.adapt.self_training import SelfTrainConfig
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.training.config import TrainConfig
    from efficientrag.treehop.tagged import TagSettings

    for make, key in [
        (lambda: EfficientRAGConfig(token_threshold=-0.1), "token_threshold=-0.1"),
        (lambda: EfficientRAGConfig(filter_threshold=1.5), "filter_threshold=1.5"),
        (lambda: TagSettings(tag_threshold=3), "tag_threshold=3"),
        (lambda: SelfTrainConfig(token_threshold=2.0), "token_threshold=2"),
        (lambda: SelfTrainConfig(validation_ratio=1.2), "validation_ratio=1.2"),
        (lambda: TrainConfig(max_bad_row_fraction=5), "max_bad_row_fraction=5"),
        (lambda: EfficientRAGConfig(tag_threshold=float("nan")), "tag_threshold=nan"),
    ]:
        with pytest.raises(ValueError, match=f"^{re.escape(key)}: a probability, must be in \\[0, 1\\]$"):
            make()
    assert EfficientRAGConfig(tag_threshold=0.0, token_threshold=1.0).tag_threshold == 0.0


def test_efficientrag_takes_model_folders_and_refuses_what_cannot_predict(tiny_models):
    retriever = WordOverlapRetriever(Corpus([_chunk(c) for c in CHUNKS]))
    cfg = _config(tiny_models)
    by_folder = EfficientRAG(retriever, tiny_models["labeler"], Path(tiny_models["filter"]), cfg)
    loaded = EfficientRAG.from_config(retriever, cfg)
    assert type(by_folder.labeler) is type(loaded.labeler) and type(by_folder.filter) is type(loaded.filter)
    question = "Who directed Alpha Film?"
    assert by_folder.retrieve(question).chunk_ids == loaded.retrieve(question).chunk_ids

    with pytest.raises(
        TypeError, match=r"^EfficientRAG: filter must be a loaded model \(Filter.from_pretrained"
    ):
        EfficientRAG(retriever, loaded.labeler, {"path": tiny_models["filter"]})
    with pytest.raises(
        TypeError, match=r"^EfficientRAG: labeler must be a loaded model \(Labeler.from_pretrained"
    ):
        EfficientRAG(retriever, None, loaded.filter)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^EfficientRAG: retriever must have a search\(queries, k\) method"):
        EfficientRAG(tiny_models["labeler"], loaded.labeler, loaded.filter)  # type: ignore[arg-type]


def test_a_question_longer_than_the_labeler_input_warns_once_and_is_traced(tmp_path, tiny_models, caplog):
    rag = EfficientRAG.from_config(
        WordOverlapRetriever(Corpus([_chunk(c) for c in CHUNKS])), _config(tiny_models)
    )
    long_question = "Who directed Alpha Film? " + " ".join(f"word{i}" for i in range(400))
    with caplog.at_level(logging.WARNING, logger="efficientrag.pipeline.efficientrag"):
        first = rag.retrieve(long_question)
        rag.retrieve(long_question)
        short = rag.retrieve("Who directed Alpha Film?")
    warnings = [r for r in caplog.records if "longer than the Labeler's input" in r.getMessage()]
    assert len(warnings) == 1 and "64 tokens" in warnings[0].getMessage()
    cut = first.trace[0].truncated_query_words
    assert list(cut) == [0] and 0 < cut[0] < len(long_question.split())
    assert first.counters["query_words_truncated"] == cut[0]
    assert not short.trace[0].truncated_query_words
    assert "truncated_query_words" not in short.trace[0].to_dict()


# -- corpora --------------------------------------------------------------------------------------


def test_empty_chunk_texts_are_counted_with_their_lines(tmp_path, caplog):
    rows = [*CHUNKS, *({"id": f"e{i}", "title": f"Empty {i}", "text": " "} for i in range(7))]
    path = write_jsonl(tmp_path / "corpus.jsonl", rows)
    with caplog.at_level(logging.WARNING, logger="efficientrag.data.corpus"):
        corpus = Corpus.load(path)
    assert len(corpus) == 10
    [warning] = [r.getMessage() for r in caplog.records]
    assert f"{path}: 7 of 10 chunks have empty text (lines 4, 5, 6, 7, 8, ...)" in warning


def test_a_repeated_chunk_id_names_both_lines(tmp_path, capsys):
    path = write_jsonl(tmp_path / "corpus.jsonl", [*CHUNKS, {"id": "bob", "title": "B2", "text": "Again."}])
    with pytest.raises(DataFormatError) as info:
        Corpus.load(path)
    assert str(info.value) == f"{path}, line 4, field 'id': repeats chunk id 'bob' of line 2"
    assert info.value.line == 4


def test_an_empty_corpus_file_is_named(tmp_path, capsys):
    empty = tmp_path / "notes.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=f"^{empty}: file is empty"):
        Corpus.load(empty)
    code = main(["index", "--corpus", str(empty), "--work-dir", str(tmp_path / "w"), "retriever.kind=bm25"])
    assert code == 2 and last_error(capsys).startswith(f"error: {empty}: file is empty")
    from efficientrag.data.readers.corpus_file import read_corpus_file

    titles = tmp_path / "titles.json"  # an extra {title: text} corpus with no title
    titles.write_text("{}", encoding="utf-8")
    with pytest.raises(DataFormatError, match=f"^{titles}: file is empty"):
        read_corpus_file(titles, dataset="hotpotqa")


def test_chunks_over_the_encoder_token_limit_are_counted_once_with_their_ids(tmp_path, minilm_path, caplog):
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.retrieval.dense import DenseRetriever
    from efficientrag.retrieval.encoder import Encoder

    long_text = " ".join(f"word{i}" for i in range(60))
    rows = [*CHUNKS, *({"id": f"long{i}", "title": f"Long {i}", "text": long_text} for i in range(7))]
    corpus = Corpus.load(write_jsonl(tmp_path / "corpus.jsonl", rows))
    encoder = Encoder(minilm_path, max_length=32, show_progress=False)
    assert encoder.over_limit([c.contents for c in corpus]) == list(range(3, 10))
    with caplog.at_level(logging.WARNING, logger="efficientrag.retrieval.encoder"):
        DenseRetriever.build(corpus, RetrieverConfig(shard_size=2), encoder=encoder, show_progress=False)
    [warning] = [r.getMessage() for r in caplog.records if "token" in r.getMessage()]
    assert warning.startswith("7 of 10 chunks are longer than the encoder's limit of 32 tokens")
    assert "(chunk ids 'long0', 'long1', 'long2', 'long3', 'long4', ...)" in warning
    # Text within the limit (prefix and special tokens counted) is not reported.
    assert encoder.over_limit(["short text", ""]) == []


def test_a_corpus_alone_is_enough_to_index_and_ask(tmp_path, tiny_models, capsys, monkeypatch):
    corpus = write_jsonl(tmp_path / "notes.jsonl", CHUNKS)
    monkeypatch.chdir(tmp_path)
    assert main(["index", "--corpus", str(corpus), "retriever.kind=bm25"]) == 0
    assert "3 chunks" in capsys.readouterr().out
    assert (tmp_path / default_work_dir(corpus) / "index" / "bm25" / "meta.json").is_file()
    code = main(["retrieve", "--corpus", str(corpus), "-q", "Who directed Alpha Film?", "retriever.kind=bm25",
                 "--labeler", tiny_models["labeler"], "--filter", tiny_models["filter"],
                 "efficientrag.tag_threshold=0.0", "efficientrag.max_hops=1"])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "Question: Who directed Alpha Film?" in out and "[alpha]" in out


def test_own_questions_run_in_the_corpus_folder_on_its_index(tmp_path, capsys, monkeypatch):
    """`index --corpus c.jsonl` then `eval --data q.jsonl --corpus c.jsonl` (the README's "Your own
    data"): the run goes under the corpus's own folder (runs/c-<hash of its path>), beside the index
    it searches, not into the toy world's."""
    corpus = write_jsonl(tmp_path / "notes.jsonl", CHUNKS)
    questions = write_jsonl(
        tmp_path / "asked.jsonl",
        [{"id": "q1", "question": "Where was the director of Alpha Film born?", "answer": "Lisbon",
          "gold_ids": ["alpha", "bob"]}],
    )  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert main(["index", "--corpus", str(corpus), "retriever.kind=bm25"]) == 0
    folder = default_work_dir(corpus)
    assert folder.startswith("runs/notes-")
    meta = tmp_path / folder / "index" / "bm25" / "meta.json"
    built = meta.stat().st_mtime_ns
    code = main(["eval", "--dataset", "jsonl", "--data", str(questions), "--corpus", str(corpus),
                 "--method", "direct_r", "retriever.kind=bm25"])  # fmt: skip
    assert code == 0
    assert (tmp_path / folder / "eval" / "direct_r" / "predictions.jsonl").is_file()
    assert meta.stat().st_mtime_ns == built  # searched the index `index` built, not a new one
    assert not (tmp_path / "runs" / "toy").exists()
    assert f"{folder}/eval/direct_r" in capsys.readouterr().out


def _chunk(row: dict):
    from efficientrag.data.schema import Chunk

    return Chunk.from_dict(row)


def _config(models: dict[str, str]):
    from efficientrag.pipeline.config import EfficientRAGConfig

    return EfficientRAGConfig(labeler=models["labeler"], filter=models["filter"], top_k=2, max_hops=2)
