"""Word labels -> sub-word labels, truncation at word boundaries, and sub-words -> word scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from efficientrag.models.inputs import IGNORE_INDEX
from efficientrag.models.tokenization import Collator, encode_words, load_tokenizer, word_scores
from efficientrag.testing.tiny_backbones import tiny_deberta, tiny_modernbert
from efficientrag.testing.token_tasks import sentences

QUERY = ["Who", "directed", "Titanic", "?"]
CHUNK = ["Titanic", "is", "an", "unbelievably", "successful", "film", "by", "Cameron", "."]
LABELS = [0, 0, 0, 1, 1, 0, 0, 1, 0]


@pytest.fixture(scope="module")
def bert_tok(minilm_path):
    return load_tokenizer(minilm_path)


@pytest.fixture(scope="module")
def spm_tok(tmp_path_factory):
    return load_tokenizer(str(tiny_deberta(tmp_path_factory.mktemp("deb"), sentences(300))))


@pytest.fixture(scope="module")
def bpe_tok(tmp_path_factory):
    return load_tokenizer(str(tiny_modernbert(tmp_path_factory.mktemp("mb"), sentences(300))))


def _labelled(tok, query, chunk, labels, max_length=128, compat=False):
    enc = encode_words(tok, [chunk], max_length, queries=[query])[0]
    enc.word_labels = np.asarray(labels)
    batch = Collator(tok.pad_token_id, pad_to=max_length if compat else None, compat_labels=compat)(
        [(0, enc)]
    )
    return enc, batch


def test_every_subword_of_a_chunk_word_gets_its_label_and_the_query_is_ignored(bert_tok):
    enc, batch = _labelled(bert_tok, QUERY, CHUNK, LABELS)
    tokens = bert_tok.convert_ids_to_tokens(enc.input_ids.tolist())
    word_ids = batch["word_ids"][0].tolist()
    pieces = [t for t, w in zip(tokens, word_ids, strict=True) if w == 3]
    assert len(pieces) > 1 and pieces[0] == "unbelievably"[: len(pieces[0])]  # really split
    labels = batch["labels"][0].tolist()
    for pos, w in enumerate(word_ids):
        expected = LABELS[w] if w >= 0 else IGNORE_INDEX
        assert labels[pos] == expected, (pos, tokens[pos])
    # The query words ("titanic" appears on both sides) are never targets.
    query_positions = [i for i in range(len(tokens)) if batch["token_type_ids"][0, i] == 0]
    assert all(labels[i] == IGNORE_INDEX for i in query_positions)
    assert sorted({w for w in word_ids if w >= 0}) == list(range(len(CHUNK)))


def test_compat_labels_count_query_special_and_padding_as_negatives(bert_tok):
    enc, batch = _labelled(bert_tok, QUERY, CHUNK, LABELS, max_length=64, compat=True)
    labels = batch["labels"][0]
    assert labels.shape[0] == 64  # padded to the official fixed length
    assert (labels == IGNORE_INDEX).sum() == 0
    off_chunk = batch["word_ids"][0] < 0
    assert (labels[off_chunk] == 0).all()
    assert int(off_chunk.sum()) == 64 - int((batch["word_ids"][0] >= 0).sum())
    assert batch["attention_mask"][0].sum() == len(enc)


def test_truncation_cuts_whole_chunk_words_keeps_the_query_and_reports_the_count(bert_tok):
    long_chunk = CHUNK * 6
    full = encode_words(bert_tok, [long_chunk], 512, queries=[QUERY])[0]
    enc = encode_words(bert_tok, [long_chunk], 40, queries=[QUERY])[0]
    assert len(enc) <= 40 and len(full) > 40
    kept = sorted({int(w) for w in enc.word_ids if w >= 0})
    assert kept == list(range(len(kept)))
    assert enc.truncated_words == len(long_chunk) - len(kept) > 0
    assert enc.query_truncated_words == 0
    # Each kept word has all its sub-words (never half a word), and the query is whole.
    for w in kept:
        assert (enc.word_ids == w).sum() == (full.word_ids == w).sum()
    assert enc.input_ids[: 1 + 5].tolist() == full.input_ids[: 1 + 5].tolist()
    # Nothing is cut silently: word labels of cut words still exist and count in evaluation.
    enc.word_labels = np.asarray(LABELS * 6)
    batch = Collator(bert_tok.pad_token_id)([(0, enc)])
    assert batch["word_labels"].shape[1] == len(long_chunk)


def test_a_query_longer_than_the_budget_is_cut_and_reported(bert_tok):
    query = ["what"] * 60
    enc = encode_words(bert_tok, [CHUNK], 32, queries=[query])[0]
    assert len(enc) <= 32
    assert enc.query_truncated_words > 0
    assert (enc.word_ids >= 0).sum() > 0  # the chunk still gets room
    assert enc.truncated_words == len(CHUNK) - len({int(w) for w in enc.word_ids if w >= 0})


def test_filter_inputs_are_cut_from_the_end(bert_tok):
    words = ["Query", ":", *QUERY, "Info", ":", *CHUNK * 4]
    enc = encode_words(bert_tok, [words], 24)[0]
    kept = sorted({int(w) for w in enc.word_ids if w >= 0})
    assert kept == list(range(len(kept)))
    assert len(enc) <= 24 and enc.truncated_words == len(words) - len(kept)


def test_sentencepiece_deberta_tokenizer_aligns_words(spm_tok):
    assert type(spm_tok).__name__ == "DebertaV2Tokenizer" and spm_tok.is_fast
    chunk = ["Alaric", "was", "born", "in", "Vantmoor", "."]
    enc, batch = _labelled(spm_tok, ["Where", "was", "Alaric", "born", "?"], chunk, [1, 0, 1, 1, 1, 0])
    word_ids = batch["word_ids"][0].tolist()
    assert max(word_ids.count(w) for w in range(len(chunk))) > 1  # sub-word splits happen
    assert sorted({w for w in word_ids if w >= 0}) == list(range(len(chunk)))
    tokens = spm_tok.convert_ids_to_tokens(enc.input_ids.tolist())
    starts = [tokens[word_ids.index(w)] for w in range(len(chunk))]
    assert all(t.startswith("\u2581") for t in starts)  # each word starts a new piece
    labels = batch["labels"][0].tolist()
    assert all(labels[p] == [1, 0, 1, 1, 1, 0][w] for p, w in enumerate(word_ids) if w >= 0)


def test_byte_level_bpe_gets_a_prefix_space_on_every_word(bpe_tok):
    enc = encode_words(bpe_tok, [["Alaric", "was", "born"]], 64, queries=[["Where", "?"]])[0]
    tokens = bpe_tok.convert_ids_to_tokens(enc.input_ids.tolist())
    word_ids = enc.word_ids.tolist()
    firsts = [tokens[word_ids.index(w)] for w in range(3)]
    assert all(t.startswith("\u0120") for t in firsts), firsts
    # Same pieces as the words inside running text.
    running = bpe_tok(" Alaric was born", add_special_tokens=False)["input_ids"]
    assert [int(i) for i, w in zip(enc.input_ids, word_ids, strict=True) if w >= 0] == running


def test_word_scores_first_mean_max_and_missing_words():
    probs = torch.tensor([[0.9, 0.2, 0.4, 0.6, 0.8, 0.5]])
    word_ids = torch.tensor([[-1, 0, 0, 1, 1, -1]])
    first = word_scores(probs, word_ids, 3, "first")
    mean = word_scores(probs, word_ids, 3, "mean")
    top = word_scores(probs, word_ids, 3, "max")
    assert torch.allclose(first, torch.tensor([[0.2, 0.6, 0.0]]))
    assert torch.allclose(mean, torch.tensor([[0.3, 0.7, 0.0]]))
    assert torch.allclose(top, torch.tensor([[0.4, 0.8, 0.0]]))
    with pytest.raises(ValueError):
        word_scores(probs, word_ids, 3, "median")


def test_dynamic_padding_pads_to_the_longest_input(bert_tok):
    short, long = encode_words(bert_tok, [CHUNK[:2], CHUNK * 3], 256, queries=[QUERY, QUERY])
    batch = Collator(bert_tok.pad_token_id)([(0, short), (1, long)])
    assert batch["input_ids"].shape == (2, len(long))
    assert batch["attention_mask"][0].sum() == len(short)
    assert (batch["input_ids"][0, len(short) :] == bert_tok.pad_token_id).all()
    assert batch["index"].tolist() == [0, 1]
