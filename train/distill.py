"""Distill a shallower Labeler or Filter from a trained one, on the one training loop:
`accelerate launch train/distill.py {labeler,filter} --config configs/distill/<kind>-minilm-cpu.yaml
teacher=RUN/best data_dir=SYNTH/<kind> [key=value ...] [--resume]` (docs/training.md, "Distillation")."""

import sys

from efficientrag.cli.train import main
from efficientrag.models.inputs import KINDS

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in KINDS:
        print(
            "usage: train/distill.py {labeler,filter} --config PRESET.yaml teacher=FOLDER [--resume] [key=value ...]"
        )
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1], sys.argv[2:], distill=True))
