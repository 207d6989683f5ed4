"""Tree-sitter tokens of a changed file, read only where the head's tree is not the base's.

The base is parsed whole; a copy of its tree is told of the edit (`Tree.edit`: the bytes
between those the two files share at the start and at the end) and the head is parsed
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

Quicker still, and common (a reworded comment, a licence header): when the only change lies
inside one comment, the head's tree can be the base's with that one leaf swapped. That is
checked on the trees, not assumed: the two comments are leaves of the same type at the same
start, the change lies within both, and every node on the path from the root to them has the
same type and number of children on both sides, each other child being the same subtree over
the same bytes (shifted past the edit): the same reused one (same id), or, level by level,
nodes of the same types down to reused subtrees and leaves. Then every leaf but the comment
is the same on both sides, at the same bytes; so is the text between leaves, and in Go and
JavaScript whether the comment holds a line break is checked too. Both token streams read
whole would be equal, and the only changed comments are those two: the answer is the one
reading the whole trees gives, without reading them. Any other tree shape takes the
leaf-by-leaf reading above.
"""

from __future__ import annotations

from collections.abc import Callable

import tree_sitter

from capdaemon.classify.tokens import (
    COMMENT_TYPES,
    LINE_BREAK_LANGUAGES,
    LINE_END,
    Comment,
    Lexed,
    Shared,
    check_text,
    parse_bytes,
    read_tree,
    shared_chars,
)


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
    start, same_tail = shared_chars(old_bytes, new_bytes)
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
    swapped = _one_comment_swapped(
        language, (old_tree, new_tree), (old_bytes, new_bytes), (start, old_end, new_end)
    )
    if swapped is not None:
        return swapped
    return (
        read_tree(language, base, old_tree, _finder(new_tree.root_node, start, old_end, shift)),
        read_tree(language, head, new_tree, _finder(edited.root_node, start, new_end, 0)),
    )


def _comment_at(root: tree_sitter.Node, lo: int, hi: int) -> tree_sitter.Node | None:
    """The comment leaf of a tree that holds the bytes [lo, hi) (hi > lo), or None."""
    node = root.descendant_for_byte_range(lo, hi)
    if node is None or node.type not in COMMENT_TYPES:
        return None
    if not (node.start_byte <= lo and hi <= node.end_byte):
        return None
    return node


def _same_subtrees(pairs: list[tuple[tree_sitter.Node, tree_sitter.Node, int]]) -> bool:
    """Whether each pair of subtrees (the second `moved` bytes on from the first) has the
    same leaves (a comment counting as one) of the same types over the same bytes: a reused
    subtree (same id) at the moved place has; otherwise the two are compared level by level."""
    while pairs:
        a, b, moved = pairs.pop()
        start, end = a.byte_range
        if b.byte_range != (start + moved, end + moved):
            return False
        if a.id == b.id:
            continue
        if a.type != b.type or a.child_count != b.child_count:
            return False
        if a.child_count and a.type not in COMMENT_TYPES:
            pairs.extend((x, y, moved) for x, y in zip(a.children, b.children, strict=True))
    return True


def _same_but_one(old: tree_sitter.Node, new: tree_sitter.Node, lo: int, shift: int) -> bool:
    """Whether two comment leaves' paths up to their roots have the same types and the same
    children, every child off the path the same subtree over the same bytes (moved by
    `shift` when after the change, which starts at `lo` and ends within the comments)."""
    hi = old.end_byte
    pairs: list[tuple[tree_sitter.Node, tree_sitter.Node, int]] = []
    while True:
        o_up, n_up = old.parent, new.parent
        if o_up is None or n_up is None:
            return o_up is None and n_up is None and _same_subtrees(pairs)
        if o_up.type != n_up.type or o_up.type in COMMENT_TYPES:
            return False
        o_kids, n_kids = o_up.children, n_up.children
        if len(o_kids) != len(n_kids):
            return False
        for a, b in zip(o_kids, n_kids, strict=True):
            if a.id == old.id:
                if b.id != new.id:
                    return False
            elif a.end_byte <= lo and a.end_byte <= old.start_byte:
                pairs.append((a, b, 0))
            elif a.start_byte >= hi:
                pairs.append((a, b, shift))
            else:
                return False  # a sibling overlapping the change or the path
        old, new = o_up, n_up


def _one_comment_swapped(
    language: str,
    trees: tuple[tree_sitter.Tree, tree_sitter.Tree],
    data: tuple[bytes, bytes],
    change: tuple[int, int, int],
) -> tuple[Lexed, Lexed] | None:
    """Base and head read as one comment each (their code tokens equal) when the head's tree
    is the base's with one comment leaf swapped (see the module's docstring); else None.
    `change`: the bytes [lo, hi) of the base that the head replaces, and hi's place in it."""
    (old_tree, new_tree), (old_bytes, new_bytes) = trees, data
    lo, hi, new_hi = change
    # the comment holding the change: its own bytes, or the one the change appends to
    at = lo - 1 if hi == lo or new_hi == lo else lo
    if at < 0:
        return None
    old_c = _comment_at(old_tree.root_node, at, hi)
    new_c = _comment_at(new_tree.root_node, at, new_hi)
    if old_c is None or new_c is None or old_c.type != new_c.type:
        return None
    shift = len(new_bytes) - len(old_bytes)
    if new_c.start_byte != old_c.start_byte or new_c.end_byte != old_c.end_byte + shift:
        return None
    for tree, text in ((old_tree, old_bytes), (new_tree, new_bytes)):
        if text[tree.root_node.end_byte :].strip():  # read whole, this fails: so it does
            return None
    old_text = old_bytes[old_c.start_byte : old_c.end_byte].decode("utf-8", "replace")
    new_text = new_bytes[new_c.start_byte : new_c.end_byte].decode("utf-8", "replace")
    if language in LINE_BREAK_LANGUAGES and bool(LINE_END.search(old_text)) != bool(
        LINE_END.search(new_text)
    ):
        return None
    if not _same_but_one(old_c, new_c, at, shift):
        return None
    return (
        Lexed(language, (), (), (Comment(old_text, old_c.start_point.row + 1),)),
        Lexed(language, (), (), (Comment(new_text, new_c.start_point.row + 1),)),
    )
