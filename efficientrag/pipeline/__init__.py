"""The EfficientRAG retrieval loop (``efficientrag.py``; the checks of what it is given in
``inputs.py``, its per-run bookkeeping in ``hop_state.py``), its settings (``config.py``), its use as an
evaluation method (``method.py``), its typed per-hop trace (``trace.py``), trace printing
(``trace_format.py``) and the RAG-framework
adapters: LangChain (``langchain.py``) and LlamaIndex (``llamaindex.py``), optional extras sharing
``adapters.py``."""
