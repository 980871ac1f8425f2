"""Active retrieval-augmented generation: FLARE, DRAGIN and DRAGIN's baselines (wo-RAG, SR-RAG,
FL-RAG, FS-RAG) on one generate-retrieve-continue loop.

Every method here writes a chain-of-thought answer ending in "So the answer is ..." after
few-shot exemplars, and differs only in *when* it retrieves and *what* it asks for. The shared
pieces live in this package (the shared settings and base, sentence splitting, queries, RIND and
QFS, the batched driver with per-question cost accounting); the exemplars and the prompt layout are
in :mod:`efficientrag.baselines.prompts`; each method's decision rule and settings live in its own
module under :mod:`efficientrag.baselines` (``flare.py``, ``dragin.py``, ``wo_rag.py``,
``sr_rag.py``, ``fl_rag.py``, ``fs_rag.py``). ``docs/active_rag.md`` states every formula as
implemented.
"""
