"""Every line `capdaemon init` writes loads, its commented suggestions uncommented too."""

from __future__ import annotations

import re
from pathlib import Path

from capdaemon.cli import main as cli
from capdaemon.config import load_config
from capdaemon.config.types import DEFAULT_NONCRITICAL_DIRS, DEFAULT_NONCRITICAL_FILES

SUGGESTION = re.compile(r"^(\s*)# ([a-z_]+:.*)$")  # "# key: value" at any indent
BLOCK = re.compile(r"^#   (.*)$")  # the lines of a suggested block (canonical_app:, telegram:)


def uncommented(text: str) -> tuple[str, int]:
    """The text with every commented suggestion uncommented, and how many lines changed. A
    suggested block goes on while its lines follow one uncommented line; prose comments and
    commented examples after prose (the repos entry) stay comments."""
    out: list[str] = []
    changed = 0
    for line in text.splitlines():
        key, block = SUGGESTION.match(line), BLOCK.match(line)
        if key:
            out.append(key.group(1) + key.group(2))
        elif block and out and _continues(out[-1]):
            out.append("  " + block.group(1))
        else:
            out.append(line)
            continue
        changed += 1
    return "\n".join(out) + "\n", changed


def _continues(prev: str) -> bool:
    """A block line follows an uncommented key ending in ':' or another block line."""
    if prev.lstrip().startswith("#"):
        return False
    return prev.endswith(":") or prev.startswith("  ")


def test_every_suggestion_init_writes_loads_once_uncommented(tmp_path: Path) -> None:
    """init (with --detect's suggestions): uncommenting every suggested key of every file it
    wrote gives a config the loader accepts; the carve-out suggestions are the defaults."""
    clone = tmp_path / "clone"
    for folder in ("src/shop", "docs", "tests"):
        (clone / folder).mkdir(parents=True)
    (clone / "src" / "shop" / "__init__.py").write_text("", encoding="utf-8")
    target = tmp_path / "cfg"
    # the Telegram example names `your-login`: an owner here, so its users map can load
    args = ["init", str(target), "--detect", str(clone), "--owner", "your-login"]
    assert cli([*args, "--repo", "me/app", "--bot-repo", "me/ops"]) == 0
    load_config(target)  # as written
    changed = {}
    for path in sorted(target.rglob("*.yml")):
        text, changed[path.name] = uncommented(path.read_text(encoding="utf-8"))
        path.write_text(text, encoding="utf-8")
    assert changed["classifier.yml"] >= 4 and changed["capdaemon.yml"] >= 10, changed
    config = load_config(target)
    cc = config.classifier
    assert cc.noncritical_dirs == (*DEFAULT_NONCRITICAL_DIRS, "docs/", "tests/")  # + known-safe
    assert cc.noncritical_files == DEFAULT_NONCRITICAL_FILES
    assert cc.noncritical_prose_dirs == ("docs/",)
    assert config.canonical_app == "capdaemon" and config.channels.telegram is not None
