"""The rule table: target key -> schedule rules, in registration order."""
from __future__ import annotations

_RULES: dict = {}


def register(key: str, first: bool = False):
    """Decorator: add a rule for targets with `key` among their keys (first: before the others)."""
    def deco(fn):
        rules = _RULES.setdefault(key, [])
        rules.insert(0, fn) if first else rules.append(fn)
        return fn
    return deco


def rules_for(target) -> list:
    """The rules of the first of the target's keys that has any."""
    for key in target.keys:
        if key in _RULES:
            return list(_RULES[key])
    return []


def rules_of(key: str) -> list:
    """The rules registered under one key (a target family reusing another's rules)."""
    return list(_RULES.get(key, ()))
