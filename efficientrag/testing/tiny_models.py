"""Tiny, randomly initialized causal LMs that load by path exactly like a downloaded checkpoint.

There are no real LLM weights on the test machines, yet FLARE, DRAGIN and the HF generator must be
tested end to end through ``AutoModelForCausalLM`` / ``AutoTokenizer``. :func:`build_tiny_causal_lm`
writes a complete checkpoint folder (safetensors weights, config, generation config, a byte-level
BPE tokenizer trained offline on a small built-in English text, and a chat template), so the code
under test takes the same loading path it takes for Llama or Qwen.

The weights are random but not flat: they are drawn with a large ``initializer_range`` so the
next-token distributions are peaked enough that greedy decoding has no near-ties (batched and
one-by-one decoding then pick the same tokens) and token probabilities and entropies vary from
position to position, which the FLARE/DRAGIN tests need in order to see a threshold fire.

Building takes well under a second; in tests build it once per session::

    @pytest.fixture(scope="session")
    def tiny_lm_path(tmp_path_factory):
        return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm"))
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

# Role markers and the end-of-turn marker are single special tokens, as in real chat models.
BOS, EOS, PAD, UNK = "<s>", "</s>", "<pad>", "<unk>"
END_OF_TURN = "<|end|>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
SPECIAL_TOKENS = (BOS, EOS, PAD, UNK, END_OF_TURN, *ROLE_TOKENS)

# A minimal chat format: "<|role|>\ncontent<|end|>\n" per message, then "<|assistant|>\n" to prompt.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)

SUPPORTED_ARCHS = ("llama", "qwen2")

# Written for this module: short encyclopedic sentences in the style of the multi-hop datasets, plus
# the "So the answer is" phrasing the methods prompt for, so common words become single tokens.
BUILTIN_TEXT = """\
The river flows through the old city and reaches the sea after two hundred miles.
Maria Lopez was born in Valencia in 1954. She studied physics at the University of Madrid.
The film was directed by Thomas Berg and released in 1987. It won two awards at the festival.
Who directed the film that won the award? The director of the film is Thomas Berg.
Question: Where was the author of the novel born? Answer: The novel was written by Anna Weiss.
Anna Weiss was born in Vienna. So the answer is Vienna.
Question: Which team did the player join in 2001? Answer: The player joined the Harbor Lions in 2001.
So the answer is the Harbor Lions.
The museum opened in 1923 and houses paintings, sculptures and ancient maps of the region.
He was a singer, songwriter and actor. His first album was recorded in London.
The capital of the country is a large port city with a population of four million people.
Both films were released in the same year, but the second one was longer.
Is the lake deeper than the river? No. Are both of them in the same country? Yes.
Follow up: Who is the mother of the king? Intermediate answer: The mother of the king is Queen Ada.
So the final answer is: Queen Ada.
The bridge was built by engineers from three countries and completed after eleven years.
She married the painter in 1962, and they lived in Paris until his death.
The company was founded in St. Louis by two brothers who had moved from the U.S. coast.
Search results ranked by relevance: [1] The tower is the tallest building in the city.
Context: The school was named after its first teacher, who came from a small village.
Answer the following question by reasoning step by step, following the examples above.
"""


def build_tiny_causal_lm(
    out_dir: str | Path,
    *,
    arch: str = "llama",
    seed: int = 0,
    vocab_texts: Sequence[str] | None = None,
    vocab_size: int = 512,
    hidden_size: int = 48,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    max_positions: int = 1024,
    initializer_range: float = 0.5,
    chat_template: bool = True,
) -> str:
    """Write a random causal LM and its tokenizer to ``out_dir``; return the folder as a string.

    Deterministic given the arguments: the tokenizer is trained on ``BUILTIN_TEXT`` plus
    ``vocab_texts`` (so a test's own words tokenize compactly) and the weights come from
    ``torch.manual_seed(seed)``. ``num_kv_heads < num_heads`` exercises grouped-query attention.
    ``chat_template=False`` writes a base model without one.
    """
    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"arch must be one of {SUPPORTED_ARCHS}, got {arch!r}")
    if num_heads % num_kv_heads or hidden_size % num_heads:
        raise ValueError("hidden_size must be divisible by num_heads, and num_heads by num_kv_heads")
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    tokenizer = _save_tokenizer(
        out, [BUILTIN_TEXT, *(vocab_texts or [])], vocab_size, max_positions, chat_template
    )
    ids = {tok: tokenizer.convert_tokens_to_ids(tok) for tok in SPECIAL_TOKENS}
    config = _model_config(
        arch,
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        max_positions=max_positions,
        initializer_range=initializer_range,
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
        pad_token_id=ids[PAD],
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.eval()
    # A checkpoint that asks for sampling, like many chat models' generation_config.json: the
    # generator must ignore it and decode greedily unless told otherwise.
    model.generation_config = GenerationConfig(
        bos_token_id=ids[BOS],
        eos_token_id=[ids[EOS], ids[END_OF_TURN]],
        pad_token_id=ids[PAD],
        do_sample=True,
        temperature=0.7,
        top_p=0.9,
        top_k=20,
        repetition_penalty=1.3,
    )
    model.save_pretrained(out)
    (out / "TINY_MODEL.json").write_text(
        json.dumps({"arch": arch, "seed": seed, "random_weights": True}, indent=2), encoding="utf-8"
    )
    return str(out)


def _save_tokenizer(
    out: Path, texts: Sequence[str], vocab_size: int, max_positions: int, chat_template: bool
):
    """Train the byte-level BPE tokenizer on ``texts``, wrap it with the chat's special tokens and
    save it to ``out``; returns the wrapped tokenizer (its ids name the model's special tokens)."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(texts, vocab_size),
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        additional_special_tokens=[END_OF_TURN, *ROLE_TOKENS],
        clean_up_tokenization_spaces=False,
        model_max_length=max_positions,
    )
    if chat_template:
        tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    return tokenizer


def _train_tokenizer(texts: Sequence[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    # Plain-text prompts get a BOS token, as with Llama tokenizers; chat prompts carry it in the template.
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)]
    )
    return tok


def _model_config(arch: str, **kw):
    common = dict(
        vocab_size=kw["vocab_size"],
        hidden_size=kw["hidden_size"],
        intermediate_size=2 * kw["hidden_size"],
        num_hidden_layers=kw["num_layers"],
        num_attention_heads=kw["num_heads"],
        num_key_value_heads=kw["num_kv_heads"],
        max_position_embeddings=kw["max_positions"],
        initializer_range=kw["initializer_range"],
        bos_token_id=kw["bos_token_id"],
        eos_token_id=kw["eos_token_id"],
        pad_token_id=kw["pad_token_id"],
        tie_word_embeddings=False,
    )
    if arch == "llama":
        from transformers import LlamaConfig

        return LlamaConfig(**common)
    from transformers import Qwen2Config

    return Qwen2Config(**common)
