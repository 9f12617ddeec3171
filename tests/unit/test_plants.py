"""The planted bugs of tests/plants.toml still apply to the code (make plants runs them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import plants


def test_every_plant_applies_once_to_the_code_it_breaks() -> None:
    found = plants.load()
    assert len(found) >= 12
    for plant in found:
        text = (plants.ROOT / plant.file).read_text()
        assert text.count(plant.find) == 1, plant.name
        assert plant.replace != plant.find, plant.name
        for test in plant.tests:
            assert (plants.ROOT / test.split("::")[0]).exists(), (plant.name, test)


def test_a_plant_whose_code_moved_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    moved = plants.Plant("p", "what", "m.py", "x = 2", "x = 3", ("t.py",))
    with pytest.raises(ValueError, match=re.escape("p: its text occurs 0 times in m.py")):
        plants.apply(moved, tmp_path)
    plants.apply(plants.Plant("q", "what", "m.py", "x = 1", "x = 3", ("t.py",)), tmp_path)
    assert (tmp_path / "m.py").read_text() == "x = 3\n"
