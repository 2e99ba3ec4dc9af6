"""Plugin discovery shared by workloads and monitors: every module of a package that defines a
subclass of the package's base class with a ``name`` is a plugin.  A module that fails to import
is recorded (``mmbench list`` says so) instead of taking the other plugins down."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Iterable



def discover(package: str, path: Iterable[str], bases: tuple[type, ...],
             errors: dict[str, str]) -> dict[str, type]:
    found: dict[str, type] = {}
    for mod in pkgutil.iter_modules(path):
        if mod.name.startswith("_") or mod.name == "base":
            continue
        try:
            module = importlib.import_module(f"{package}.{mod.name}")
        except Exception as e:  # one broken plugin must not take the others down
            errors[mod.name] = f"{type(e).__name__}: {e}"
            continue
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, bases[0]) and obj not in bases
                    and getattr(obj, "name", "")):
                found[obj.name] = obj
    return dict(sorted(found.items()))
