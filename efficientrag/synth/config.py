"""Settings of one synthesis run (``configs/synth/*.yaml`` + ``key=value`` overrides)."""

from __future__ import annotations

from dataclasses import dataclass, field

from efficientrag.data.config import DataConfig
from efficientrag.llm.config import LLMConfig
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.setting_fields import SettingError, bounded, check_settings, probability
from efficientrag.synth.records import STAGES


@dataclass
class AnnotationsConfig:
    """Options of the annotation teacher (``teacher: annotations``).

    Attributes:
        max_span_words: Longest stretch of the previous query a next-hop query drops as resolved
            in one piece; a longer one is reduced to the words it shares with the sub-question.
    """

    # Longest stretch of the previous query a next-hop query drops as "resolved" in one piece;
    # a longer one is reduced to the words it shares with the dependency's sub-question.
    max_span_words: int = bounded(12, low=1)

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass
class LLMTeacherConfig:
    """Options of the LLM teacher (``teacher: llm``) beyond the client settings in ``llm``.

    Attributes:
        json_mode: Ask the server for a JSON object (``response_format``); not every server has it.
        hints: Show the dataset's annotations (2Wiki evidence, MuSiQue steps) in the decomposition
            prompt, as the paper's teacher saw them.
    """

    # Ask the server for a JSON object (OpenAI / vLLM ``response_format={"type": "json_object"}``;
    # vLLM then constrains decoding to JSON). Off by default: not every server supports it.
    json_mode: bool = False
    # Show the dataset's annotations (2Wiki evidence triples, MuSiQue annotated steps) in the
    # decomposition prompt, as the paper's teacher saw them.
    hints: bool = True


@dataclass
class SynthConfig:
    """One synthesis run: which data, which teacher, which stages, and how they decide.

    Attributes:
        data: The questions and corpus to synthesize from.
        retriever: The retriever that mines hard negatives (its index under
            ``retriever.index_dir``, default ``<out_dir>/index``, reused on resume).
        teacher: Who decomposes, labels and writes next-hop queries: ``"annotations"`` (the
            datasets' gold annotations, no LLM) or another module of ``efficientrag.synth.teacher``
            (``"llm"``).
        annotations: The annotation teacher's options.
        llm: The LLM teacher's endpoint (its concurrency is ``concurrency``).
        llm_teacher: The LLM teacher's options.
        out_dir: Where every stage writes its JSONL and the training sets go.
        stages: The stages to run, of decompose, label, align, next_hop, negatives, build.
        limit: Only the first N questions (None: all).
        min_align_rate: Reject a labeling or next-hop query when a smaller share of its words
            aligns onto the text, in [0, 1].
        align_window: Source positions the reordered-words alignment pass searches around a word.
        use_lemmas: Also align content words by lemma (with spaCy's ``en_core_web_sm``).
        negatives_top_k: Hits retrieved per query to pick negatives from.
        negatives_exclude_answer: Skip hits that contain the sub-question's answer as negatives.
        negatives_batch_size: Queries per retrieval batch while mining negatives.
        negatives_per_query: Negatives kept per query (the official code: 1).
        question_positives: Also label every later hop's gold chunk Continue for the original
            question.
        validation_ratio: Share of questions (by id, seeded) in the validation split, in [0, 1].
        seed: Seed of the split.
        concurrency: Records processed at once by async (LLM) stages; also the client's
            requests in flight.
        force: Redo the selected stages from scratch (and clear the stages after them).
        retry_errors: Re-run records an unexpected error rejected in an earlier run.
        max_errors: Stop a stage after this many unexpected errors in one run (None: never).
        progress: Show progress bars.
    """

    data: DataConfig = field(default_factory=DataConfig)
    # Retriever for hard negatives (the paper: Contriever-MSMARCO, the one used at inference).
    # Its index is kept in retriever.index_dir, default <out_dir>/index (reused on resume).
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    # Who decomposes, labels and writes next-hop queries: "annotations" (gold annotations, no
    # LLM) or another module of efficientrag.synth.teacher (e.g. "llm").
    teacher: str = "annotations"
    annotations: AnnotationsConfig = field(default_factory=AnnotationsConfig)
    # The OpenAI-compatible endpoint of the LLM teacher (vLLM, OpenAI, ...): base_url, model,
    # api_key_env (the key itself only from the environment or code, never saved), cache_dir (the
    # response cache that makes a resumed or repeated run free), temperature (0), max_tokens,
    # retries, prices. Its concurrency is taken from `concurrency` below.
    llm: LLMConfig = field(default_factory=LLMConfig)
    llm_teacher: LLMTeacherConfig = field(default_factory=LLMTeacherConfig)
    out_dir: str = "runs/synth/toy"
    stages: list[str] = field(default_factory=lambda: list(STAGES))
    # Only the first N questions (None: all).
    limit: int | None = bounded(None, low=1)
    # Reject a labeling (or next-hop query) when fewer of its words align onto the text.
    min_align_rate: float = probability(0.8)
    align_window: int = bounded(150, low=1)
    use_lemmas: bool = True
    negatives_top_k: int = bounded(10, low=1)
    # Skip retrieved chunks that contain the sub-question's answer when picking a negative.
    negatives_exclude_answer: bool = True
    negatives_batch_size: int = bounded(64, low=1)
    # Negatives per query: the official code keeps 1 (the hardest non-gold hit); more follow the
    # retriever's ranking and give the Tagger the top-k it judges at inference (docs/synthesis.md).
    # 4, with question_positives, is the recipe the MiniLM training presets are tuned for (with the
    # official 1 / false, the small-data Tagger stayed at chance: docs/training.md); the paper-scale
    # presets (configs/synth/*-llm.yaml) set the official values explicitly.
    negatives_per_query: int = bounded(4, low=1)
    # Also label every gold chunk of a later hop as Continue for the original question (the query
    # the loop starts from); the official data pairs it only with its own next-hop query.
    question_positives: bool = True
    validation_ratio: float = probability(0.1)
    seed: int = 0
    # Records processed at once by async (LLM) stages; also the LLM client's requests in flight.
    concurrency: int = bounded(8, low=1)
    # Redo the selected stages from scratch (and clear the stages after them).
    force: bool = False
    # Re-run records rejected by an unexpected error in an earlier run.
    retry_errors: bool = False
    # Stop a stage after this many unexpected errors in one run (None: never).
    max_errors: int | None = 100
    progress: bool = True

    def __post_init__(self) -> None:
        unknown = [s for s in self.stages if s not in STAGES]
        if unknown:
            raise SettingError(f"stages: unknown stage(s) {unknown}; stages are {list(STAGES)}")
        check_settings(self)
