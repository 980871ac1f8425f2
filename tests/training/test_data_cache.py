"""Training sets through ``datasets``: loading, cached tokenization, and the bad-row rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from efficientrag.errors import DataFormatError
from efficientrag.models import Filter, Labeler
from efficientrag.models.tokenization import load_tokenizer
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import filter_rows, labeler_rows, sentences, write_rows
from efficientrag.training import load_training_set
from efficientrag.training.data import read_rows
from efficientrag.training.encoded import positive_class_weights, prepare_split
from efficientrag.training.fingerprint import tokenizer_digest

MAX_LENGTH = 48  # short enough that some rows are cut, so truncation counts are compared too


@pytest.fixture(scope="module")
def backbone(tmp_path_factory) -> str:
    return str(tiny_deberta(tmp_path_factory.mktemp("deberta"), sentences(200)))


@pytest.fixture(scope="module")
def labeler(backbone) -> Labeler:
    return Labeler.from_backbone(backbone, max_length=MAX_LENGTH, device="cpu")


@pytest.fixture
def data(tmp_path) -> Path:
    return write_rows(tmp_path / "labeler", labeler_rows(40, seed=1), labeler_rows(12, seed=2, prefix="v"))


class Spy:
    """Counts the rows a model encodes, to tell a cache hit from a re-tokenization."""

    def __init__(self, model) -> None:
        self.rows = 0
        self.model = model
        self.original = model.encode_rows

    def __enter__(self) -> Spy:
        def counting(rows, **kw):
            self.rows += len(rows)
            return self.original(rows, **kw)

        self.model.encode_rows = counting
        return self

    def __exit__(self, *exc) -> None:
        del self.model.encode_rows  # back to the class method


def _same(a, b) -> None:
    """Two EncodedInputs carry the same arrays and counts."""
    for name in ("input_ids", "word_ids", "token_type_ids", "segment_ids", "word_labels"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=name)
    for name in ("n_words", "truncated_words", "query_truncated_words", "tag"):
        assert getattr(a, name) == getattr(b, name), name


def test_load_training_set_reads_jsonl_and_save_to_disk_folders(data, tmp_path):
    sets = load_training_set(data, cache_dir=tmp_path / "cache")
    assert sorted(sets) == ["train", "validation"]
    assert (sets["train"].num_rows, sets["validation"].num_rows) == (40, 12)
    first = labeler_rows(1, seed=1)[0]
    assert sets["train"][0]["chunk_words"] == first.chunk_words and sets["train"][0]["tag"] == first.tag
    saved = tmp_path / "saved"
    sets.save_to_disk(str(saved))
    again = load_training_set(saved)
    assert again["validation"]["id"][:] == sets["validation"]["id"][:]
    with pytest.raises(DataFormatError, match="not found"):
        load_training_set(tmp_path / "missing")


def test_load_training_set_names_the_first_unreadable_line(tmp_path):
    folder = write_rows(tmp_path / "d", labeler_rows(3), labeler_rows(2))
    with (folder / "validation.jsonl").open("a") as fh:
        fh.write('{"id": "torn", "query_wo\n')
    with pytest.raises(DataFormatError, match=r"validation\.jsonl, line 3: not valid JSON"):
        load_training_set(folder, cache_dir=tmp_path / "cache")


def test_second_run_reads_the_cache_and_matches_the_direct_encoding(labeler, data, tmp_path):
    cache = tmp_path / "cache"
    with Spy(labeler) as spy:
        first = prepare_split(data, "train", "labeler", labeler, max_length=MAX_LENGTH, cache_dir=cache)
    assert spy.rows == 40 and not first.from_cache and Path(first.cache_file).is_file()
    with Spy(labeler) as spy:
        second = prepare_split(data, "train", "labeler", labeler, max_length=MAX_LENGTH, cache_dir=cache)
    assert spy.rows == 0 and second.from_cache and second.cache_file == first.cache_file
    assert second.dataset.table.cache_files[0]["filename"] == first.cache_file

    direct = labeler.encode_rows(read_rows(data / "train.jsonl", "labeler").rows, max_length=MAX_LENGTH)
    assert len(second.dataset) == len(direct) == 40
    assert any(e.truncated_words for e in direct)
    for i, expected in enumerate(direct):
        index, got = second.dataset[i]
        assert index == i
        _same(got, expected)
    assert second.dataset.ids == [f"lab-{i}" for i in range(40)]
    np.testing.assert_array_equal(second.dataset.lengths, [len(e) for e in direct])
    # Batched reads (what the DataLoader uses) give the same items as single reads.
    batch = second.dataset.__getitems__([5, 0, 17])
    assert [i for i, _ in batch] == [5, 0, 17]
    _same(batch[0][1], direct[5])


def test_max_length_tokenizer_and_data_changes_tokenize_again(labeler, backbone, data, tmp_path):
    cache = tmp_path / "cache"
    base = prepare_split(data, "validation", "labeler", labeler, max_length=MAX_LENGTH, cache_dir=cache)
    with Spy(labeler) as spy:
        longer = prepare_split(data, "validation", "labeler", labeler, max_length=64, cache_dir=cache)
    assert spy.rows == 12 and longer.cache_file != base.cache_file
    assert longer.dataset.lengths.max() > base.dataset.lengths.max()

    other_vocab = tiny_deberta(tmp_path / "other", sentences(200), vocab_size=150)
    other = Labeler.from_backbone(str(other_vocab), max_length=MAX_LENGTH, device="cpu")
    with Spy(other) as spy:
        retok = prepare_split(data, "validation", "labeler", other, max_length=MAX_LENGTH, cache_dir=cache)
    assert spy.rows == 12 and retok.cache_file != base.cache_file

    rows = labeler_rows(12, seed=2, prefix="v")
    rows[3].labels[0] = 1 - rows[3].labels[0]
    write_rows(data, labeler_rows(40, seed=1), rows)
    with Spy(labeler) as spy:
        changed = prepare_split(
            data, "validation", "labeler", labeler, max_length=MAX_LENGTH, cache_dir=cache
        )
    assert spy.rows == 12 and changed.cache_file != base.cache_file
    assert changed.dataset[3][1].word_labels[0] == rows[3].labels[0]


def test_a_fresh_process_reuses_the_cache(backbone, data, tmp_path):
    """The fingerprint is computed from content, not from pickling: another process hits the cache."""
    cache = tmp_path / "cache"
    model = Filter.from_backbone(backbone, max_length=MAX_LENGTH, device="cpu")
    write_rows(data, filter_rows(20, seed=1), filter_rows(6, seed=2, prefix="v"))
    first = prepare_split(data, "train", "filter", model, max_length=MAX_LENGTH, cache_dir=cache)
    script = (
        "import json, sys\n"
        "from efficientrag.models import Filter\n"
        "from efficientrag.training.encoded import prepare_split\n"
        f"m = Filter.from_backbone({backbone!r}, max_length={MAX_LENGTH}, device='cpu')\n"
        f"p = prepare_split({str(data)!r}, 'train', 'filter', m, max_length={MAX_LENGTH}, cache_dir={str(cache)!r})\n"
        "print(json.dumps({'hit': p.from_cache, 'file': p.cache_file}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"hit": True, "file": first.cache_file}


def test_saved_dataset_trains_on_the_same_inputs_as_its_jsonl(labeler, data, tmp_path):
    from_jsonl = prepare_split(
        data, "train", "labeler", labeler, max_length=MAX_LENGTH, cache_dir=tmp_path / "a"
    )
    saved = tmp_path / "saved"
    load_training_set(data, cache_dir=tmp_path / "a").save_to_disk(str(saved))
    from_disk = prepare_split(
        saved, "train", "labeler", labeler, max_length=MAX_LENGTH, cache_dir=tmp_path / "b"
    )
    assert len(from_disk.dataset) == len(from_jsonl.dataset)
    for i in range(len(from_jsonl.dataset)):
        _same(from_disk.dataset[i][1], from_jsonl.dataset[i][1])
    weights = positive_class_weights([from_disk.dataset])
    labels = [x for r in labeler_rows(40, seed=1) for x in r.labels]
    n, pos = len(labels), sum(labels)
    assert weights == pytest.approx([n / (2 * (n - pos)), n / (2 * pos)])


def _lines_with_bad_rows(tmp_path: Path) -> Path:
    """A file pyarrow parses fine whose rows 6 and 10 fail the row check, with blank lines between."""
    rows = [r.to_dict() for r in labeler_rows(30, seed=3)]
    rows[5]["labels"] = rows[5]["labels"][:-1]  # label/word count mismatch
    del rows[9]["tag"]  # missing field
    lines = [json.dumps(r) for r in rows]
    lines.insert(2, "")  # blank lines shift line numbers away from row numbers
    lines.insert(4, "   ")
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "train.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "validation.jsonl").write_text("\n".join(lines[:5]) + "\n")
    return folder


def test_bad_rows_are_skipped_recorded_and_counted_like_the_line_reader(labeler, tmp_path):
    folder = _lines_with_bad_rows(tmp_path)
    prepared = prepare_split(
        folder,
        "train",
        "labeler",
        labeler,
        max_length=MAX_LENGTH,
        max_bad_fraction=0.1,
        cache_dir=tmp_path / "c",
    )
    reference = read_rows(folder / "train.jsonl", "labeler", max_bad_fraction=0.1)
    assert [s.line for s in prepared.skipped] == [s.line for s in reference.skipped] == [8, 12]
    assert [s.error for s in prepared.skipped] == [s.error for s in reference.skipped]
    assert "field 'tag'" in prepared.skipped[1].error and "labels" in prepared.skipped[0].error
    assert prepared.dataset.ids == [r.id for r in reference.rows]

    limited = prepare_split(
        folder,
        "train",
        "labeler",
        labeler,
        max_length=MAX_LENGTH,
        limit=7,
        max_bad_fraction=0.2,
        cache_dir=tmp_path / "c",
    )
    ref_limited = read_rows(folder / "train.jsonl", "labeler", limit=7, max_bad_fraction=0.2)
    assert limited.dataset.ids == [r.id for r in ref_limited.rows] and len(limited.dataset) == 7
    assert [s.line for s in limited.skipped] == [s.line for s in ref_limited.skipped] == [8]

    with pytest.raises(DataFormatError, match=r"train\.jsonl.*2 of 30 rows are malformed.*line 8"):
        prepare_split(
            folder,
            "train",
            "labeler",
            labeler,
            max_length=MAX_LENGTH,
            max_bad_fraction=0.05,
            cache_dir=tmp_path / "c",
        )


def test_unparseable_lines_fall_back_to_the_line_reader(labeler, tmp_path):
    rows = [json.dumps(r.to_dict()) for r in labeler_rows(20, seed=4)]
    rows[4] = '{"id": "torn'
    folder = tmp_path / "torn"
    folder.mkdir()
    (folder / "train.jsonl").write_text("\n".join(rows) + "\n")
    prepared = prepare_split(
        folder,
        "train",
        "labeler",
        labeler,
        max_length=MAX_LENGTH,
        max_bad_fraction=0.1,
        cache_dir=tmp_path / "c",
    )
    assert len(prepared.dataset) == 19 and [s.line for s in prepared.skipped] == [5]
    assert "not valid JSON" in prepared.skipped[0].error
    direct = labeler.encode_rows(read_rows(folder / "train.jsonl", "labeler", max_bad_fraction=0.1).rows)
    for i, expected in enumerate(direct):
        _same(prepared.dataset[i][1], expected)
    with Spy(labeler) as spy:
        again = prepare_split(
            folder,
            "train",
            "labeler",
            labeler,
            max_length=MAX_LENGTH,
            max_bad_fraction=0.1,
            cache_dir=tmp_path / "c",
        )
    assert spy.rows == 0 and again.from_cache


def test_tokenizer_digest_ignores_the_call_time_truncation_and_padding_state(backbone):
    tokenizer = load_tokenizer(backbone, local_files_only=True)
    tokenizer.backend_tokenizer.enable_truncation(max_length=8)
    before = tokenizer_digest(tokenizer)
    tokenizer([["Alaric", "was", "born"]], is_split_into_words=True, truncation=False)  # resets it
    assert tokenizer_digest(tokenizer) == before
    tokenizer.add_tokens(["Vantmoorian"])
    assert tokenizer_digest(tokenizer) != before
