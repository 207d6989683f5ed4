"""Tree-sitter tokens of a changed file, read only where the head's tree is not the base's.

The base is parsed whole; a copy of its tree is told of the edit (`Tree.edit`: the bytes
between the lines the two files share at the start and at the end) and the head is parsed
reusing it (`Parser.parse(head, old_tree)`). py-tree-sitter documents `Node.id` so: a node
reused from the old tree has the same id in both trees. Such a subtree, outside the edit,
covers the same text on both sides and has the same leaves: the same tokens and comments.

Both files are then read leaf by leaf, except that a subtree the other file's tree has too
(same id over the same, shifted, byte range) whose first and last leaves are code tokens is
read as a `Shared`: its first leaf as usual (what that yields depends on what came before),
then one token naming the subtree. After a subtree's first code token the tokens depend on
the subtree alone, and after its last one the reading state is fixed by it; so two equal
streams read this way mean two equal streams read whole. Both sides find the same shared
subtrees (the relation is symmetric, and each side looks up the smallest node over the
range), so equal files still read as equal; the comments of a shared subtree are the same
on both sides and are left out on both. Most of a file is shared after a comment edit
(nine nodes in ten in C, JavaScript, Java and Go, nesting included), so reading costs what
the changed part and the top levels around it cost.
"""

from __future__ import annotations

from collections.abc import Callable

import tree_sitter

from capdaemon.classify.tokens import (
    COMMENT_TYPES,
    Lexed,
    Shared,
    check_text,
    parse_bytes,
    read_tree,
    shared_lines,
)


def _shared_bytes(old: bytes, new: bytes) -> tuple[int, int]:
    """Bytes the two files share at the start and then at the end, in whole lines."""
    a = old.split(b"\n")
    head, tail = shared_lines(a, new.split(b"\n"))
    start = sum(len(line) + 1 for line in a[:head])
    end = sum(len(line) + 1 for line in a[len(a) - tail :]) - 1 if tail else 0
    return min(start, len(old), len(new)), max(end, 0)


def _point(data: bytes, offset: int) -> tuple[int, int]:
    row = data.count(b"\n", 0, offset)
    return row, offset - (data.rfind(b"\n", 0, offset) + 1)


def _edge_leaf(node: tree_sitter.Node, last: bool) -> tree_sitter.Node:
    """The first (or last) leaf of a subtree, a comment counting as a leaf."""
    start, end = node.start_byte, node.end_byte
    leaf = node.descendant_for_byte_range(end - 1, end) if last else None
    if not last:
        leaf = node.descendant_for_byte_range(start, start)
    if (  # one lookup finds it unless zero-width nodes or comments are in the way
        leaf is not None
        and leaf.child_count == 0
        and (leaf.end_byte == end if last else leaf.start_byte == start)
        and leaf.type not in COMMENT_TYPES
        and (leaf.parent is None or leaf.parent.type not in COMMENT_TYPES)  # doc comments
    ):
        return leaf
    while node.child_count and node.type not in COMMENT_TYPES:
        child = node.child(node.child_count - 1 if last else 0)
        if child is None:
            break
        node = child
    return node


def _finder(
    other: tree_sitter.Node, lo: int, hi: int, shift: int
) -> Callable[[tree_sitter.Node], Shared | None]:
    """Which subtrees of one tree the `other` tree has too: outside the edit [lo, hi) of
    this tree's bytes, the same id over the range moved by `shift` past the edit."""

    def shared(node: tree_sitter.Node) -> Shared | None:
        start, end = node.start_byte, node.end_byte
        if end <= lo:
            found = other.descendant_for_byte_range(start, end)
        elif start >= hi:
            found = other.descendant_for_byte_range(start + shift, end + shift)
        else:
            return None
        if found is None or found.id != node.id:
            return None
        first, last = _edge_leaf(node, False), _edge_leaf(node, True)
        if first.type in COMMENT_TYPES or last.type in COMMENT_TYPES:
            return None
        return Shared(node, first, last)

    return shared


def lex_tree_sitter_pair(language: str, base: str, head: str) -> tuple[Lexed, Lexed]:
    """The tokens and comments of base and head with their shared subtrees read as one
    token each (lines as in the files); raises LexError as reading the whole files would."""
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
    shift = new_end - old_end
    return (
        read_tree(language, base, old_tree, _finder(new_tree.root_node, start, old_end, shift)),
        read_tree(language, head, new_tree, _finder(edited.root_node, start, new_end, 0)),
    )
