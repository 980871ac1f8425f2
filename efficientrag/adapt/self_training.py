"""Self-training from unlabeled questions: the models' own confident decisions as training rows.

The current Labeler and Filter run the EfficientRAG loop over the user's questions (no answers, no
gold) on their corpus, and every decision is recorded with its probability (``decisions.jsonl``,
appended batch by batch, so a killed run resumes where it stopped). Rows are then cut from
the record at the thresholds: a (query, chunk) pair whose Continue probability is at least
``continue_threshold`` becomes a Continue row (its words labeled where the Labeler was at least
``token_threshold`` sure), one at most ``terminate_threshold`` a Terminate row (all words 0, at
most ``terminate_per_continue`` per Continue row, the surest first), and a Filter input whose every
word is decided with confidence ``|2p - 1| >= filter_confidence`` a Filter row. Undecided pairs
teach nothing. With ``agreement: links`` a confident Continue pair must also be backed by the
corpus's title links, and one they contradict becomes a Terminate row
(:mod:`efficientrag.adapt.link_agreement`). Cutting is cheap and separate from inference, so
thresholds can be compared on validation without running the models again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tqdm.auto import tqdm

from efficientrag.adapt.link_agreement import LinkView
from efficientrag.data.split import TRAIN, VALIDATION, split_of
from efficientrag.errors import DataFormatError, InvalidArgumentError, MissingFileError
from efficientrag.jsonl import JsonlAppender, drop_duplicate_ids, read_done_ids, read_jsonl
from efficientrag.models.inputs import TAG_CONTINUE, TAG_TERMINATE, FilterRow, LabelerRow
from efficientrag.run_lock import folder_lock
from efficientrag.setting_fields import SettingError, bounded, check_settings, probability
from efficientrag.text.validity import text_problem

SELF_DATASET = "self-training"
QUESTION_PREFIX = "self/"


@dataclass
class SelfTrainConfig:
    rounds: int = bounded(1, low=1, high=5)
    # 0.3 and links: chosen with HotpotQA left out on validation and pseudo questions
    # (docs/adaptation.md); confidence alone made the models worse there.
    continue_threshold: float = 0.3
    terminate_threshold: float = 0.02
    token_threshold: float = probability(0.5)
    filter_confidence: float = probability(0.8)
    terminate_per_continue: int = 4
    validation_ratio: float = probability(0.1)
    seed: int = 0
    # The corpus the questions were asked over ("" = the adaptation corpus).
    corpus: str = ""
    # "none": the models' confidence alone decides; "links": the corpus's title links must agree.
    agreement: Literal["none", "links"] = "links"
    # Fewer Continue rows than this and adapt refuses before fine-tuning: rows that are (almost)
    # all Terminate teach the models to stop early: Terminate-only rows from a corpus
    # without title links (nothing for the links to back) took recall 65.42 -> 60.00; the smallest
    # cut the benchmark measured helping had 132 Continue rows (docs/adaptation.md).
    min_continue_rows: int = bounded(50, low=0)

    def __post_init__(self) -> None:
        check_settings(self)
        if not 0.0 <= self.terminate_threshold < self.continue_threshold <= 1.0:
            raise SettingError(
                f"need 0 <= terminate_threshold < continue_threshold <= 1, got "
                f"{self.terminate_threshold} and {self.continue_threshold}"
            )


@dataclass(frozen=True)
class Question:
    id: str
    question: str


def read_questions(path: str | Path) -> tuple[list[Question], list[dict[str, Any]]]:
    """Questions from JSONL (``question``, optional ``id``) or plain text (one per line).
    Returns (questions, skipped): a record without a question is skipped and said why."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"{path}: questions file not found")
    questions: list[Question] = []
    skipped: list[dict[str, Any]] = []
    seen: set[str] = set()
    if path.suffix == ".txt":
        lines = path.read_text(encoding="utf-8").splitlines()
        records = [
            (i, {"id": f"line{i}", "question": line}) for i, line in enumerate(lines, 1) if line.strip()
        ]
    else:
        records = [(i, rec) for i, rec in enumerate(read_jsonl(path), 1)]
    for line, rec in records:
        text = rec.get("question")
        qid = str(rec.get("id") or f"line{line}")
        problem = text_problem(text) if isinstance(text, str) else "missing"
        if problem is not None:
            reason = "missing or empty" if problem in ("missing", "empty") else problem
            skipped.append({"file": str(path), "line": line, "field": "question", "reason": reason})
            continue
        if qid in seen:
            skipped.append(
                {"file": str(path), "line": line, "field": "id", "reason": f"duplicate id {qid!r}"}
            )
            continue
        seen.add(qid)
        questions.append(Question(qid, text.strip()))
    if not questions:
        raise DataFormatError(
            path, "no usable question (each record needs a non-empty 'question')", field="question"
        )
    return questions, skipped


class DecisionRecorder:
    """Collects a batch's Labeler and Filter decisions per question (the loop's ``observer``)."""

    def __init__(self, size: int) -> None:
        self.labeler: list[list[dict[str, Any]]] = [[] for _ in range(size)]
        self.filter: list[list[dict[str, Any]]] = [[] for _ in range(size)]

    def labeled(self, question: int, query_words: list[str], chunk_words: list[str], pred: Any) -> None:
        self.labeler[question].append(
            {
                "query": list(query_words),
                "chunk": list(chunk_words),
                "p": round(float(pred.continue_prob), 4),
                "words": [round(float(x), 3) for x in pred.word_probs],
            }
        )

    def filtered(self, question: int, words: list[str], pred: Any) -> None:
        self.filter[question].append(
            {"words": list(words), "probs": [round(float(x), 3) for x in pred.word_probs]}
        )


def record_decisions(
    rag: Any,
    questions: Sequence[Question],
    out_path: str | Path,
    *,
    batch_size: int = 16,
    progress: bool = True,
    wait_for_lock: bool = False,
) -> int:
    """Run the loop over every question not yet in ``out_path``; returns how many were run.

    Batched like evaluation (one model call per hop for the whole batch); the loop's observer
    attributes each decision to its question, and a batch is appended when it is done, so a
    killed run loses at most one batch. One process appends at a time (the folder's lock:
    :mod:`efficientrag.run_lock`; another is refused naming it, or waits with ``wait_for_lock``),
    and a file that already holds a question twice keeps the first on resume."""
    hint = "wait for it to finish, or pass wait_for_lock=True to run after it"
    with folder_lock(Path(out_path).parent, wait=wait_for_lock, what="self-training folder", hint=hint):
        drop_duplicate_ids(out_path)
        return _record(rag, questions, out_path, batch_size=batch_size, progress=progress)


def _record(
    rag: Any, questions: Sequence[Question], out_path: str | Path, *, batch_size: int, progress: bool
) -> int:
    from efficientrag.pipeline.efficientrag import EfficientRAG

    done = read_done_ids(out_path) if Path(out_path).is_file() else set()
    todo = [q for q in questions if q.id not in done]
    loop = EfficientRAG(rag.retriever, rag.labeler, rag.filter, rag.config)
    bar = tqdm(total=len(todo), desc="self-training decisions", unit="q", disable=not progress)
    with JsonlAppender(out_path) as out, bar:
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            recorder = loop.observer = DecisionRecorder(len(batch))
            loop.retrieve_batch([q.question for q in batch])
            for i, q in enumerate(batch):
                out.write(
                    {
                        "id": q.id,
                        "question": q.question,
                        "labeler": recorder.labeler[i],
                        "filter": recorder.filter[i],
                    }
                )
            bar.update(len(batch))
    return len(todo)


def rows_from_decisions(
    decisions: str | Path, cfg: SelfTrainConfig, links: LinkView | None = None
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """(labeler rows, filter rows, counts), each by split (train / validation, by question).
    ``links``: the question corpus's links, needed with ``agreement: links``."""
    if cfg.agreement == "links" and links is None:
        raise InvalidArgumentError("agreement 'links' needs the question corpus's LinkView")
    labeler: dict[str, list[dict[str, Any]]] = {TRAIN: [], VALIDATION: []}
    filt: dict[str, list[dict[str, Any]]] = {TRAIN: [], VALIDATION: []}
    counts: Counter[str] = Counter()
    for rec in read_jsonl(decisions, allow_torn_tail=True):
        qid = QUESTION_PREFIX + str(rec["id"])
        side = split_of(qid, validation_ratio=cfg.validation_ratio, seed=cfg.seed)
        counts["questions"] += 1
        pairs = rec["labeler"]
        counts["labeler_pairs"] += len(pairs)
        confident = [p["p"] >= cfg.continue_threshold for p in pairs]
        spans: dict[int, list[tuple[int, int]]] = {}
        contradicted: list[dict[str, Any]] = []
        if links is not None and cfg.agreement == "links":
            verdict = links.judge(rec["question"], [p["chunk"] for p in pairs], confident)
            confident = [i in verdict.backed for i in range(len(pairs))]
            spans = verdict.bridge_spans
            contradicted = [pairs[i] for i in sorted(verdict.contradicted)]
            counts["contradicted_rows"] += len(contradicted)
        cont_at = [i for i, ok in enumerate(confident) if ok]
        cont = [pairs[i] for i in cont_at]
        term = sorted((p for p in pairs if p["p"] <= cfg.terminate_threshold), key=lambda p: p["p"])
        term = contradicted + term[: cfg.terminate_per_continue * max(1, len(cont))]
        meta = {"dataset": SELF_DATASET, "type": "", "idx": 0, "hop": 0, "rank": 0}
        for j, (i, pair) in enumerate(zip(cont_at, cont, strict=True)):
            labels = [1 if x >= cfg.token_threshold else 0 for x in pair["words"]]
            for start, end in spans.get(i, ()):
                labels[start:end] = [1] * (end - start)
            row = LabelerRow(
                f"{qid}#{j}/pos", qid, pair["query"], pair["chunk"], labels, TAG_CONTINUE, meta=meta
            )
            labeler[side].append(row.to_dict())
        for j, pair in enumerate(term):
            zeros = [0] * len(pair["chunk"])
            row = LabelerRow(
                f"{qid}#{j}/neg", qid, pair["query"], pair["chunk"], zeros, TAG_TERMINATE, meta=meta
            )
            labeler[side].append(row.to_dict())
        counts["continue_rows"] += len(cont)
        counts["terminate_rows"] += len(term)
        for j, call in enumerate(rec["filter"]):
            probs = call["probs"]
            counts["filter_calls"] += 1
            if not probs or min(abs(2 * x - 1) for x in probs) < cfg.filter_confidence:
                continue
            labels = [1 if x >= 0.5 else 0 for x in probs]
            filt[side].append(FilterRow(f"{qid}#f{j}", qid, call["words"], labels, meta).to_dict())
            counts["filter_rows"] += 1
    return labeler, filt, dict(counts)
