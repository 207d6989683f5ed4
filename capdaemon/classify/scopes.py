"""The functions and classes enclosing each line of a file, read from the file itself.

Python files go through `ast`, C/C++/Java/JavaScript/TypeScript/Go/Rust through their
tree-sitter grammars: exact, unlike git's hunk header (which names the nearest line above a
hunk that looks like a definition, even when the hunk opens a new function). Other files,
and files the parser rejects, fall back to an indentation heuristic marked as inexact.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import tree_sitter

from capdaemon.classify.tokens import MAX_LEX_CHARS, LexError, parse_tree
from capdaemon.languages import HTML, PYTHON, language_of

# A definition line in most languages: Python/Ruby def/class, JS function, Go func, Rust fn …
DEF_LINE = re.compile(
    r"^(?P<indent>[ \t]*)(?:@\S+[ \t]+)*"
    r"(?:(?:export|public|private|protected|internal|static|async|override|final|abstract|"
    r"default|pub(?:\([^)]*\))?|unsafe|extern|inline|virtual)[ \t]+)*"
    r"(?:def|class|func|function|fn|sub|interface|struct|impl|trait|module|object)\b"
    r"[ \t]*(?P<name>[\w$.:<>]*)"
)
_TS_SCOPES = frozenset(
    {
        "function_definition", "function_declaration", "function_item", "method_declaration",
        "method_definition", "constructor_declaration", "class_declaration", "class_definition",
        "class_specifier", "struct_specifier", "interface_declaration", "enum_declaration",
        "impl_item", "trait_item", "struct_item", "mod_item", "namespace_definition",
        "generator_function_declaration", "abstract_class_declaration", "record_declaration",
        "type_declaration", "lexical_declaration", "variable_declarator", "arrow_function",
        "function_expression", "func_literal", "lambda_expression",
    }
)  # fmt: skip
_NAME_TYPES = frozenset(
    {"identifier", "field_identifier", "type_identifier", "property_identifier"}
)


@dataclass(frozen=True, slots=True)
class Scopes:
    """For each line (index = line - 1) the names of the definitions enclosing it."""

    by_line: tuple[tuple[str, ...], ...]
    exact: bool

    def at(self, line: int) -> tuple[str, ...]:
        """The enclosing names of a 1-based line (none past the end)."""
        return self.by_line[line - 1] if 0 < line <= len(self.by_line) else ()


def scopes_of(path: str, content: str | None) -> Scopes | None:
    """The enclosing definitions of every line of `content` (None when there is no content)."""
    if content is None:
        return None
    language = language_of(path)
    n = content.count("\n") + 1
    if language is not None and language != HTML and len(content) <= MAX_LEX_CHARS:
        try:
            if language == PYTHON:
                return Scopes(_python_scopes(content, n), exact=True)
            return Scopes(_tree_sitter_scopes(language, content, n), exact=True)
        except (SyntaxError, ValueError, RecursionError, LexError):
            pass
    return Scopes(_indent_scopes(content), exact=False)


def _python_scopes(content: str, n: int) -> tuple[tuple[str, ...], ...]:
    tree = ast.parse(content)
    names: list[list[str]] = [[] for _ in range(n)]
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            last = node.end_lineno or node.lineno
            for i in range(first - 1, min(last, n)):
                names[i].append(node.name)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return _ordered(names)


def _ordered(names: list[list[str]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(line) for line in names)


def _ts_name(node: tree_sitter.Node) -> str:
    name = node.child_by_field_name("name")
    if name is not None and name.text is not None:
        return name.text.decode("utf-8", "replace")
    declarator = node.child_by_field_name("declarator")
    for _ in range(8):  # C declarators nest: pointer → function → identifier
        if declarator is None:
            break
        if declarator.type in _NAME_TYPES or declarator.type == "qualified_identifier":
            return (declarator.text or b"").decode("utf-8", "replace")
        declarator = declarator.child_by_field_name("declarator")
    return ""


def _tree_sitter_scopes(language: str, content: str, n: int) -> tuple[tuple[str, ...], ...]:
    tree = parse_tree(language, content)
    names: list[list[str]] = [[] for _ in range(n)]
    stack: list[tuple[tree_sitter.Node, int]] = [(tree.root_node, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > 500:
            raise RecursionError("nesting too deep")
        if node.type in _TS_SCOPES:
            name = _ts_name(node)
            if name:
                for i in range(node.start_point[0], min(node.end_point[0] + 1, n)):
                    names[i].append(name)
        stack.extend((child, depth + 1) for child in reversed(node.named_children))
    return _ordered(names)


def _indent_scopes(content: str) -> tuple[tuple[str, ...], ...]:
    """Inexact: a definition line opens a scope until a line at or left of its indentation."""
    stack: list[tuple[int, str]] = []
    out: list[tuple[str, ...]] = []
    for line in content.splitlines():
        stripped = line.strip()
        if stripped:
            indent = len(line) - len(line.lstrip(" \t"))
            m = DEF_LINE.match(line)
            while stack and indent <= stack[-1][0] and not stripped.startswith(("#", ")", "]")):
                stack.pop()
            if m is not None:
                stack.append((indent, m.group("name") or stripped))
        out.append(tuple(name for _, name in stack))
    return tuple(out)
