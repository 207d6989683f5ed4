"""The real Forge satisfies ForgePort: every member exists with the Protocol's signature."""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any

from capdaemon.forge.client import Forge
from capdaemon.forge.installations import Installations
from capdaemon.forge.port import ForgePort
from capdaemon.forge.transport import Transport

# names the Protocol imports for type checking only
_TYPING_ONLY = {"Transport": Transport, "Installations": Installations}


def _members() -> list[str]:
    """The Protocol's own members: its methods, properties and annotated attributes."""
    names = {n for n in vars(ForgePort) if not n.startswith("_")}
    names |= set(ForgePort.__annotations__)
    return sorted(names)


def _function(member: object) -> Callable[..., Any] | None:
    """The function behind a method or a property's getter (None for a plain value)."""
    fn = member.fget if isinstance(member, property) else member
    return fn if inspect.isfunction(fn) else None


def _shape(fn: Callable[..., Any]) -> list[tuple[str, object, object]]:
    """(name, kind, default) of each parameter: what a caller relies on."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def _hints(fn: Callable[..., Any]) -> dict[str, object]:
    """The parameter and return types, with every alias and forward reference resolved."""
    module = vars(sys.modules[fn.__module__])
    return typing.get_type_hints(fn, {**module, **_TYPING_ONLY})


def test_forge_is_a_forge_port(forge: Forge) -> None:
    port: ForgePort = forge  # mypy checks the full signatures here
    assert port.as_app is True
    assert port.login.endswith("[bot]")
    assert len(_members()) > 30


def test_every_port_member_exists_on_forge_with_the_same_signature(forge: Forge) -> None:
    missing, differ = [], []
    for name in _members():
        try:
            real = inspect.getattr_static(forge, name)
        except AttributeError:
            missing.append(name)
            continue
        wanted = vars(ForgePort).get(name)
        # a read-only member may be a property or a plain attribute, never a method
        if isinstance(wanted, property) and callable(real) and not isinstance(real, property):
            differ.append(f"{name}: a method on Forge, a value on ForgePort")
        want_fn, real_fn = _function(wanted), _function(real)
        if want_fn is None or real_fn is None:
            continue
        if not isinstance(wanted, property) and _shape(want_fn) != _shape(real_fn):
            differ.append(f"{name}: {inspect.signature(real_fn)} != {inspect.signature(want_fn)}")
        elif _hints(want_fn) != _hints(real_fn):
            differ.append(f"{name}: types {_hints(real_fn)} != {_hints(want_fn)}")
    assert missing == []
    assert differ == []


def test_the_check_catches_a_forge_that_drifts() -> None:
    """A Forge whose method takes another type or lost a parameter is told apart."""

    def merge(self: Forge, repo: str, number: str, sha: str, method: str) -> str:
        return ""

    wanted = _function(vars(ForgePort)["merge"])
    assert wanted is not None
    assert _shape(merge) != _shape(wanted)
    assert _hints(merge) != _hints(wanted)
