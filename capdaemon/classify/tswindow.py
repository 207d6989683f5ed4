"""Tree-sitter tokens of a changed file, read only where the head's tree is not the base's.

The base is parsed whole; a copy of its tree is told of the edit (`Tree.edit`: the bytes
between the shared head and the shared tail of the two files) and the head is parsed
reusing it (`Parser.parse(head, old_tree)`). A top-level node of the head's tree that is the
very same subtree as one of the edited base tree (py-tree-sitter documents `Node.id` so: a
node reused from the old tree has the same id in both), at the same place and outside the
edit, has the same leaves over the same text on both sides: its tokens and comments are
equal without reading them. (Tree-sitter reuses only nodes it did not build while trying
alternatives, so how much is skipped depends on the grammar: most of a Go file, little of
a C one; at worst both files are read whole, as before.) So only the top-level nodes from
the first one that is not shared (or that reaches the edit) to the last one are read, on
both sides, and then on into the shared tail up to and including its first code token;
after that token the reading state is the same on both sides (same position in the same
text, same last token kind, no pending line break) and the rest is the same subtrees.

The state at the start of the window is the same on both sides (the same leaves before
it) but not known without reading them; the window starts from the one that can only see
more difference: whitespace before a first literal is kept and a line break before the
first code token counts. Both sides start alike, so equal windows still mean equal files.
Anything unexpected (the shared nodes not lining up) reads both files whole instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import tree_sitter

from capdaemon.classify.tokens import (
    LeafWalk,
    Lexed,
    check_text,
    leaves_of,
    lex,
    parse_bytes,
)


def _shared_bytes(old: bytes, new: bytes) -> tuple[int, int]:
    """Bytes the two files share at the start and then at the end, in whole lines."""
    a = old.split(b"\n")
    b = new.split(b"\n")
    most = min(len(a), len(b))
    head = 0
    while head < most and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < most - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = sum(len(line) + 1 for line in a[:head])
    end = sum(len(line) + 1 for line in a[len(a) - tail :]) - 1 if tail else 0
    return min(start, len(old), len(new)), max(end, 0)


def _point(data: bytes, offset: int) -> tuple[int, int]:
    row = data.count(b"\n", 0, offset)
    return row, offset - (data.rfind(b"\n", 0, offset) + 1)


def _window(
    edited: Sequence[tree_sitter.Node], new: Sequence[tree_sitter.Node], start: int, end: int
) -> tuple[int, int, int] | None:
    """(first, stop, stop in the base) top-level node indexes of the head (and base) to
    read, or None when the shared nodes do not line up before and after them."""
    place = {n.id: n.start_byte for n in edited}
    shared = [place.get(n.id) == n.start_byte for n in new]
    first = next((k for k, n in enumerate(new) if not shared[k] or n.end_byte > start), len(new))
    stop = 1 + max(
        (k for k, n in enumerate(new) if not shared[k] or n.start_byte < end), default=-1
    )
    stop = max(stop, first)
    if first > len(edited) or any(edited[k].id != new[k].id for k in range(first)):
        return None
    stop_old = len(edited) - (len(new) - stop)
    if stop_old < first:
        return None
    if any(edited[stop_old + k].id != new[stop + k].id for k in range(len(new) - stop)):
        return None
    return first, stop, stop_old


def _read(
    language: str,
    text: str,
    nodes: Sequence[tree_sitter.Node],
    first: int,
    stop: int,
) -> Lexed:
    """Tokens of top-level nodes [first, stop) and on to the first code token after them."""
    walk = LeafWalk.of(language, text)
    if first:
        walk.pos = nodes[first - 1].end_byte
        walk.prev_literal = True  # see the module's docstring: the stricter start
        walk.seen = True
    walk.read(leaves_of(nodes[first:stop]))
    if walk.read(leaves_of(nodes[stop:]), until_code=True):
        return Lexed(language, tuple(walk.tokens), tuple(walk.lines), tuple(walk.comments))
    return walk.finish(language)


def lex_tree_sitter_pair(language: str, base: str, head: str) -> tuple[Lexed, Lexed]:
    """The tokens and comments of the parts of base and head that can differ (lines as in
    the files); raises LexError as reading the whole files would."""
    check_text(base)
    check_text(head)
    old_bytes = base.encode("utf-8")
    new_bytes = head.encode("utf-8")
    start, same_tail = _shared_bytes(old_bytes, new_bytes)
    old_tree = parse_bytes(language, old_bytes)
    edited = old_tree.copy()
    old_end, new_end = len(old_bytes) - same_tail, len(new_bytes) - same_tail
    edited.edit(
        start_byte=start,
        old_end_byte=old_end,
        new_end_byte=new_end,
        start_point=_point(old_bytes, start),
        old_end_point=_point(old_bytes, old_end),
        new_end_point=_point(new_bytes, new_end),
    )
    new_tree = parse_bytes(language, new_bytes, edited)
    old_nodes = old_tree.root_node.children
    new_nodes = new_tree.root_node.children
    window = None
    if old_nodes and new_nodes:  # an empty file's root is a leaf: read whole
        window = _window(edited.root_node.children, new_nodes, start, new_end)
    if window is None:
        walk = LeafWalk.of(language, base)
        walk.read(leaves_of([old_tree.root_node]))
        return walk.finish(language), lex(language, head)
    first, stop, stop_old = window
    return (
        _read(language, base, old_nodes, first, stop_old),
        _read(language, head, new_nodes, first, stop),
    )
