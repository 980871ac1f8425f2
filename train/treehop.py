"""Train TreeHop: `accelerate launch train/treehop.py --config configs/treehop/<preset>.yaml [key=value ...] [--resume]`."""

from efficientrag.cli.train_treehop import main

if __name__ == "__main__":
    raise SystemExit(main())
