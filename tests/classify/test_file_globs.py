"""File-name carve-out globs (`noncritical_files`) match a file's own name, never a folder."""

from __future__ import annotations

import fnmatch

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.classify.compiled import PathMatcher

_NAME = st.text(alphabet="abcRDME._-", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)
_PATTERN = st.text(alphabet="abcRDME.*?_-", min_size=1, max_size=6).filter(
    lambda s: s.strip("*?") != "" and not s.startswith(("!", "#"))
)


@settings(max_examples=400, deadline=None)
@given(pattern=_PATTERN, folders=st.lists(_NAME, max_size=3), name=_NAME)
def test_a_name_glob_matches_exactly_the_files_whose_name_matches(
    pattern: str, folders: list[str], name: str
) -> None:
    """A glob without `/` matches a path iff the file's own name matches it (fnmatch on the
    last part is the oracle): a folder on the path whose name matches never counts."""
    path = "/".join([*folders, name])
    matcher = PathMatcher((pattern,), restrictive=False, files_only=True)
    assert matcher.match(path) is fnmatch.fnmatchcase(name, pattern), (pattern, path)
    assert bool(matcher.hits(path)) is matcher.match(path)


@settings(max_examples=200, deadline=None)
@given(folders=st.lists(_NAME, max_size=2), suffix=_NAME, name=_NAME)
def test_a_folder_named_like_readme_never_makes_its_files_match(
    folders: list[str], suffix: str, name: str
) -> None:
    """`README*` and `CHANGELOG.md` never match a file under a folder of that name."""
    matcher = PathMatcher(("README*", "CHANGELOG.md"), restrictive=False, files_only=True)
    for folder in (f"README{suffix}", "CHANGELOG.md"):
        if not name.startswith("README") and name != "CHANGELOG.md":
            assert not matcher.match("/".join([*folders, folder, name]))
