"""The app's endpoint groups, one ``APIRouter`` each, included by ``serve.app.create_app``:
``retrieval`` (``POST /v1/retrieve``), ``search_r1`` (the Search-R1 ``POST /retrieve``),
``operations`` (``/healthz``, ``/readyz``, ``/metrics``) and ``page`` (``/`` and its static files).
"""
