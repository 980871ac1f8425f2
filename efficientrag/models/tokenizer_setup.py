"""Loading a fast tokenizer that maps sub-words back to our spaCy words.

Labels are per word, so every tokenizer is called with ``is_split_into_words=True`` and read back
through ``word_ids()``. Two tokenizer families need care for that to mean the same thing as on
running text:

* byte-level BPE (RoBERTa, ModernBERT, GPT-2 style) only marks a word start ("Ġ") when the
  pre-tokenizer adds a prefix space; without it every word after the first is encoded as if glued
  to the previous one, which is not what the model saw in pre-training;
* Metaspace / sentencepiece tokenizers (DeBERTa-v3) have the same switch as ``prepend_scheme``.

:func:`prepare_word_tokenizer` turns both on in the backend, so words are encoded as they would be
inside a sentence. DeBERTa-v3 folders that ship only ``spm.model`` are converted to a fast
tokenizer by transformers itself (``DebertaV2Tokenizer`` is tokenizers-backed in transformers 5).
"""

from __future__ import annotations

from typing import Any

from transformers import AutoTokenizer, PreTrainedTokenizerBase


def load_tokenizer(path: str, *, local_files_only: bool = False) -> PreTrainedTokenizerBase:
    tokenizer = AutoTokenizer.from_pretrained(
        path, trust_remote_code=False, local_files_only=local_files_only
    )
    return prepare_word_tokenizer(tokenizer, source=path)


def prepare_word_tokenizer(
    tokenizer: PreTrainedTokenizerBase, *, source: str = ""
) -> PreTrainedTokenizerBase:
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"tokenizer {source or type(tokenizer).__name__} is not a fast (tokenizers-backed) tokenizer; "
            "word-level labels need word_ids(). Save the tokenizer with a tokenizer.json."
        )
    backend = tokenizer.backend_tokenizer
    if backend.pre_tokenizer is not None:
        _prefix_every_word(backend.pre_tokenizer)
    if hasattr(tokenizer, "add_prefix_space"):
        tokenizer.add_prefix_space = True
    return tokenizer


def _prefix_every_word(pre_tokenizer: Any) -> None:
    name = type(pre_tokenizer).__name__
    if name == "Sequence":
        i = 0
        while True:
            try:
                part = pre_tokenizer[i]
            except IndexError:
                return
            _prefix_every_word(part)
            i += 1
    elif name == "ByteLevel":
        pre_tokenizer.add_prefix_space = True
    elif name == "Metaspace":
        pre_tokenizer.prepend_scheme = "always"
