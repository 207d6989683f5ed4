"""Fixtures for the classifier tests (builders live in classify_builders.py)."""

from __future__ import annotations

import pytest

from capdaemon.config import Config

from .classify_builders import base_config


@pytest.fixture
def config() -> Config:
    """The default test config: owner alice, a bot repo, a canonical App."""
    return base_config()
