"""Run the code of one docs page (reStructuredText) or of the README (Markdown) as a
reader would, with nothing but the standard library and what the page says to install.

Used by ``tests/integration/test_fresh_install.py`` inside a fresh virtual environment:
``python page_runner.py PAGE``. A ``.rst`` page's ``testsetup``, ``testcode`` (with the
``testoutput`` after it), ``doctest`` and ``testcleanup`` blocks run in order in one
namespace, as Sphinx's doctest builder runs them (ELLIPSIS, exception details ignored);
a Markdown page's ``python`` blocks run in order. Prints what it ran; exits 1 on the
first block that fails, naming its line.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import sys
import textwrap
from pathlib import Path

DIRECTIVE = re.compile(r"^(\s*)\.\. (testsetup|testcode|testoutput|doctest|testcleanup)::")
FLAGS = doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL


def rst_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line, kind, code) of every test block of a page, in order."""
    lines = text.splitlines()
    blocks = []
    number = 0
    while number < len(lines):
        match = DIRECTIVE.match(lines[number])
        number += 1
        if match is None:
            continue
        indent, kind = len(match.group(1)), match.group(2)
        while number < len(lines) and re.match(r"^\s+:\w", lines[number]):  # options
            number += 1
        start, body = number, []
        while number < len(lines) and (
            not lines[number].strip() or len(lines[number]) - len(lines[number].lstrip()) > indent
        ):
            body.append(lines[number])
            number += 1
        blocks.append((start + 1, kind, textwrap.dedent("\n".join(body)).strip("\n") + "\n"))
    return blocks


def markdown_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line, "testcode", code) of every ```python block of a Markdown page."""
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S):
        blocks.append((text[: match.start()].count("\n") + 2, "testcode", match.group(1)))
    return blocks


def run(page: Path) -> int:
    text = page.read_text(encoding="utf-8")
    blocks = rst_blocks(text) if page.suffix == ".rst" else markdown_blocks(text)
    namespace: dict[str, object] = {"__name__": "__page__"}
    checker = doctest.OutputChecker()
    printed = ""
    for line, kind, code in blocks:
        where = f"{page.name}:{line} ({kind})"
        if kind == "testoutput":
            if not checker.check_output(code, printed, FLAGS):
                print(f"{where}: expected\n{code}got\n{printed}")
                return 1
            continue
        if kind == "doctest":
            test = doctest.DocTestParser().get_doctest(code, namespace, where, str(page), line)
            out = io.StringIO()
            runner = doctest.DocTestRunner(optionflags=FLAGS)
            runner.run(test, out=out.write, clear_globs=False)
            namespace.update(test.globs)  # a DocTest runs in a copy of the names given
            if runner.failures:
                print(out.getvalue())
                return 1
            print(f"{where}: {runner.tries} examples passed")
            continue
        captured = io.StringIO()
        try:
            with contextlib.redirect_stdout(captured):
                exec(compile(code, where, "exec"), namespace)
        except BaseException:
            import traceback

            traceback.print_exc()
            print(f"{where}: failed")
            return 1
        printed = captured.getvalue()
        print(f"{where}: ran" + (f", printed {printed.strip()!r}" if printed.strip() else ""))
    print(f"{page.name}: {len(blocks)} blocks passed")
    return 0


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1])))
