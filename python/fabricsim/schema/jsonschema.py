"""The scenario schema as JSON Schema (``fabricsim schema``), for editors that
check and complete scenario files as they are typed.

The JSON Schema is generated from the pydantic models of this package, so it
holds the same fields, kinds, enumerations, bounds and descriptions (the
docstrings). Quantities are strings with a unit checked by a pattern
(``"10us"``, ``"100Gbps"``, ``"32MiB"``, ``"60%"``) or bare numbers, and
defaults are shown as they would be written in a scenario. Checks that span
several fields (a class below ``network.classes``, a host that exists) are
the loader's: a file the JSON Schema accepts can still be refused by
``fabricsim validate``, never the other way round.

With the YAML language server (VS Code's YAML extension, and editors using
it), a first line of the scenario file selects the schema::

    # yaml-language-server: $schema=./fabricsim-scenario.schema.json
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
from pydantic.json_schema import GenerateJsonSchema

from fabricsim.schema._base import DEFERRED_MARK

__all__ = ["SCHEMA_ID", "scenario_json_schema", "scenario_json_schema_text"]

SCHEMA_ID = "urn:fabricsim:scenario"
_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class _Generator(GenerateJsonSchema):
    """Defaults written as in a scenario file: each through its field's serializer."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        # A section built on first use is a nested model: no title of its own, like the others.
        if isinstance(schema, dict) and (schema.get("metadata") or {}).get(DEFERRED_MARK):
            return False
        return super().field_title_should_be_set(schema)

    def default_schema(self, schema: Any) -> Any:
        out = super().default_schema(schema)
        if "default" in out:
            try:
                out["default"] = pydantic_core.SchemaSerializer(schema["schema"]).to_python(
                    schema["default"], mode="json"
                )
            except Exception:  # keep the plain default when the field has no serializer of its own
                pass
        return out


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file."""
    from fabricsim.schema.scenario import Scenario

    schema = Scenario.model_json_schema(schema_generator=_Generator)
    _preset_filled(schema.get("$defs", {}))
    _preset_names(schema)
    _rate_controllers(schema.get("$defs", {}))
    return {
        "$schema": _DIALECT,
        "$id": SCHEMA_ID,
        "title": "fabricsim scenario",
        "description": "A fabricsim scenario file (docs/scenarios.md).",
        **{key: value for key, value in schema.items() if key not in ("title", "description")},
    }


#: Fields a switch's ``device`` preset may fill: required by the loader once
#: the preset is merged, optional in a file.
_FILLED_BY_PRESETS = {"Pipeline": ("rate",)}


def _preset_filled(defs: dict[str, Any]) -> None:
    for name, fields in _FILLED_BY_PRESETS.items():
        model = defs.get(name)
        if model is None:
            continue
        model["required"] = [f for f in model.get("required", []) if f not in fields]
        if not model["required"]:
            del model["required"]
        for f in fields:
            prop = model.get("properties", {}).get(f)
            if prop is not None:
                prop["description"] = (
                    prop.get("description", "") + " Required unless the switch's device preset has a pipeline."
                ).strip()


def _preset_names(node: Any) -> None:
    """A host ``model`` may also be written as a preset's name (``model: linux-kernel``)."""
    from fabricsim import hosts

    ref = {"$ref": "#/$defs/HostModel"}
    if isinstance(node, dict):
        for key, value in node.items():
            if value == ref:
                node[key] = {"anyOf": [ref, {"enum": list(hosts.names()), "description": "a host preset"}]}
            else:
                _preset_names(value)
        if "anyOf" in node and ref in node["anyOf"]:
            node["anyOf"] = [item for item in node["anyOf"] if item != ref] + [
                ref,
                {"enum": list(hosts.names()), "description": "a host preset"},
            ]
    elif isinstance(node, list):
        for item in node:
            _preset_names(item)


def _rate_controllers(defs: dict[str, Any]) -> None:
    """``roce.cc`` names the built-in and registered rate controllers, and
    ``roce.cc_params`` follows the JSON Schema of the one named."""
    from fabricsim.schema import extensions

    roce = defs.get("Roce")
    if roce is None:
        return
    names = list(extensions.rate_controllers())
    roce["properties"]["cc"]["enum"] = names
    rules = []
    for name in names:
        if name in extensions.BUILTIN_RATE_CONTROLLERS:
            continue
        params = extensions.schema("rate_cc", name)
        rules.append(
            {
                "if": {"properties": {"cc": {"const": name}}, "required": ["cc"]},
                "then": {"properties": {"cc_params": {"anyOf": [params, {"type": "null"}]}}},
            }
        )
    if rules:
        roce["allOf"] = roce.get("allOf", []) + rules


def scenario_json_schema_text() -> str:
    """:func:`scenario_json_schema` as indented JSON text (stable key order)."""
    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"
