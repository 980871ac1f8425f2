"""Train TreeHop: `accelerate launch train/treehop.py --config configs/treehop/<preset>.yaml [key=value ...] [--resume]`."""

from efficientrag.treehop.script import main

if __name__ == "__main__":
    raise SystemExit(main())
