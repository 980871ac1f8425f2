"""FLARE's Table 1 (Jiang et al., EMNLP 2023): 2WikiMultihopQA with text-davinci-003.

FLARE's "No retrieval" row is ``wo_rag``, "Single-time retrieval" ``sr_rag``, "Previous-window"
``fl_rag``, "Previous-sentence" ``fs_rag``, "Question decomposition" ``self_ask``. Its rows have the
empty variant (one generator). Metrics: ``em`` and ``f1`` in percent, the answer-token precision
and recall as ``qa_precision`` / ``qa_recall`` (``recall`` is retrieval recall in the report).
"""

from __future__ import annotations

from efficientrag.eval.paper_numbers.schema import PaperNumber, table

FLARE = "FLARE (Jiang et al., EMNLP 2023)"

FLARE_TABLE_1 = table(
    paper=FLARE,
    table="Table 1",
    setting="text-davinci-003, BM25 over the DPR Wikipedia dump, top-2, 8 exemplars, 500 dev questions",
    datasets=("2wikimultihopqa",),
    metrics=("em", "f1", "qa_precision", "qa_recall"),
    rows={
        ("wo_rag", ""): "28.2 36.8 36.5 38.6",
        ("sr_rag", ""): "39.4 48.8 48.6 51.5",
        ("fl_rag", ""): "43.2 52.3 51.7 54.5",
        ("fs_rag", ""): "39.0 49.2 48.9 51.8",
        ("self_ask", ""): "47.8 56.4 56.1 58.6",
        ("flare_instruct", ""): "42.4 49.8 49.1 52.5",
        ("flare", ""): "51.0 59.7 59.1 62.6",
    },
)

NUMBERS: tuple[PaperNumber, ...] = FLARE_TABLE_1
