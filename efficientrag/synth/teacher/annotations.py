"""The annotation teacher: decompositions, token labels and next-hop queries from the datasets'
own gold annotations, with no LLM (no API spend; runs anywhere).

Which rules apply is decided per record by the shape of ``Example.raw`` (MuSiQue and the toy
world: ``question_decomposition``; 2Wiki: ``evidences``; HotpotQA: ``context`` +
``supporting_facts`` or IRCoT's ``contexts``), so pooled multi-dataset runs work. The rules and
their limits are written up in ``docs/synthesis.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk, Example
from efficientrag.synth.next_hop import teacher_next_hop
from efficientrag.synth.records import Decomposition, Reject, SubQuestion
from efficientrag.synth.teacher import hotpotqa, musique, twowiki
from efficientrag.synth.teacher.base import R_FORMAT, DependencyInfo, Extraction
from efficientrag.synth.teacher.evidence import extract_evidence
from efficientrag.synth.teacher.paragraphs import ChunkLookup, chunk_layout

if TYPE_CHECKING:
    from efficientrag.synth.config import SynthConfig

NAME = "annotations"


def record_format(raw: Mapping[str, Any]) -> str:
    if "question_decomposition" in raw:
        return "musique"
    if "evidences" in raw:
        return "2wikimultihopqa"
    if "contexts" in raw or ("supporting_facts" in raw and "context" in raw):
        return "hotpotqa"
    raise Reject(R_FORMAT, f"raw record has none of the annotated formats (keys: {sorted(raw)[:8]})")


FORMATS: dict[str, ModuleType] = {"musique": musique, "2wikimultihopqa": twowiki, "hotpotqa": hotpotqa}


class AnnotationTeacher:
    name = NAME

    def __init__(self, corpus: Corpus, *, max_span_words: int = 12) -> None:
        self.max_span_words = max_span_words
        self.lookup = ChunkLookup(corpus)

    def decompose(self, example: Example) -> Decomposition:
        return FORMATS[record_format(example.raw)].decompose(example, self.lookup)

    def extract_words(self, example: Example, sub_question: SubQuestion, chunk: Chunk) -> Extraction:
        module = FORMATS[record_format(example.raw)]
        layout = chunk_layout(chunk, module.paragraph(example, chunk))
        evidence = extract_evidence(layout, sub_question.answers(), sub_question.sub_question)
        words = [layout.words[i] for i in evidence.indices]
        return Extraction(words, evidence.indices, evidence.method)

    def next_hop_query(
        self,
        example: Example,
        sub_question: SubQuestion,
        prev_query_words: Sequence[str],
        dependencies: Sequence[DependencyInfo],
    ) -> list[str]:
        return teacher_next_hop(prev_query_words, dependencies, max_span_words=self.max_span_words)

    def progress(self) -> Mapping[str, Any]:
        return {}

    def params(self) -> Mapping[str, Any]:
        return {"teacher": NAME, "max_span_words": self.max_span_words}


def build_teacher(cfg: SynthConfig, corpus: Corpus) -> AnnotationTeacher:
    """Entry point used by :func:`efficientrag.synth.teacher.get_teacher`."""
    return AnnotationTeacher(corpus, max_span_words=cfg.annotations.max_span_words)
