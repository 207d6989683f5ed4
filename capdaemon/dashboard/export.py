"""`capdaemon dashboard --out DIR`: the same pages as static files that open from file://."""

from __future__ import annotations

from pathlib import Path

from capdaemon.dashboard.readmodel import ReadModel
from capdaemon.dashboard.site import all_paths, render, story_index


def export(model: ReadModel, out: Path) -> int:
    """Write every page under `out` (created if missing); the number of files written."""
    out = Path(out)
    slugs = story_index(model)
    count = 0
    for rel in all_paths(model):
        target = out / rel
        if out.resolve() not in target.resolve().parents:
            continue  # a slug can never leave the folder; belt and braces
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(model, rel, static=True, slugs=slugs).body, encoding="utf-8")
        count += 1
    return count
