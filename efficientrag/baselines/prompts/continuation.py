"""The prompt every active method continues: exemplars, the current documents, the question and
the answer written so far.

Both papers put the documents in front of the test question (FLARE: ``LM([D_q, x, y_<t])``;
DRAGIN's prompts, App. F: exemplars, then ``Context: [1] ... [2] ...``, then the question), after
the exemplars (FLARE's code: ``ctx_position=before_case``). One layout serves every method, so
they differ only in when and what they retrieve::

    Question: <exemplar question>
    Answer: <reasoning> So the answer is <answer>.

    ... (one block per exemplar, a blank line between them)

    Context:
    [1] <title>: <text>
    [2] ...
    Answer the question below in the same format as the examples above, using the context where it helps.
    Question: <question>
    Answer:<answer so far>

Without documents the Context block and the instruction line are left out. The prompt is a plain
string continued as raw text; :class:`RenderedPrompt` also says where the question and the answer
are, so DRAGIN can find their tokens in the attention matrix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from efficientrag.baselines.prompts.cot_exemplars import SEARCH_EXEMPLARS, CoTExemplar
from efficientrag.data.schema import Chunk
from efficientrag.errors import InvalidArgumentError

CONTEXT_HEADER = "Context:"
DOC_INSTRUCTION = (
    "Answer the question below in the same format as the examples above, using the context where it helps."
)
ANSWER_PHRASE = "So the answer is"
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    # Character span of the test question inside ``text``.
    question_span: tuple[int, int]
    # Where the answer written so far starts (everything after it is the answer).
    answer_start: int


def format_document(chunk: Chunk, max_words: int | None = None) -> str:
    """``<title>: <text>`` on one line, cut to ``max_words`` words."""
    text = _SPACE.sub(" ", chunk.contents).strip()
    if max_words is not None:
        words = text.split(" ")
        if len(words) > max_words:
            text = " ".join(words[:max_words])
    return text


def context_block(docs: Sequence[Chunk], max_words: int | None = None) -> str:
    lines = [CONTEXT_HEADER]
    lines += [f"[{i}] {format_document(d, max_words)}" for i, d in enumerate(docs, start=1)]
    return "\n".join(lines) + "\n"


class PromptBuilder:
    """Renders the layout above. ``exemplar_docs[i]`` (FLARE's 2Wiki setting) are shown as a
    Context block in front of exemplar ``i``."""

    answer_label = "Answer:"

    def __init__(
        self,
        exemplars: Sequence[CoTExemplar],
        *,
        max_doc_words: int | None = None,
        exemplar_docs: Sequence[Sequence[Chunk]] | None = None,
    ) -> None:
        if exemplar_docs is not None and len(exemplar_docs) != len(exemplars):
            raise InvalidArgumentError(f"{len(exemplar_docs)} document lists for {len(exemplars)} exemplars")
        self.exemplars = tuple(exemplars)
        self.max_doc_words = max_doc_words
        self.exemplar_docs = exemplar_docs
        self._head = self._render_head()

    def _render_head(self) -> str:
        blocks = []
        for i, ex in enumerate(self.exemplars):
            docs = self.exemplar_docs[i] if self.exemplar_docs is not None else ()
            ctx = context_block(docs, self.max_doc_words) if docs else ""
            blocks.append(f"{ctx}Question: {ex.question}\n{self.answer_label} {ex.answer}\n\n")
        return "".join(blocks)

    def render(self, question: str, docs: Sequence[Chunk] = (), answer: str = "") -> RenderedPrompt:
        parts = [self._head]
        if docs:
            parts.append(context_block(docs, self.max_doc_words))
            parts.append(DOC_INSTRUCTION + "\n")
        parts.append("Question: ")
        prefix = "".join(parts)
        question = _SPACE.sub(" ", question).strip()
        q_start = len(prefix)
        body = f"{prefix}{question}\n{self.answer_label}"
        return RenderedPrompt(body + answer, (q_start, q_start + len(question)), len(body))


class InstructPromptBuilder(PromptBuilder):
    """FLARE-instruct's prompt (its Prompt 3.1 structure, our wording): the search skill with its
    examples, the step-by-step skill with the dataset's exemplars, then both together."""

    answer_label = "Answer (step by step, with search):"

    def _render_head(self) -> str:
        lines = [
            'Skill 1. To look something up, write "[Search(term)]", where term is what you want to find; '
            "the results will be shown to you. For example:\n"
        ]
        for ex in SEARCH_EXEMPLARS:
            lines.append(f"Question: {ex.question}\nAnswer (with search): {ex.answer}\n\n")
        lines.append(
            "Skill 2. Answer a question by reasoning step by step: write the reasoning first, then the "
            "conclusion. For example:\n"
        )
        for ex in self.exemplars:
            lines.append(f"Question: {ex.question}\nAnswer (step by step): {ex.answer}\n\n")
        lines.append(
            "Now use both skills together: reason step by step, then conclude, and look things up with "
            '"[Search(term)]" whenever that helps.\n'
        )
        return "".join(lines)


def question_prompt(passage: str, term: str) -> str:
    """FLARE's explicit queries: ask for the question that ``term`` answers (our wording of the
    paper's 'Ask a question to which the answer is ...')."""
    return (
        f"Text: {passage}\n"
        f'Write one question whose answer is "{term}", as it is used in the text above. Write only the '
        "question.\nQuestion:"
    )
