"""The experiment: what a run is made of, below the evaluation that runs it.

``config.py`` holds :class:`ExperimentConfig` (data, search, loop and baselines in one file),
``prepared_data.py`` the data read once and cached, ``assembly.py`` how a method is built from the
config, ``run_binding.py`` the fingerprint that ties a run folder to its inputs, ``pools.py`` one
training file pooled and indexed as an experiment's data is, and ``train_treehop.py`` /
``train_reranker.py`` the training jobs that run on those pools. Evaluation, the jobs (quickstart,
adapt, serve) and the benchmarks all build on this package; it builds on ``baselines/`` and below.
"""
