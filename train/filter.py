"""Train the Filter: `accelerate launch train/filter.py --config configs/filter/<preset>.yaml [key=value ...] [--resume]`."""

from efficientrag.cli.train import main

if __name__ == "__main__":
    raise SystemExit(main("filter"))
