"""The comment-only carve-out against the languages' own tools: when it says "comments only",
CPython compiles the same code, gcc emits the same assembly, node prints the same output,
javac emits the same class file and Chromium builds the same DOM. Known traps are tried as an
attacker would write them; hypothesis generates comment edits and code edits per language.
"""

from __future__ import annotations

import re
import subprocess
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capdaemon.classify.commentonly import comment_only_files

from .classify_builders import need_tool


# ----------------------------------------------------------------------------- the oracles
def _code_key(code: types.CodeType) -> tuple[object, ...]:
    """A code object without line numbers: bytecode, names, constants (nested code too)."""
    consts = tuple(
        _code_key(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts
    )
    return (code.co_code, code.co_names, code.co_varnames, consts)


def python_artifact(tmp: Path, source: str) -> object:
    """What CPython runs: the file's bytes compiled (PEP 263 applies), line numbers aside."""
    try:
        return _code_key(compile(source.encode("utf-8"), "f.py", "exec"))
    except (SyntaxError, ValueError) as exc:
        return f"error: {type(exc).__name__}"


def c_artifact(tmp: Path, source: str) -> object:
    """gcc's assembly for the file (no debug info, no file name)."""
    gcc = need_tool("gcc")
    (tmp / "f.c").write_text(source)
    run = subprocess.run(
        [gcc, "-std=gnu11", "-S", "-O0", "-g0", "-w", "-o", "-", "f.c"],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if run.returncode:
        return "error"
    return [ln for ln in run.stdout.splitlines() if not ln.lstrip().startswith((".file", ".ident"))]


def js_artifact(tmp: Path, source: str) -> object:
    """What node prints running the file as a script."""
    node = need_tool("node")
    (tmp / "f.js").write_text(source)
    run = subprocess.run([node, "f.js"], cwd=tmp, capture_output=True, text=True, timeout=60)
    return (run.returncode, run.stdout)


def java_artifact(tmp: Path, source: str) -> object:
    """javac's class file bytes (no debug info: line numbers do not count)."""
    javac = need_tool("javac")
    for old in tmp.glob("*.class"):
        old.unlink()
    (tmp / "T.java").write_text(source)
    run = subprocess.run(
        [javac, "-g:none", "-nowarn", "T.java"], cwd=tmp, capture_output=True, timeout=120
    )
    if run.returncode:
        return "error"
    return sorted((p.name, p.read_bytes()) for p in tmp.glob("*.class"))


def html_artifact(tmp: Path, source: str) -> object:
    """The DOM Chromium builds (scripts run), serialised, with its comments removed."""
    chromium = need_tool("chromium")
    (tmp / "f.html").write_text(source)
    uri = (tmp / "f.html").as_uri()
    dom = subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--dump-dom", uri],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return re.sub(r"<!--.*?-->", "", dom, flags=re.DOTALL)


ORACLES: dict[str, tuple[str, Callable[[Path, str], object]]] = {
    "python": ("m.py", python_artifact),
    "c": ("m.c", c_artifact),
    "javascript": ("m.js", js_artifact),
    "java": ("T.java", java_artifact),
    "html": ("m.html", html_artifact),
}


def agrees(tmp: Path, language: str, base: str, head: str) -> tuple[bool, str]:
    """(carve-out applied, why); asserts the language's tool agrees when it applied."""
    path, artifact = ORACLES[language]
    carve = comment_only_files(path, base, head)
    if carve:
        assert artifact(tmp, base) == artifact(tmp, head), (
            f"carve-out said comment-only but {language}'s own tool disagrees:\n"
            f"--- base\n{base}\n--- head\n{head}"
        )
    return carve.ok, carve.why


# ----------------------------------------------------------------------------- traps
TRAPS = [
    pytest.param(
        "python",
        "x = 1\n# note\nprint(x)\n",
        "# vim: set fileencoding=utf-7 :\nx = 1\n# note +AAo-x = 2\nprint(x)\n",
        id="python-coding-cookie-without-dashes",
    ),
    pytest.param(
        "python",
        "#!/usr/bin/env python3\n# note\nx = 1\n# note\nprint(x)\n",
        "#!/usr/bin/env python3\n#coding=utf-7\nx = 1\n#+AAo-x = 2\nprint(x)\n",
        id="python-coding-cookie-second-line",
    ),
    pytest.param(
        "python",
        "# coding: utf-7\nx = 1\n# note\nprint(x)\n",
        "# coding: utf-7\nx = 1\n# note +AAo-x = 2\nprint(x)\n",
        id="python-utf7-comment-under-an-unchanged-cookie",
    ),
    pytest.param(
        "c",
        "int f(void) {\n  int a = 1;\n  // keep\n  a = a + 1;\n  return a;\n}\n",
        "int f(void) {\n  int a = 1;\n  // keep \\\n  a = a + 1;\n  return a;\n}\n",
        id="c-line-continuation-in-comment",
    ),
    pytest.param(
        "c",
        "int f(void) {\n  int a = 1;\n  // keep\n  a = a + 1;\n  return a;\n}\n",
        "int f(void) {\n  int a = 1;\n  // keep \\ \n  a = a + 1;\n  return a;\n}\n",
        id="c-continuation-with-trailing-space",
    ),
    pytest.param(
        "c",
        "int f(void) {\n  int a = 1;\n  a = a + 1;\n  return a;\n}\n",
        "int f(void) {\n  int a = 1;\n  /*\n  a = a + 1;\n  */\n  return a;\n}\n",
        id="c-block-comment-around-unchanged-code",
    ),
    pytest.param(
        "c",
        "int f(void) {\n  /* note */\n  return __LINE__;\n}\n",
        "int f(void) {\n  /* note\n     more */\n  return __LINE__;\n}\n",
        id="c-comment-gains-a-line-and-moves-__LINE__",
    ),
    pytest.param(
        "java",
        "class T { static int f() { int a = 1;\n  // note\n  return a; } }\n",
        "class T { static int f() { int a = 1;\n  // note \\u000a a = 2;\n  return a; } }\n",
        id="java-unicode-escape-in-comment",
    ),
    pytest.param(
        "java",
        "class T { static int f() { int a = 1;\n  /* note */\n  return a; } }\n",
        "class T { static int f() { int a = 1;\n  /* note \\u002a/ a = 2; /* */\n  return a; } }\n",
        id="java-unicode-escape-closes-block",
    ),
    pytest.param(
        "javascript",
        "let a = 1;\na += 1;\nconsole.log(a);\n",
        "let a = 1;\n/*\na += 1;\n*/\nconsole.log(a);\n",
        id="js-block-around-unchanged-call",
    ),
    pytest.param(
        "javascript",
        "let a = 1;\n// note\na += 1;\nconsole.log(a);\n",
        "let a = 1;\n// note\n--> a += 1;\nconsole.log(a);\n",
        id="js-html-close-comment-line",
    ),
    pytest.param(
        "javascript",
        "function f(x) { return /* note */ x; }\nconsole.log(f(1));\n",
        "function f(x) { return /* note\n */ x; }\nconsole.log(f(1));\n",
        id="js-line-break-in-a-comment-after-return",
    ),
    pytest.param(
        "javascript",
        "function f(x) { return x /* note\n */ }\nconsole.log(f(1));\n",
        "function f(x) { return /* moved\n */ x }\nconsole.log(f(1));\n",
        id="js-multi-line-comment-moved-after-return",
    ),
    pytest.param(
        "javascript",
        "let a = 1, b = 2;\nlet c = a /* n */ --> b;\nconsole.log(c, a);\n",
        "let a = 1, b = 2;\nlet c = a /* n\n */ --> b;\nconsole.log(c, a);\n",
        id="js-line-break-in-a-comment-makes-html-close",
    ),
    pytest.param(
        "html",
        "<!doctype html><title>t</title><p>a</p>\n<!-- note -->\n",
        "<!doctype html><title>t</title><p>a</p>\n"
        "<!-- note --!><script>document.title='evil'</script> -->\n",
        id="html-bang-closer",
    ),
    pytest.param(
        "html",
        "<!doctype html><title>t</title><p>a</p>\n<!-- note -->\n",
        "<!doctype html><title>t</title><p>a</p>\n<!--><script>document.title='x'</script>-->\n",
        id="html-abrupt-closer",
    ),
    pytest.param(
        "html",
        "<!doctype html><title>t</title><noscript><!-- 1 --></noscript>\n"
        "<script>document.title = eval(document.querySelector('noscript').textContent"
        ".slice(4, -3))</script>\n",
        "<!doctype html><title>t</title><noscript><!-- 2 --></noscript>\n"
        "<script>document.title = eval(document.querySelector('noscript').textContent"
        ".slice(4, -3))</script>\n",
        id="html-noscript-comment-that-a-script-runs",
    ),
    pytest.param(
        "python",
        "x = 1\n# note\nprint(x)\n",
        "x = 1\n# note\rx = 2\nprint(x)\n",
        id="python-carriage-return-ends-a-comment",
    ),
    pytest.param(
        "c",
        "int f(void) { int z = 1;\n// note\nreturn z; }\n",
        "int f(void) { int z = 1;\n// note\rz = 2;\nreturn z; }\n",
        id="c-carriage-return-ends-a-comment",
    ),
    pytest.param(
        "javascript",
        "let z = 1\n// note\nconsole.log(z)\n",
        "let z = 1\n// note\rz = 2\nconsole.log(z)\n",
        id="js-carriage-return-ends-a-comment",
    ),
    pytest.param(
        "java",
        "class T { static int f() { int z = 1;\n// note\nreturn z; } }\n",
        "class T { static int f() { int z = 1;\n// note\rz = 2;\nreturn z; } }\n",
        id="java-carriage-return-ends-a-comment",
    ),
]


@pytest.mark.parametrize(("language", "base", "head"), TRAPS)
def test_trap_is_refused_and_the_tool_confirms_it_is_code(
    tmp_path: Path, language: str, base: str, head: str
) -> None:
    """Each trap changes what runs (the tool says so) and the carve-out refuses it."""
    ok, why = agrees(tmp_path, language, base, head)
    assert not ok and why
    _path, artifact = ORACLES[language]
    assert artifact(tmp_path, base) != artifact(tmp_path, head), "not a trap after all"


BENIGN = [
    pytest.param("python", "x = 1\n# a\nprint(x)\n", "x = 1\n# b\n\n# c\nprint(x)\n", id="py"),
    pytest.param(
        "c",
        "int f(void) { /* a */ return 1; }\n/* tail */\n",
        "int f(void) { /* b, more */ return 1; } // end\n/* tail\n   more */\n",
        id="c",
    ),
    pytest.param(
        "javascript",
        "let a = 1; // a\nconsole.log(a);\n",
        "/** b */\nlet a = 1;\nconsole.log(a);\n",
        id="js",
    ),
    pytest.param(
        "java",
        "class T { /* a */ static int f() { return 1; } }\n",
        "/** doc */\nclass T { static int f() { return 1; } } // end\n",
        id="java",
    ),
    pytest.param(
        "html",
        "<!doctype html><title>t</title><p>a</p><!-- a -->\n",
        "<!doctype html><title>t</title><p>a</p><!-- b\n two lines -->\n",
        id="html",
    ),
]


@pytest.mark.parametrize(("language", "base", "head"), BENIGN)
def test_real_comment_edits_pass_and_the_tool_agrees(
    tmp_path: Path, language: str, base: str, head: str
) -> None:
    """Plain comment edits get the carve-out, and the language's tool sees no change."""
    ok, why = agrees(tmp_path, language, base, head)
    assert ok, why


# ----------------------------------------------------------------------------- properties
_WORDS = st.text(alphabet="abcxyz ", min_size=0, max_size=12)
_TRICKY = st.text(alphabet="ab \\*/u0A!-><#\n;", min_size=0, max_size=14)


def _program(language: str, body: list[str]) -> str:
    lines = "\n".join(body)
    if language == "python":
        return f"a = 0\n{lines}\nprint(a)\n"
    if language == "c":
        return f"int f(void) {{\n  int a = 0;\n{lines}\n  return a;\n}}\n"
    if language == "javascript":
        return f"let a = 0;\n{lines}\nconsole.log(a);\n"
    return f"class T {{ static int f() {{ int a = 0;\n{lines}\n  return a; }} }}\n"


def _comment(language: str, text: str, block: bool) -> str:
    if language == "python":
        return "# " + text.replace("\n", " ")
    if block:
        return f"/* {text} */"
    return "// " + text.replace("\n", " ")


def _statement(language: str, n: int) -> str:
    return f"a += {n}" if language == "python" else f"  a += {n};"


@st.composite
def _edits(draw: st.DrawFn, language: str, text: st.SearchStrategy[str]) -> tuple[str, str, bool]:
    """(base, head, is a comment edit): a program, then one comment or one code line changed."""
    n = draw(st.integers(1, 4))
    body: list[str] = []
    for i in range(n):
        body.append(_comment(language, draw(_WORDS), draw(st.booleans())))
        body.append(_statement(language, i + 1))
    head = list(body)
    k = draw(st.integers(0, n - 1))
    comment_edit = draw(st.booleans())
    if comment_edit:
        head[2 * k] = _comment(language, draw(text), draw(st.booleans()))
    else:
        head[2 * k + 1] = _statement(language, draw(st.integers(5, 9)))
    return _program(language, body), _program(language, head), comment_edit


_FAST = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("language", ["python", "c", "javascript"])
@given(data=st.data())
@_FAST
def test_generated_edits_agree_with_the_language(
    tmp_path: Path, language: str, data: st.DataObject
) -> None:
    """Generated comment edits (tricky characters included) and code edits: whenever the
    carve-out applies, the tool agrees; plain-word comment edits always get it; code edits
    never do."""
    base, head, comment_edit = data.draw(_edits(language, _TRICKY))
    ok, _why = agrees(tmp_path, language, base, head)
    if not comment_edit and base != head:
        assert not ok
    plain_base, plain_head, plain_comment = data.draw(_edits(language, _WORDS))
    plain_ok, plain_why = agrees(tmp_path, language, plain_base, plain_head)
    if plain_comment and plain_base != plain_head:
        assert plain_ok, plain_why


@given(data=st.data())
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_generated_java_edits_agree_with_javac(tmp_path: Path, data: st.DataObject) -> None:
    """The same property for Java against javac (fewer examples: javac is slow)."""
    base, head, comment_edit = data.draw(_edits("java", _TRICKY))
    ok, _ = agrees(tmp_path, "java", base, head)
    if not comment_edit and base != head:
        assert not ok
