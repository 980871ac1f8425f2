"""Train the Labeler: `accelerate launch train/labeler.py --config configs/labeler/<preset>.yaml [key=value ...] [--resume]`."""

from efficientrag.cli.train import main

if __name__ == "__main__":
    raise SystemExit(main("labeler"))
