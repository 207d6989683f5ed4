"""The real Forge satisfies ForgePort: every member exists with the Protocol's signature."""

from __future__ import annotations

import inspect

from capdaemon.forge.client import Forge
from capdaemon.forge.port import ForgePort


def _members() -> list[str]:
    """The Protocol's own members: its methods, properties and annotated attributes."""
    names = {n for n in vars(ForgePort) if not n.startswith("_")}
    names |= set(ForgePort.__annotations__)
    return sorted(names)


def _shape(fn: object) -> list[tuple[str, object, object]]:
    """(name, kind, default) of each parameter: what a caller relies on."""
    sig = inspect.signature(fn)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


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
        if isinstance(wanted, property):  # read-only: a property or a plain attribute
            if callable(real) and not isinstance(real, property):
                differ.append(f"{name}: a method on Forge, a value on ForgePort")
        elif callable(wanted) and _shape(wanted) != _shape(real):
            differ.append(f"{name}: {inspect.signature(real)} != {inspect.signature(wanted)}")
    assert missing == []
    assert differ == []
