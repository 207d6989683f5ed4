"""`capdaemon classify` on real git repositories fed adversarial content: bounded, fail closed."""

from __future__ import annotations

import json
import time

from .conftest import classify_cli


def _classify_json(capsys, monkeypatch, repo, config) -> dict:
    monkeypatch.delenv("CAPDAEMON_CONFIG", raising=False)
    monkeypatch.delenv("CAPDAEMON_STATE", raising=False)
    code, out, err = classify_cli(capsys, repo, config, "--json")
    assert code == 0, err
    return json.loads(out)


def test_quadratic_typo_pair_in_a_doctrine_file(capsys, monkeypatch, repo, sample_config):
    """One line of docs/concepts/ edited `x a…a y` → `y a…a x` (N=65,536) took 41 s at
    N=4,000 and came out a "typo fix"; now it finishes at once and is a critical rule change."""
    n = 65_536
    repo.git("switch", "-q", "main")
    repo.write("docs/concepts/rules.md", "# Rules\n\nintro x" + "a" * n + "y\n\nThe end.\n")
    repo.commit("doctrine")
    repo.git("switch", "-q", "feat")
    repo.git("merge", "-q", "main")
    repo.write("docs/concepts/rules.md", "# Rules\n\nintro y" + "a" * n + "x\n\nThe end.\n")
    repo.commit("fix typo")
    began = time.monotonic()
    d = _classify_json(capsys, monkeypatch, repo, sample_config)
    assert time.monotonic() - began < 20  # a stall guard only (it was minutes); see bench/
    (f,) = d["files"]
    assert f["path"] == "docs/concepts/rules.md" and f["cr"] == "critical"
    assert any("not a typo fix" in r and "over 64 characters" in r for r in f["reasons"])
    assert d["quadrant"] in ("B", "D")


def test_a_real_typo_in_a_doctrine_file_still_carves_out(capsys, monkeypatch, repo, sample_config):
    """The bound leaves ordinary typo fixes alone: the doctrine file stays non-critical."""
    repo.git("switch", "-q", "main")
    repo.write("docs/concepts/rules.md", "# Rules\n\nThe classifer decides.\n")
    repo.commit("doctrine")
    repo.git("switch", "-q", "feat")
    repo.git("merge", "-q", "main")
    repo.write("docs/concepts/rules.md", "# Rules\n\nThe classifier decides.\n")
    repo.commit("fix typo")
    d = _classify_json(capsys, monkeypatch, repo, sample_config)
    (f,) = d["files"]
    assert f["cr"] == "non-critical", f["reasons"]
