"""Content carve-outs of SPEC 2.4: typo fix, comment-only, additions-only (both ways)."""

from __future__ import annotations

import pytest

from capdaemon.classify.carveouts import (
    additions_only,
    osa_distance,
    typo_fix,
)
from capdaemon.classify.commentonly import comment_only_files
from capdaemon.classify.hunks import parse_patch
from capdaemon.languages import wants_whole_files

from .classify_builders import make_patch


def hunks(old: list[str], new: list[str]):  # type: ignore[no-untyped-def]
    """Parsed hunks of old → new."""
    return parse_patch(make_patch(old, new))


TYPO = [
    pytest.param(
        ["The classifer decides."], ["The classifier decides."], True, id="missing-letter"
    ),
    pytest.param(["teh rule"], ["the rule"], True, id="transposition"),
    pytest.param(["# Heding"], ["# Heading"], True, id="typo-inside-heading-text"),
    pytest.param(["- an itme"], ["- an item"], True, id="typo-inside-list-item"),
    pytest.param(["| a | recieve |"], ["| a | receive |"], True, id="typo-inside-table-cell"),
    # no Korean word list: a Korean spelling change cannot be proven a typo fix
    pytest.param(["규칙을 따르세요"], ["규칙을 따르셰요"], False, id="korean-no-dictionary"),
    pytest.param(["Same.", "Recieve it."], ["Same.", "Receive it."], True, id="with-context"),
    pytest.param(["must be classified"], ["must not be classified"], False, id="adds-not"),
    pytest.param(["you must do it"], ["you may do it"], False, id="modal-changed"),
    pytest.param(["you shuold do it"], ["you should do it"], False, id="modal-appears"),
    pytest.param(["it isnt so"], ["it isn't so"], False, id="apostrophe-added"),
    pytest.param(["wait 3 days"], ["wait 5 days"], False, id="digit-changed"),
    pytest.param(["# Title"], ["## Title"], False, id="heading-level"),
    pytest.param(["- item"], ["* item"], False, id="list-marker"),
    pytest.param(["| a | b |"], ["| a b |"], False, id="table-structure"),
    pytest.param(["text"], ["- text"], False, id="becomes-list-item"),
    pytest.param(["one line"], ["one line", "and another"], False, id="line-added"),
    pytest.param(["one", "two"], ["one"], False, id="line-removed"),
    pytest.param(["use max value"], ["use min value"], False, id="word-replaced"),
    pytest.param(["enable it"], ["disable it"], False, id="antonym"),
    pytest.param(["this alot"], ["this a lot"], False, id="word-split"),
    pytest.param(["허용합니다"], ["허용하지 않습니다"], False, id="korean-negation"),
    pytest.param(["반드시 실행"], ["가급적 실행"], False, id="korean-modal-removed"),
    pytest.param(["파일만 수정"], ["파일을 수정"], False, id="korean-only-removed"),
    pytest.param(
        ["teh classifer would recieve it"],
        ["the classifier would receive it"],
        True,
        id="three-edits-on-a-line",
    ),
    pytest.param(
        ["teh classifer would recieve the documnet"],
        ["the classifier would receive the document"],
        False,
        id="four-edits-on-a-line",
    ),
    pytest.param(["abcdefgh"], ["abcdefgx"], False, id="nonsense-to-nonsense"),
    pytest.param(["an irreversible step"], ["an reversible step"], False, id="drops-ir"),
    pytest.param(["access is unauthorized"], ["access is authorized"], False, id="drops-un"),
    pytest.param(["data is encrypted"], ["data is decrypted"], False, id="en-to-de"),
    pytest.param(["increase the limit"], ["decrease the limit"], False, id="in-to-de"),
]


@pytest.mark.parametrize(("old", "new", "ok"), TYPO)
def test_typo_fix(old: list[str], new: list[str], ok: bool) -> None:
    """Only spelling corrections qualify; meaning, numbers and structure must not move."""
    assert bool(typo_fix(hunks(old, new))) is ok


def test_typo_fix_bounded_per_file() -> None:
    """More than 10 character edits in one file is not a typo fix, even if each line is small."""
    old = [f"line{i} recieve" for i in range(11)]
    new = [f"line{i} receive" for i in range(11)]
    wide = [f"{o}\nctx{i}" for i, o in enumerate(old)]
    assert not typo_fix(
        hunks(
            "\n".join(wide).split("\n"),
            "\n".join(f"{n}\nctx{i}" for i, n in enumerate(new)).split("\n"),
        )
    )
    assert typo_fix(hunks(old[:5], new[:5]))


@pytest.mark.parametrize(
    ("patch", "why"),
    [
        pytest.param(None, "patch unavailable", id="unavailable"),
        pytest.param((), "no textual change", id="no-hunks"),
    ],
)
def test_typo_fix_needs_a_patch(patch: object, why: str) -> None:
    """No patch, or no hunks, proves nothing."""
    result = typo_fix(patch)  # type: ignore[arg-type]
    assert not result
    assert why in result.why


def test_osa_distance() -> None:
    """Adjacent swaps count as one edit; the limit cuts the work short."""
    assert osa_distance("teh", "the") == 1
    assert osa_distance("classifer", "classifier") == 1
    assert osa_distance("kitten", "sitting") == 3
    assert osa_distance("a" * 50, "b" * 50, limit=2) == 3


COMMENT = [
    pytest.param(
        "app/main.py", ["# entry", "main()"], ["# entry point", "main()"], True, id="py-hash"
    ),
    pytest.param(
        "app/main.py", ["x = 1"], ["x = 1", "", "# note"], True, id="py-add-comment-blank"
    ),
    pytest.param("app/main.py", ["x = 1  # a"], ["x = 2  # a"], False, id="py-code"),
    pytest.param("app/main.py", ["x = 1  # a"], ["x = 1  # b"], True, id="py-trailing-comment"),
    pytest.param("app/main.py", ['"""Doc."""'], ['"""Docs."""'], False, id="py-docstring-is-code"),
    pytest.param(
        "app/main.py",
        ['s = """', "# not a comment", '"""'],
        ['s = """', "# changed", '"""'],
        False,
        id="py-hash-inside-string",
    ),
    pytest.param("bin/run", ["#!/bin/sh"], ["#!/bin/bash"], False, id="unknown-extension"),
    pytest.param("bin/run.sh", ["#!/bin/sh", "x"], ["#!/bin/bash", "x"], False, id="shebang"),
    pytest.param(
        "app/m.py",
        ["# -*- coding: utf-8 -*-"],
        ["# -*- coding: latin-1 -*-"],
        False,
        id="py-coding-magic",
    ),
    pytest.param("web/a.js", ["// old", "f()"], ["// new", "f()"], True, id="js-slashes"),
    pytest.param("web/a.ts", ["f()"], ["/**", " * Docs.", " */", "f()"], True, id="ts-block"),
    pytest.param(
        "web/a.ts", ["/* a */"], ["/* a */ f(); /* b */"], False, id="code-between-blocks"
    ),
    pytest.param("cmd/m.go", ["//go:build linux"], ["//go:build darwin"], False, id="go-build-tag"),
    pytest.param("c/x.c", ["int a;"], ["int a; // why"], True, id="c-trailing"),
    pytest.param(
        "db/q.sql", ["-- old", "SELECT 1;"], ["-- new", "SELECT 1;"], False, id="sql-no-tokenizer"
    ),
    pytest.param("x.lua", ["-- a"], ["-- b"], False, id="lua-no-tokenizer"),
    pytest.param("page.html", ["<!-- a -->"], ["<!-- b -->"], True, id="html-comment"),
    pytest.param("doc.md", ["Text."], ["Text!"], False, id="md-text-is-content"),
    pytest.param(
        "doc.md", ["<!-- a --> text"], ["<!-- b --> text"], False, id="md-comment-plus-text"
    ),
    pytest.param("set.ini", ["; a", "k=v"], ["; b", "k=v"], False, id="ini-no-tokenizer"),
    pytest.param("Makefile", ["# a", "all:"], ["# b", "all:"], False, id="makefile-no-tokenizer"),
    pytest.param(
        "Dockerfile",
        ["# syntax=docker/dockerfile:1"],
        ["# syntax=evil/x:1"],
        False,
        id="dockerfile-parser-directive",
    ),
    pytest.param(
        "conf/a.yml", ["run: |", "  # a"], ["run: |", "  # b"], False, id="yaml-block-scalar"
    ),
    pytest.param("conf/a.yml", ["# a", "k: v"], ["# b", "k: v"], False, id="yaml-no-tokenizer"),
]


def _text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


@pytest.mark.parametrize(("path", "old", "new", "ok"), COMMENT)
def test_comment_only(path: str, old: list[str], new: list[str], ok: bool) -> None:
    """Only comment edits in a language with an exact tokenizer qualify; docstrings are code."""
    assert bool(comment_only_files(path, _text(old), _text(new))) is ok


def test_comment_only_needs_the_whole_files() -> None:
    """Base or head content unavailable → the carve-out does not apply, and says why."""
    carve = comment_only_files("app/main.py", None, "# a\n")
    assert not carve and "whole file unavailable" in carve.why


@pytest.mark.parametrize(
    ("path", "old", "new", "wanted"),
    [
        ("app/main.py", ["# a", "x = 1"], ["# b", "x = 1"], True),
        ("app/main.py", ["x = 1"], ["x = 2"], False),
        ("conf/a.yml", ["# a"], ["# b"], False),  # no exact tokenizer: never read whole
        ("site/a.html", ["<p>a</p>"], ["<p>b</p>"], True),  # only the parser can tell
        # a typo fix in doctrine prose with blocks is judged on the whole file
        ("docs/concepts/a.md", ["teh"], ["the"], True),
        ("docs/concepts/a.rst", ["teh"], ["the"], True),
        ("docs/concepts/a.txt", ["teh"], ["the"], False),  # no blocks: the patch is enough
        ("docs/concepts/a.sql", ["DELET"], ["DELETE"], False),  # not prose: no carve-out
        ("docs/guide/a.md", ["teh"], ["the"], False),  # no typo carve-out there
    ],
)
def test_whole_files_are_read_only_for_candidates(
    path: str, old: list[str], new: list[str], wanted: bool
) -> None:
    """Whole files are fetched only where the comment-only or the typo carve-out can apply."""
    assert wants_whole_files(path, make_patch(old, new)) is wanted


ADDITIONS = [
    pytest.param(
        ["def test_a(): pass"], ["def test_a(): pass", "def test_b(): pass"], True, id="adds-a-test"
    ),
    pytest.param(["assert 1 == 1"], ["assert 1 == 1 or True"], False, id="changes-a-line"),
    pytest.param(["a", "b"], ["a"], False, id="removes-a-line"),
]


@pytest.mark.parametrize(("old", "new", "ok"), ADDITIONS)
def test_additions_only(old: list[str], new: list[str], ok: bool) -> None:
    """Any removed or changed line disqualifies."""
    assert bool(additions_only(hunks(old, new))) is ok


def test_additions_only_needs_a_patch() -> None:
    """Patch unavailable → the carve-out does not apply."""
    assert not additions_only(None)
