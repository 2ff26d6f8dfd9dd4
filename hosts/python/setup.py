"""The wheel carries the gate component as ``resume_gate/gate.wasm``: ``RESUME_GATE_WASM`` names
it, else cargo builds it in the workspace (the very ``.wasm`` host-example embeds). Only making
the wheel needs Rust; installing it does not. ``python -m build --wheel --no-isolation``."""

import os
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def component() -> Path:
    if path := os.environ.get("RESUME_GATE_WASM"):
        return Path(path)
    out = subprocess.run(
        ["cargo", "run", "-q", "--locked", "-p", "wasm-build", "--", "gate-memory"],
        cwd=HERE.parents[1],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip().splitlines()[-1])


class BuildWithComponent(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "resume_gate" / "gate.wasm"
        target.write_bytes(component().read_bytes())


setup(cmdclass={"build_py": BuildWithComponent})
