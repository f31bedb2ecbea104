"""YAML text in and out, with libyaml's C parser and emitter when PyYAML was built with them.

Documents are read with the safe loader (plain data only), rejecting
duplicate mapping keys. libyaml words its syntax errors differently from
PyYAML's pure-Python parser and disagrees with it on a few corner cases, so
a document the C parser rejects is read again by the pure-Python classes,
whose value or error is the answer: messages and accepted documents stay
those of the pure-Python parser, and only valid documents take the fast path.
Without libyaml the pure-Python classes do everything.
"""

from typing import Any

import yaml

__all__ = ["dump", "parse", "parse_value"]

_FAST_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    """A mapping, rejecting a key that appears twice (PyYAML keeps the last one)."""
    loader.flatten_mapping(node)
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: construct_mapping reports it
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


class _StrictLoader(yaml.SafeLoader):
    """Pure-Python safe loader that rejects duplicate mapping keys."""


class _FastStrictLoader(_FAST_LOADER):  # type: ignore[misc, valid-type]
    """The same with libyaml's parser (when available)."""


for _loader in (_StrictLoader, _FastStrictLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load(text: str, fast: type, slow: type) -> Any:
    try:
        return yaml.load(text, Loader=fast)  # a safe loader
    except yaml.YAMLError:
        if fast is slow:
            raise
    return yaml.load(text, Loader=slow)  # a safe loader: the pure-Python answer, value or error


def parse(text: str) -> Any:
    """The document in ``text``; raises :class:`yaml.YAMLError` (duplicate keys included)."""
    return _load(text, _FastStrictLoader, _StrictLoader)


def parse_value(text: str) -> Any:
    """A value given on the command line (``--set key=VALUE``), read like :func:`yaml.safe_load`."""
    return _load(text, _FAST_LOADER, yaml.SafeLoader)


def dump(data: Any) -> str:
    """``data`` as block-style YAML, keys in their order, lines up to 100 columns."""
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=100)
