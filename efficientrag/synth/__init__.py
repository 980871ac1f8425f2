"""Training-data synthesis for the Labeler and the Filter (see ``docs/synthesis.md``).

``run_synthesis(SynthConfig)`` runs decompose -> label -> align -> next_hop -> negatives -> build,
each stage resumable through ``run_stage``. Imports are lazy so that importing a submodule (e.g.
``efficientrag.synth.align``) does not load the data readers or the retrievers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.lazy import by_module, lazy_exports

if TYPE_CHECKING:
    from efficientrag.synth.align import align_words
    from efficientrag.synth.config import AnnotationsConfig, LLMTeacherConfig, SynthConfig
    from efficientrag.synth.pipeline import run_synthesis
    from efficientrag.synth.records import Reject
    from efficientrag.synth.stage import StageOptions, run_stage, run_stage_async

_LAZY = by_module(
    __name__,
    {
        "pipeline": ("run_synthesis",),
        "config": ("SynthConfig", "AnnotationsConfig", "LLMTeacherConfig"),
        "stage": ("StageOptions", "run_stage", "run_stage_async"),
        "records": ("Reject",),
        "align": ("align_words",),
    },
)

__all__ = [
    "AnnotationsConfig",
    "LLMTeacherConfig",
    "Reject",
    "StageOptions",
    "SynthConfig",
    "align_words",
    "run_stage",
    "run_stage_async",
    "run_synthesis",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
