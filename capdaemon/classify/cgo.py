"""Whether a Go file imports "C": then cgo compiles its preamble, a comment, as C.

cgo takes the comment right before an `import "C"` spec, standalone or inside a grouped
`import ( … )`, as C source (`#include`, `#define`, whole functions). Any spelling of the
path counts: `"C"`, `` `C` ``, an escape that decodes to it, with or without a name before
it (the go tool rejects a renamed "C" but still reads the preamble to say so). Found on
tree-sitter's tree, so no comment or string that merely looks like an import counts, and a
file whose imports cannot be read counts as importing "C" (fail closed).
"""

from __future__ import annotations

import re

import tree_sitter

from capdaemon.classify.tokens import LexError, parse_tree

# A Go string literal that may spell "C" (cheap look before parsing: no such literal, no "C").
_MAYBE_C = re.compile(r'["`](?:C|\\[0-7xuU][0-9A-Fa-f]{0,8})["`]')
_C_SPELLINGS = frozenset({'"C"', "`C`", '"\\x43"', '"\\103"', '"\\u0043"', '"\\U00000043"'})


def imports_c(text: str) -> bool:
    """True when the Go file imports "C" in any form (or its imports cannot be read)."""
    if not _MAYBE_C.search(text):
        return False
    try:
        root = parse_tree("go", text).root_node
    except LexError:
        return True
    for decl in root.children:
        if decl.type != "import_declaration":
            continue
        for spec in _specs(decl):
            path = spec.child_by_field_name("path")
            literal = path.text.decode("utf-8", "replace") if path and path.text else ""
            if literal in _C_SPELLINGS or "\\" in literal:
                return True
    return False


def _specs(decl: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The import specs of an import declaration, grouped or not."""
    out: list[tree_sitter.Node] = []
    stack = [decl]
    while stack:
        node = stack.pop()
        for child in node.children:
            if child.type == "import_spec":
                out.append(child)
            elif child.type == "import_spec_list":
                stack.append(child)
    return out
