"""Shared fixtures: running the ``sdp`` command as a subprocess, dataset paths."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATASETS = SHARED / "datasets"


def sdp(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``sdp ARGS`` (as ``python -m parties.cli``) and capture its output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "parties.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=full_env,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"sdp {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    if not DATASETS.exists():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    return DATASETS
