"""Tiny randomly initialized encoders with their own freshly trained tokenizers, written to a folder.

They let tests exercise the real code paths of the paper's backbone family offline: DeBERTa-v2/v3
with a sentencepiece (Unigram) tokenizer converted by transformers, and ModernBERT with a byte-level
BPE tokenizer (the ``add_prefix_space`` case). Nothing here is downloaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# The size every tiny backbone shares (hidden 32, 2 heads); the layer count is each one's own.
_TINY_SIZES = {
    "hidden_size": 32,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 512,
}


def tiny_deberta(
    folder: str | Path, texts: Sequence[str], *, vocab_size: int = 120, seed: int = 0, num_layers: int = 2
) -> Path:
    """DeBERTa-v2 (hidden 32, ``num_layers`` layers) + a sentencepiece tokenizer trained on ``texts``."""
    import sentencepiece as spm
    from transformers import DebertaV2Config, DebertaV2Model, DebertaV2Tokenizer

    folder = Path(folder)
    spm_dir = folder / "_spm"
    spm_dir.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(spm_dir / "spm"),
        vocab_size=vocab_size,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
        pad_piece="[PAD]",
        unk_piece="[UNK]",
        bos_piece="[CLS]",
        eos_piece="[SEP]",
        user_defined_symbols=["[MASK]"],
        hard_vocab_limit=False,
        minloglevel=2,
    )
    tokenizer = DebertaV2Tokenizer.from_pretrained(str(spm_dir))  # converts spm.model to a fast tokenizer
    torch.manual_seed(seed)
    config = DebertaV2Config(
        vocab_size=len(tokenizer),
        num_hidden_layers=num_layers,
        **_TINY_SIZES,
        relative_attention=True,
        position_buckets=32,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        type_vocab_size=0,
        pad_token_id=tokenizer.pad_token_id,
    )
    DebertaV2Model(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def tiny_modernbert(
    folder: str | Path, texts: Sequence[str], *, vocab_size: int = 400, seed: int = 0
) -> Path:
    """ModernBERT (hidden 32, 2 layers) + a byte-level BPE tokenizer trained on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import ModernBertConfig, ModernBertModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    backend = Tokenizer(models.BPE(unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    backend.train_from_iterator(texts, trainer=trainer)
    tokenizer, cls_id, sep_id = _bert_style_tokenizer(backend)
    torch.manual_seed(seed)
    config = ModernBertConfig(
        vocab_size=len(tokenizer),
        num_hidden_layers=2,
        **_TINY_SIZES,
        pad_token_id=tokenizer.pad_token_id,
        cls_token_id=cls_id,
        sep_token_id=sep_id,
        bos_token_id=cls_id,
        eos_token_id=sep_id,
    )
    ModernBertModel(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def tiny_bert(folder: str | Path, texts: Sequence[str], *, vocab_size: int = 300, seed: int = 0) -> Path:
    """BERT (hidden 32, 2 layers, the MiniLM family) + a WordPiece tokenizer trained on ``texts``.

    sentence-transformers' ``CrossEncoder`` loads it as ``BertForSequenceClassification`` with a
    fresh head, as it loads MiniLM, so the reranker's training runs in seconds in tests."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import BertConfig, BertModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    backend = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece()
    backend.train_from_iterator(
        texts, trainer=trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS)
    )
    tokenizer, _, _ = _bert_style_tokenizer(backend, model_max_length=512)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer), num_hidden_layers=2, **_TINY_SIZES, pad_token_id=tokenizer.pad_token_id
    )
    BertModel(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def tiny_cross_encoder(folder: str | Path, texts: Sequence[str], *, seed: int = 0) -> Path:
    """A randomly initialized one-label reranker in the ``CrossEncoder`` layout (a tiny BERT with a
    sequence-classification head and its tokenizer): what ``efficientrag train reranker`` writes, for
    tests of the code that loads one (our ``rerank`` method, LangChain's, LlamaIndex's and
    Haystack's rerankers)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = Path(folder)
    backbone = tiny_bert(folder.parent / f"{folder.name}-backbone", texts, seed=seed)
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(str(backbone), num_labels=1)
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(backbone)).save_pretrained(str(folder))
    return folder


def _bert_style_tokenizer(backend: Any, **extra: Any) -> tuple[Any, int, int]:
    """``backend`` as a fast tokenizer with ``[CLS] … [SEP]`` templates, plus its CLS and SEP ids."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    cls_id, sep_id = backend.token_to_id("[CLS]"), backend.token_to_id("[SEP]")
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        **extra,
    )
    return tokenizer, cls_id, sep_id
