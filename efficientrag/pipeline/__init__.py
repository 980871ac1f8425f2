"""The EfficientRAG retrieval loop (``efficientrag.py``; the checks of what it is given in
``inputs.py``, its per-run bookkeeping in ``hop_state.py``), its settings (``config.py``), its typed
per-hop trace (``trace.py``), trace printing (``trace_format.py``), the prediction cache
(``prediction_cache.py``) and the RAG-framework adapters: LangChain (``langchain.py``), LlamaIndex
(``llamaindex.py``), Haystack (``haystack.py``) and DSPy (``dspy.py``), optional extras sharing
``adapters.py``. Its use as an evaluation method is ``baselines/efficientrag.py``."""
