"""``shardmodel boundaries FILE``: text, CSV and TSV samples, the report, bad input."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pytest

from shardmodel import OrderedShards
from shardmodel import ordered_sample as sample
from shardmodel.cli import main
from shardmodel.testing.titles import generate_titles


def _boundaries(output: str) -> list[str]:
    text = output[: output.index("]") + 1].removeprefix("boundaries = ")
    value = ast.literal_eval(text)
    assert isinstance(value, list)
    return value


def test_a_text_file_gives_the_boundaries_of_from_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    titles = list(generate_titles(3000, seed=2))
    path = tmp_path / "titles.txt"
    path.write_text("\n".join(titles) + "\n", encoding="utf-8")
    assert main(["boundaries", str(path), "--shards", "7", "--prefix", "12"]) == 0
    output = capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = OrderedShards.from_sample(titles, shards=7, prefix=12).boundaries
    assert tuple(_boundaries(output)) == expected
    assert "7 shards over 3,000 values" in output
    assert "the largest holds" in output


def test_a_csv_column_by_header_and_a_tsv_column_by_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [(str(n), f"Album, {n:03d}") for n in range(100)]
    csv_path = tmp_path / "albums.csv"
    csv_path.write_text("id,title\n" + "".join(f'{i},"{t}"\n' for i, t in rows), encoding="utf-8")
    main(["boundaries", str(csv_path), "--shards", "4", "--column", "title"])
    from_csv = _boundaries(capsys.readouterr().out)
    tsv_path = tmp_path / "albums.data"
    tsv_path.write_text("".join(f"{i}\t{t}\n" for i, t in rows), encoding="utf-8")
    tab = ["--column", "1", "--delimiter", "TAB", "--no-header"]
    main(["boundaries", str(tsv_path), "--shards", "4", *tab])
    from_tsv = _boundaries(capsys.readouterr().out)
    assert from_csv == from_tsv == ["", "album, 025", "album, 050", "album, 075"]


def test_a_csv_header_is_never_a_value_and_a_column_reads_the_same_by_index_or_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The header row ``id,title`` is skipped whether the column is named or numbered."""
    path = tmp_path / "albums.csv"
    path.write_text("id,title\n" + "".join(f"{n},t{n:03d}\n" for n in range(40)), "utf-8")
    outputs = []
    for column in ("title", "1"):
        assert main(["boundaries", str(path), "--shards", "2", "--column", column]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "2 shards over 40 values" in outputs[0]
    assert main(["boundaries", str(path), "--shards", "2", "--no-header", "--column", "1"]) == 0
    assert "2 shards over 41 values" in capsys.readouterr().out
    assert main(["boundaries", str(path), "--shards", "2", "--no-header", "--column", "x"]) == 2
    assert "the file has no header; give a 0-based index" in capsys.readouterr().err


def test_values_that_fill_a_shard_are_reported_for_overflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = ["Greatest Hits"] * 300 + [f"title {n:03d}" for n in range(300)]
    path = tmp_path / "titles.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    main(["boundaries", str(path), "--shards", "6"])
    output = capsys.readouterr().out
    assert "overflow = {'greatest hits': 3}" in output  # 300 values, 100 a shard
    assert "boundaries repeated and were dropped" in output


def test_progress_goes_to_stderr_every_n_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sample, "PROGRESS_ROWS", 100)
    monkeypatch.setattr(sample, "CHUNK_ROWS", 50)
    path = tmp_path / "titles.txt"
    path.write_text("\n".join(f"t{n}" for n in range(450)), encoding="utf-8")
    main(["boundaries", str(path), "--shards", "2"])
    err = capsys.readouterr().err
    assert [line.split(": ")[1].split(" rows")[0] for line in err.splitlines()] == [
        "100",
        "200",
        "300",
        "400",
    ]


def test_bad_input_exits_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "albums.csv"
    path.write_text("id,name\n1,x\n", encoding="utf-8")
    assert main(["boundaries", str(path), "--shards", "2", "--column", "title"]) == 2
    assert re.search("no column 'title'; its header is", capsys.readouterr().err)
    assert main(["boundaries", str(tmp_path / "missing.txt"), "--shards", "2"]) == 1
    assert re.search("cannot read", capsys.readouterr().err)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    assert main(["boundaries", str(empty), "--shards", "2"]) == 1
    assert re.search("holds no values", capsys.readouterr().err)
    assert main(["boundaries", str(empty), "--shards", "0"]) == 2
    assert re.search("--shards: 0 is outside 1..1,000", capsys.readouterr().err)
    assert main(["boundaries", str(empty), "--shards", "100000"]) == 2
    assert re.search("the most shards OrderedShards takes", capsys.readouterr().err)


def test_polars_reads_and_sorts_a_column_to_the_same_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Non-ASCII values go through the same normalization; empty values are skipped."""
    pytest.importorskip("polars")
    titles = [f"Album {n:03d}" for n in range(300)] + ["Émile", "ÉCOLE", "", "㎁ works"] * 20
    path = tmp_path / "albums.tsv"
    path.write_text("id\ttitle\n" + "".join(f"{n}\t{t}\n" for n, t in enumerate(titles)), "utf-8")
    outputs = []
    for engine in ("python", "polars"):
        args = ["boundaries", str(path), "--shards", "7", "--column", "title", "--engine", engine]
        assert main(args) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "7 shards over 360 values" in outputs[0]
    assert main(["boundaries", str(path), "--shards", "7", "--column", "2"]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_from_sample_and_the_report_take_a_polars_series() -> None:
    polars = pytest.importorskip("polars")
    titles = [f"Title {n:04d}" for n in range(1000)]
    series = polars.Series([*titles, None])
    expected = OrderedShards.from_sample(titles, shards=5).boundaries
    assert OrderedShards.from_sample(series, shards=5).boundaries == expected
    assert sample.boundary_report(series, 5).boundaries == expected
