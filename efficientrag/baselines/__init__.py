"""Every evaluation method on one framework: the EfficientRAG paper's baselines, EfficientRAG
itself, and the active RAG methods (FLARE, DRAGIN and DRAGIN's baselines).

``base.py`` holds the one base class, ``registry.py`` the one name -> class dict, ``config.py`` the
``baselines:`` config section made from it, ``prompts/`` every method's prompts and exemplars, and
each method is one module (``direct.py``, ``flare.py`` ...). ``active/`` holds what the active
methods share, with their generate-retrieve-continue driver (``active/loop.py``).
"""
