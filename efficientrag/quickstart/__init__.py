"""``efficientrag quickstart``: the whole method on one machine, from data to a comparison table.

``job`` runs the steps (split, synthesize, train, index, evaluate, report), each resumable under
``work_dir``; ``presets`` finds the YAML presets its defaults come from (``configs/quickstart/``).
It sits beside ``adapt/`` and ``distill/``: a job built on every layer below the command line.
"""
