"""A wheel (not only the editable install) carries what the package reads at run time: the YAML
presets the quickstart's defaults come from and the synthesis prompt files."""

from __future__ import annotations

import subprocess
import sys
import zipfile


def test_the_wheel_carries_the_presets_and_prompt_files(repo_root, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path),
         str(repo_root)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    [wheel] = tmp_path.glob("efficientrag-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    presets = {p.relative_to(repo_root).as_posix() for p in (repo_root / "configs").rglob("*.yaml")}
    assert presets and {f"efficientrag/{p}" for p in presets} <= names
    assert "efficientrag/configs/quickstart/toy.yaml" in names
    assert any(n.startswith("efficientrag/synth/prompts/") and n.endswith(".yaml") for n in names)
