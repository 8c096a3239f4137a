"""The type stubs (`bloomkit/__init__.pyi`) name exactly what the package has, and every
public name has docs."""

import ast
from pathlib import Path

import pytest

import bloomkit

STUB = Path(bloomkit.__file__).with_name("__init__.pyi")


def stub_classes():
    """Each class of the stub: its own members and its bases' names."""
    tree = ast.parse(STUB.read_text())
    classes = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
            members |= {item.target.id for item in node.body if isinstance(item, ast.AnnAssign)}
            classes[node.name] = (members, [b.id for b in node.bases if isinstance(b, ast.Name)])
    return classes


def stub_members(classes, name):
    members, bases = classes[name]
    out = set(members)
    for base in bases:
        if base in classes:
            out |= stub_members(classes, base)
    return out


def public(names):
    return {n for n in names if not n.startswith("_") or n in ("__contains__", "__len__", "__or__", "__ior__", "__and__", "__iand__")}


def runtime_members(cls):
    return public({name for klass in cls.__mro__ if klass is not object for name in vars(klass)})


def test_the_stub_parses_and_lists_the_public_names():
    tree = ast.parse(STUB.read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    stubbed |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    stubbed |= {alias.asname or alias.name for n in tree.body if isinstance(n, ast.ImportFrom) for alias in n.names}
    assert set(bloomkit.__all__) <= stubbed | {"from_bytes", "load"}


@pytest.mark.parametrize(
    "name",
    [n for n in bloomkit.__all__ if isinstance(getattr(bloomkit, n), type) and not issubclass(getattr(bloomkit, n), Exception)],
)
def test_each_class_has_in_the_stub_what_it_has_at_run_time(name):
    classes = stub_classes()
    assert name in classes, name
    stubbed = public(stub_members(classes, name))
    actual = runtime_members(getattr(bloomkit, name))
    assert actual - stubbed == set(), f"{name}: not in the stub"
    assert stubbed - actual == set(), f"{name}: in the stub only"
