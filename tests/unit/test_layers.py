"""The import contract holds, and breaks on an upward import or a cycle.

``make lint`` runs import-linter with the contracts in pyproject.toml. Here the same
check runs on the package as it is (kept), and on copies with one planted import each
(broken, naming both modules): a contract that cannot fail would prove nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(package_parent: Path) -> subprocess.CompletedProcess[str]:
    """import-linter with the project's contracts on the package found in ``package_parent``."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [str(LINT), "--no-cache", "--no-logo", "--config", str(ROOT / "pyproject.toml")],
        cwd=package_parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _planted(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package with ``line`` added to the top of ``module``'s file."""
    shutil.copytree(
        ROOT / "shardmodel", tmp_path / "shardmodel", ignore=shutil.ignore_patterns("__pycache__")
    )
    path = tmp_path / (module.replace(".", "/") + ".py")
    path.write_text(f"{line}\n{path.read_text(encoding='utf-8')}", encoding="utf-8")
    return tmp_path


def test_the_package_keeps_its_layers_and_has_no_cycles() -> None:
    """The tree as it is passes both contracts."""
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("module", "line", "named"),
    [
        (
            "shardmodel.keyspace.keys",
            "import shardmodel.engine.placement  # noqa",
            "- shardmodel.keyspace.keys -> shardmodel.engine.placement (l.1)",
        ),
        (
            "shardmodel.engine.cursor",
            "import shardmodel.engine.merge  # noqa",
            "No cycles are allowed in shardmodel.engine.",
        ),
    ],
    ids=["upward import", "cycle"],
)
def test_a_planted_upward_import_or_cycle_breaks_the_contract(
    tmp_path: Path, module: str, line: str, named: str
) -> None:
    """An import from a lower floor to a higher one, or a cycle, fails with the modules."""
    done = _lint(_planted(tmp_path, module, line))
    assert done.returncode == 1
    assert named in done.stdout
