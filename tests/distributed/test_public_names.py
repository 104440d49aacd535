"""``tensorwire.torch`` and ``tensorwire.torch.partial`` resolve every name they export."""

from __future__ import annotations

import importlib

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install 'tensorwire[torch]')")


@pytest.mark.parametrize("package", ["tensorwire.torch", "tensorwire.torch.partial"])
def test_every_exported_name_resolves(package: str) -> None:
    mod = importlib.import_module(package)
    for name in mod.__all__:
        value = getattr(mod, name)
        assert getattr(value, "__name__", name) == name, f"{package}.{name} is {value!r}"
    with pytest.raises(AttributeError):
        _ = mod.NoSuchName


def test_the_issue_names_are_the_same_objects() -> None:
    import tensorwire.torch as twt
    from tensorwire.torch.partial import EagerSGD, PartialAllreduce

    assert twt.PartialAllreduce is PartialAllreduce and twt.EagerSGD is EagerSGD
