"""Train the cross-encoder reranker: `accelerate launch train/reranker.py --config configs/reranker/<preset>.yaml [key=value ...] [--resume]`."""

from efficientrag.cli.train_reranker import main

if __name__ == "__main__":
    raise SystemExit(main())
