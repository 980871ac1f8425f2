"""The one method framework: one registry of classes, one ``baselines:`` section made from it, one
validator style, old keys refused naming their new place, and fingerprints that follow the layout."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from efficientrag.baselines.base import Method, Prediction, SharedSettings
from efficientrag.baselines.config import baselines_config
from efficientrag.baselines.direct_r import DirectRetrieval
from efficientrag.baselines.flare import FlareConfig
from efficientrag.baselines.iter_retgen import IterRetGenConfig
from efficientrag.baselines.registry import METHODS, check_method_name, registered_name
from efficientrag.baselines.settings import Settings
from efficientrag.config import load_config
from efficientrag.config_values import from_dict
from efficientrag.data.schema import Example
from efficientrag.errors import ConfigError
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.run_binding import method_settings
from efficientrag.setting_fields import bounded
from efficientrag.testing.word_overlap import WordOverlapRetriever


def test_every_registered_class_carries_its_name_and_a_section_of_the_config():
    cfg = ExperimentConfig()
    assert len(METHODS) == 17
    for name, cls in METHODS.items():
        assert issubclass(cls, Method) and cls.name == name
        section = cls.settings(cfg)
        assert isinstance(section, cls.config_class), name
        # The dotted key fingerprints name the section by leads to the same object.
        node = cfg
        for part in cls.section_key().split("."):
            node = getattr(node, part)
        assert node is section, name
    assert METHODS["efficientrag"].settings(cfg) is cfg.efficientrag
    assert METHODS["flare"].settings(cfg) is cfg.baselines.flare
    assert METHODS["flare_instruct"].settings(cfg) is cfg.baselines.flare_instruct
    assert METHODS["treehop"].settings(cfg) is cfg.treehop
    assert check_method_name("Flare-Instruct") == "flare_instruct"
    with pytest.raises(ValueError, match="unknown method 'flair'; known methods: cot, decompose_r"):
        check_method_name("flair")


def test_one_validator_style_ranges_and_choices():
    # A range declared by the base survives a subclass that only changes the default.
    with pytest.raises(ValueError, match="top_k must be >= 1, got 0"):
        FlareConfig(top_k=0)
    with pytest.raises(ValueError, match=r"beta must lie in \[0, 1\], got -0.1"):
        FlareConfig(beta=-0.1)
    with pytest.raises(ValueError, match=r"query_source must be one of \['thought', 'generation'\], got 'x'"):
        IterRetGenConfig(query_source="x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r": baselines.iter_retgen.iterations must be >= 1, got 0$"):
        load_config(ExperimentConfig, overrides=["baselines.iter_retgen.iterations=0"])
    assert IterRetGenConfig(iterations=1).iterations == 1


@dataclass
class EchoConfig(Settings):
    repeat: int = bounded(1, low=1)


class Echo(Method):
    """The docs' example method: answers with the question's first word, ``repeat`` times."""

    name = "echo"
    config_class = EchoConfig
    cfg: EchoConfig

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        return [
            Prediction(ex.id, chunks=[], answer=" ".join([ex.question.split()[0]] * self.cfg.repeat))
            for ex in examples
        ]


def test_a_registered_method_gets_its_section_from_the_registry_line():
    config_class = baselines_config({**METHODS, "echo": Echo})
    baselines = from_dict(config_class, {"echo": {"repeat": 2}, "flare": {"theta": 0.5}}, prefix="baselines.")
    assert baselines.echo.repeat == 2 and baselines.flare.theta == 0.5
    with pytest.raises(ConfigError, match="repeat must be >= 1"):
        from_dict(config_class, {"echo": {"repeat": 0}}, prefix="baselines.")
    method = Echo(None, None, baselines.echo)
    (pred,) = method.run_batch([Example("q", "Where is it?", ["x"], [])])
    assert pred.answer == "Where Where"


def test_direct_r_retrieves_to_the_largest_cutoff_and_names_its_answering_run():
    from efficientrag.data.schema import Chunk

    corpus = [Chunk(str(i), f"T{i}", f"alpha word{i}") for i in range(30)]
    retriever = WordOverlapRetriever(corpus)
    example = Example("q", "alpha", ["x"], [])
    plain = DirectRetrieval(retriever, None, shared=SharedSettings(ks=(2, 5)))
    assert plain.name == "direct_r" and len(plain.run_batch([example])[0].chunks) == 5
    answering = DirectRetrieval(retriever, None, shared=SharedSettings(ks=(2, 5), answer=True))
    assert answering.name == "direct_r_qa" and answering.depth == 10  # and at least its top_k
    with pytest.raises(RuntimeError, match="direct_r_qa was built without a generator"):
        answering.run_batch([example])
    # A top-k where the generator goes (how a benchmark once cut Direct-R's curve at 10 chunks).
    with pytest.raises(TypeError, match="DirectRetrieval: the generator must be a Generator.*got 30"):
        DirectRetrieval(retriever, 30)


def test_the_fingerprint_settings_follow_the_layout():
    cfg = load_config(ExperimentConfig, overrides=["eval.answer=true"])
    assert registered_name("EfficientRAG_qa") == "efficientrag" and registered_name("direct_r") == "direct_r"
    flare = method_settings(cfg, "flare")
    assert set(flare) == {"baselines.flare", "baselines.prompts", "baselines.temperature", "generator"}
    # An answering run is bound to its own section (EfficientRAG's loop settings included), not to
    # every other method's.
    answering = method_settings(cfg, "efficientrag_qa")
    assert (
        answering["efficientrag"]["top_k"] == 10 and answering["efficientrag"]["answer_max_new_tokens"] == 128
    )
    assert "labeler" not in answering["efficientrag"] and "baselines" not in answering
    assert set(method_settings(cfg, "direct_r_qa")) == {
        "baselines.direct_r",
        "baselines.prompts",
        "baselines.temperature",
        "generator",
    }
    retrieval_only = load_config(ExperimentConfig)
    assert set(method_settings(retrieval_only, "direct_r")) == {"baselines.direct_r"}
    assert set(method_settings(retrieval_only, "my_own_method")) >= {"baselines", "generator"}


def test_loading_a_config_imports_neither_torch_nor_spacy():
    # Every method module is imported with the config (the registry makes its sections), so none
    # of them may pull in the heavy libraries at import time.
    code = "import sys, efficientrag.experiment.config; print(sorted({'torch', 'spacy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
