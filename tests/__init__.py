"""The tests, in folders that mirror efficientrag's subpackages (tests/retrieval/ for
efficientrag/retrieval/, tests/benchmarks/ for the benchmarks/ scripts); tests of top-level modules
(cli, config, quickstart ...) stay here.

Every folder is a package, so same-named modules in two folders (adapt/test_resume.py,
baselines/test_resume.py) import as ``tests.adapt.test_resume`` and ``tests.baselines.test_resume``
under pytest's default import mode, and a helper module imports by its full name
(``from tests.serve.serve_harness import Server``).
"""
