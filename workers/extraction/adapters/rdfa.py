"""extruct's RDFa output (expanded JSON-LD: full IRIs, value objects, node
references) flattened to the same plain shape as microdata and JSON-LD, for
the schema.org vocabulary only."""

from __future__ import annotations

from typing import Any

__all__ = ["flatten_rdfa"]

_SCHEMA = ("http://schema.org/", "https://schema.org/")
_MAX_DEPTH = 6  # RDFa graphs can be cyclic; products are never this deep


def flatten_rdfa(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Top-level (unreferenced) schema.org nodes as plain dicts."""
    by_id = {node.get("@id"): node for node in nodes if node.get("@id")}
    referenced = {
        value["@id"]
        for node in nodes
        for values in node.values()
        if isinstance(values, list)
        for value in values
        if isinstance(value, dict) and "@id" in value
    }
    roots = [n for n in nodes if n.get("@id") not in referenced and _types(n)]
    return [_flatten(node, by_id, 0) for node in roots]


def _types(node: dict[str, Any]) -> list[str]:
    types = node.get("@type") or []
    return [_short(t) for t in types if isinstance(t, str) and t.startswith(_SCHEMA)]


def _short(iri: str) -> str:
    for prefix in _SCHEMA:
        if iri.startswith(prefix):
            return iri[len(prefix) :]
    return iri


def _flatten(node: dict[str, Any], by_id: dict[Any, dict[str, Any]], depth: int) -> dict[str, Any]:
    flat: dict[str, Any] = {"@type": _types(node)[0] if _types(node) else None}
    if isinstance(node.get("@id"), str) and not node["@id"].startswith("_:"):
        flat["@id"] = node["@id"]
    for key, values in node.items():
        if not key.startswith(_SCHEMA) or not isinstance(values, list):
            continue
        converted = [_value(v, by_id, depth) for v in values if isinstance(v, dict)]
        flat[_short(key)] = converted[0] if len(converted) == 1 else converted
    return flat


def _value(value: dict[str, Any], by_id: dict[Any, dict[str, Any]], depth: int) -> Any:
    if "@value" in value:
        return value["@value"]
    target = by_id.get(value.get("@id"))
    if target is not None and depth < _MAX_DEPTH:
        return _flatten(target, by_id, depth + 1)
    return value.get("@id")
