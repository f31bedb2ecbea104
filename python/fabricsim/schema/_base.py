"""Shared plumbing of the scenario schema: error reporting, quantity types and the model base.

Every schema section subclasses :class:`Model` (unknown keys are rejected
with the allowed ones) and uses the field types defined here for quantities
written with units: :data:`Time` and :data:`Duration` (held in ps),
:data:`Rate` (bit/s), :data:`Size`, :data:`Overhead`, :data:`ByteCount` and
:data:`FrameSize` (bytes), :data:`Load` (a fraction). A validator that finds
problems at several field paths raises :func:`issues_error`; the loader turns
every problem into one line of a :class:`~fabricsim.errors.ScenarioError`
naming the dotted field path (:func:`validation_issues`).
"""

import importlib
from typing import Annotated, Any, Callable, Optional, Union, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ModelWrapValidatorHandler,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError, core_schema

from fabricsim import gcpause, units
from fabricsim.errors import unknown_key, unknown_value

__all__ = [
    "ByteCount",
    "Count32",
    "DEFERRED_MARK",
    "DeferredModel",
    "Duration",
    "Energy",
    "FrameSize",
    "HeaderSize",
    "Overhead32",
    "PacketSize",
    "Size32",
    "U32_MAX",
    "Load",
    "MAX_RATE",
    "KindModel",
    "Model",
    "NodeList",
    "Overhead",
    "Power",
    "Rate",
    "Size",
    "Time",
    "U64_MAX",
    "as_time",
    "deferred",
    "issues_error",
    "kind_of",
    "kinds",
    "one_of",
    "quantity",
    "show",
    "validation_issues",
]

U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1
"""Upper bounds of the core's integer fields (docs/contract.md): a count or size
the core holds in 32 bits is bounded here, so that it is rejected at its field."""

MAX_RATE = 100 * 10**12
"""Fastest data rate of a scenario (100 Tbit/s; docs/scenarios.md "Limits"):
62 times the fastest Ethernet port (1.6 Tbit/s), about one switch chip's whole
capacity, and a rate the 1 ps clock still resolves (a 64-byte frame takes
5.12 ps). Faster rates round every frame's serialization up to about 1 ps and
a source sends a frame per picosecond: a run that practically never ends."""

# --------------------------------------------------------------------------
# Error plumbing


_ISSUES = "fabricsim_issues"


def issues_error(*issues: tuple[str, str]) -> PydanticCustomError:
    """A validation error holding issues at paths relative to the value being validated."""
    return PydanticCustomError(
        _ISSUES,
        "{message}",
        {"message": "; ".join(f"{path}: {message}" for path, message in issues), "issues": list(issues)},
    )


def show(value: Any) -> str:
    """Render an input value in messages the way it would appear in YAML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _join_path(base: str, relative: str) -> str:
    if not base or not relative:
        return base or relative
    return base + relative if relative.startswith("[") else f"{base}.{relative}"


def _loc_path(loc: tuple[Union[int, str], ...], data: Any) -> str:
    """Dotted path of a pydantic error location, without discriminator tags.

    Pydantic inserts the tag of a discriminated union (``'star'``) into the
    location; it is recognised by walking the input alongside the location.
    """
    path = ""
    node = data
    for item in loc:
        if isinstance(node, dict) and item not in node and node.get("kind") == item:
            continue
        path = _join_path(path, f"[{item}]" if isinstance(item, int) else str(item))
        if isinstance(node, dict) and item in node:
            node = node[item]
        elif isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node):
            node = node[item]
        else:
            node = None
    return path


def _error_message(error: ErrorDetails) -> str:
    """A short, pydantic-free message for one validation error."""
    kind = error["type"]
    ctx = error.get("ctx", {})
    got = show(error.get("input"))
    bounds = {
        "greater_than": ">",
        "greater_than_equal": ">=",
        "less_than": "<",
        "less_than_equal": "<=",
    }
    if kind == "missing":
        return "required field is missing"
    if kind == "value_error":
        return str(ctx["error"])
    if kind in bounds:
        limit = next(iter(ctx.values()))
        return f"must be {bounds[kind]} {limit} (got {got})"
    expected = {
        "int_type": "an integer",
        "string_type": "a string",
        "bool_type": "true or false",
        "list_type": "a list",
        "dict_type": "a mapping",
        "model_type": "a mapping",
        "model_attributes_type": "a mapping",
    }
    if kind in expected:
        return f"expected {expected[kind]}, got {got}"
    if kind == "finite_number":
        return f"must be a finite number (got {got})"
    if kind in ("float_type", "float_parsing"):
        return f"expected a number, got {got}"
    if kind in ("too_short", "string_too_short"):
        return "must not be empty"
    return str(error["msg"])


def validation_issues(exc: ValidationError, data: Any) -> list[tuple[str, str]]:
    issues: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        path = _loc_path(error["loc"], data)
        if error["type"] == _ISSUES:
            issues.extend((_join_path(path, relative), message) for relative, message in error["ctx"]["issues"])
        else:
            issues.append((path, _error_message(error)))
    return issues


# --------------------------------------------------------------------------
# Field types


def quantity(
    parse: Callable[[Any], int], fmt: Callable[[int], str], minimum: int, maximum: Optional[int] = None
) -> PlainValidator:
    """Validator parsing a unit string and checking its range."""

    def validate(value: Any) -> int:
        number = parse(value)
        if number < minimum:
            bound = "> 0" if minimum == 1 else f">= {fmt(minimum)}"
            raise ValueError(f"must be {bound} (got {show(value)})")
        if maximum is not None and number > maximum:
            raise ValueError(f"must be <= {fmt(maximum)} (got {show(value)})")
        return number

    return PlainValidator(validate)


def as_time(ps: int) -> str:
    return units.format_time(ps)


class _BuiltOnce:
    """Annotation of a field type used by many fields (the quantities below): its core schema is
    generated the first time a field needs it and the same schema is given to every later field,
    instead of pydantic applying the type's validator, serializer and JSON Schema to each field
    anew (about 0.1 ms a field, most of the schema classes' build time at import)."""

    __slots__ = ("source", "schema")

    def __init__(self, source: Any) -> None:
        self.source = source
        self.schema: Optional[core_schema.CoreSchema] = None

    def __get_pydantic_core_schema__(self, _source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        if self.schema is None:
            self.schema = handler.generate_schema(self.source)
        return self.schema


def built_once(base: type, *annotations: Any) -> Any:
    """``Annotated[base, *annotations]`` whose core schema is generated once for all its fields."""
    return Annotated[base, _BuiltOnce(Annotated[(base, *annotations)])]


_TIME_TEXT = PlainSerializer(as_time, return_type=str)
_RATE_TEXT = PlainSerializer(units.format_rate, return_type=str)
_SIZE_TEXT = PlainSerializer(units.format_size, return_type=str)

# JSON Schema of the quantities (``fabricsim schema``): a string with a unit,
# matched by a pattern an editor can check as you type, or a bare number.
_NUMBER_TEXT = r"\s*\+?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*"
TIME_PATTERN = f"^({_NUMBER_TEXT}(ps|ns|us|µs|μs|ms|s)|\\s*0+(\\.0*)?)\\s*$"
RATE_PATTERN = f"^{_NUMBER_TEXT}([kKmMgGtT]?bps|[kKmMgGtT])?\\s*$"
SIZE_PATTERN = f"^{_NUMBER_TEXT}(B|KB|kB|MB|GB|TB|KiB|MiB|GiB|TiB)?\\s*$"
PERCENT_PATTERN = f"^{_NUMBER_TEXT}%\\s*$"
#: A load: more than 0 % and at most 100 %.
LOAD_PATTERN = r"^\s*\+?(100(\.0*)?|\d{1,2}(\.\d*)?|\.\d+)\s*%\s*$"


def _unit_schema(description: str, pattern: str, bare: dict[str, Any]) -> WithJsonSchema:
    return WithJsonSchema(
        {"description": description, "anyOf": [{"type": "string", "pattern": pattern}, bare]}
    )


def quantity_limits(minimum: int, maximum: Optional[int]) -> dict[str, Any]:
    limits: dict[str, Any] = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        limits["maximum"] = maximum
    return limits


_TIME_SCHEMA = _unit_schema("a time like '10us' (ps, ns, us, ms, s); 0 may omit the unit", TIME_PATTERN, {"const": 0})

Time = built_once(int, quantity(units.parse_time, as_time, 0), _TIME_TEXT, _TIME_SCHEMA)
"""A time >= 0, held in picoseconds, written like ``500ns``."""
Duration = built_once(int, quantity(units.parse_time, as_time, 1), _TIME_TEXT, _TIME_SCHEMA)
"""A time > 0, held in picoseconds."""
Rate = built_once(
    int,
    quantity(units.parse_rate, units.format_rate, 1, MAX_RATE),
    _RATE_TEXT,
    _unit_schema("a data rate like '100Gbps' (bps, Kbps, Mbps, Gbps, Tbps); a bare number is bit/s", RATE_PATTERN,
                 quantity_limits(1, MAX_RATE)),
)
"""A data rate > 0 and at most :data:`MAX_RATE` (100 Tbps), held in bit/s, written like ``100Gbps``."""


def _size_schema(minimum: int, maximum: Optional[int] = None) -> WithJsonSchema:
    return _unit_schema(
        "a size like '1500B', '256KB' or '32MiB'; a bare number is bytes", SIZE_PATTERN,
        quantity_limits(minimum, maximum),
    )


Size = built_once(int, quantity(units.parse_size, units.format_size, 1), _SIZE_TEXT, _size_schema(1))
"""A size > 0, held in bytes, written like ``1MB``."""
Overhead = built_once(int, quantity(units.parse_size, units.format_size, 0), _SIZE_TEXT, _size_schema(0))
"""A size >= 0, held in bytes."""
FrameSize = built_once(
    int, quantity(units.parse_size, units.format_size, 64, 65535), _SIZE_TEXT, _size_schema(64, 65535)
)
"""An Ethernet frame size between 64 and 65535 bytes."""
Size32 = built_once(int, quantity(units.parse_size, units.format_size, 1, U32_MAX), _SIZE_TEXT, _size_schema(1, U32_MAX))
"""A size > 0 the core holds in 32 bits (cells, quanta), at most 4294967295 bytes."""
Overhead32 = built_once(
    int, quantity(units.parse_size, units.format_size, 0, U32_MAX), _SIZE_TEXT, _size_schema(0, U32_MAX)
)
"""A size >= 0 the core holds in 32 bits (per-packet and per-frame overheads)."""
HeaderSize = built_once(int, quantity(units.parse_size, units.format_size, 0, 65535), _SIZE_TEXT, _size_schema(0, 65535))
"""Header bytes of a protocol: 0 to 65535."""
PacketSize = built_once(
    int, quantity(units.parse_size, units.format_size, 1, 65535), _SIZE_TEXT, _size_schema(1, 65535)
)
"""A packet size (an MTU): 1 to 65535 bytes."""
Power = built_once(
    int,
    quantity(units.parse_power, units.format_power, 0),
    PlainSerializer(units.format_power, return_type=str),
    WithJsonSchema({"description": "a power like '120W' or '350mW'", "type": "string"}),
)
"""A power >= 0, held in microwatts, written like ``120W``."""
Energy = built_once(
    int,
    quantity(units.parse_energy, units.format_energy, 0),
    PlainSerializer(units.format_energy, return_type=str),
    WithJsonSchema({"description": "an energy like '50pJ'", "type": "string"}),
)
"""An energy >= 0, held in femtojoules, written like ``50pJ``."""


def one_of(choices: Any) -> BeforeValidator:
    """Validator rejecting values outside the ``Literal`` ``choices``, listing the allowed ones."""
    allowed = get_args(choices)

    def validate(value: Any) -> Any:
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(unknown_value(value, allowed))
        return value

    return BeforeValidator(validate)


def kind_of(*models: type[BaseModel]) -> BeforeValidator:
    """Validator checking the ``kind`` key of a discriminated union before dispatch."""
    allowed = [tag for model in models for tag in get_args(model.model_fields["kind"].annotation)]
    choices = ", ".join(allowed)

    def validate(value: Any) -> Any:
        if isinstance(value, dict):
            if "kind" not in value:
                raise issues_error(("kind", f"required field is missing; allowed: {choices}"))
            if value["kind"] not in allowed:
                raise issues_error(("kind", unknown_value(value["kind"], allowed)))
        return value

    return BeforeValidator(validate)


def _listify(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


NodeList = Annotated[
    list[str],
    BeforeValidator(_listify),
    Field(min_length=1),
    WithJsonSchema(
        {
            "description": "a node name or a list of them",
            "anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
        }
    ),
]
"""One node name or a non-empty list of them."""

ByteCount = built_once(int, quantity(units.parse_size, units.format_size, 0), _SIZE_TEXT, _size_schema(0))
"""A size >= 0, held in bytes (thresholds, offsets)."""

Count32 = Annotated[int, Field(ge=1, le=U32_MAX)]
"""A count >= 1 the core holds in 32 bits."""


def _load_fraction(value: Any) -> float:
    """An offered load: a percentage (``"60%"``) or a fraction in (0, 1]."""
    if isinstance(value, str):
        fraction = units.parse_percent(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        fraction = float(value)
    else:
        raise ValueError(f"expected a load like '60%', got {show(value)}")
    if not 0 < fraction <= 1:
        raise ValueError(f"a load must be > 0% and <= 100% (got {show(value)})")
    return fraction


Load = built_once(
    float,
    PlainValidator(_load_fraction),
    PlainSerializer(units.format_percent, return_type=str),
    _unit_schema("an offered load like '60%' (or a fraction in (0, 1])", LOAD_PATTERN,
                 {"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
)
"""An offered load, written like ``60%``, held as a fraction in (0, 1]."""


# --------------------------------------------------------------------------
# The model base


class Model(BaseModel):
    """Strict model rejecting unknown keys with the list of allowed ones."""

    # NaN and infinities are no scenario values: rejected at their field.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    @model_validator(mode="wrap")
    @classmethod
    def _known_keys_only(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        """Report unknown keys with the allowed ones, together with the other problems."""
        if not isinstance(data, dict):
            return handler(data)
        allowed = [field.alias or name for name, field in cls.model_fields.items()]
        unknown = [key for key in data if key not in allowed]
        if not unknown:
            return handler(data)
        known = {key: value for key, value in data.items() if key in allowed}
        issues = []
        try:
            handler(known)
        except ValidationError as exc:
            issues = validation_issues(exc, known)
        issues.extend((str(key), unknown_key(key, allowed)) for key in unknown)
        raise issues_error(*issues)


# --------------------------------------------------------------------------
# Sections built on first use


#: Key in the core-schema metadata of a deferred section (the JSON Schema
#: generator gives such a field no title of its own, as for a nested model).
DEFERRED_MARK = "fabricsim_deferred"


class DeferredModel(Model):
    """A model of an optional section few scenarios use (pipelines, host
    models, host egress and port shapers, RoCE, link failures, capture taps,
    packet latency and TCP traces, multicast groups): its validator is built
    the first time a scenario has such a section (:func:`deferred`), not when
    the package is imported. Generating pydantic's validators is most of the
    schema's import time, and these sections hold more than half of its
    fields."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        _DEFERRED.append(cls)


#: Every :class:`DeferredModel` class, in definition order (a section's parts before the section).
_DEFERRED: list[type[DeferredModel]] = []


def _build_deferred() -> None:
    """Build the validators and serializers of every :class:`DeferredModel` class.

    In definition order, so that a section reuses its parts' schemas instead
    of generating them again."""
    if all(cls.__pydantic_complete__ for cls in _DEFERRED):
        return
    with gcpause.paused():
        for cls in _DEFERRED:
            if not cls.__pydantic_complete__:
                cls.model_rebuild()


class _Deferred:
    """Field type of a :class:`DeferredModel`: validates and serializes through
    the model's own (deferred) validator and serializer, so error paths,
    dumps and the JSON Schema are those of a plain nested model. The model
    may be given as ``"module:Name"``: its module is then imported on first
    use too."""

    def __init__(self, model: Union[type[DeferredModel], str]) -> None:
        self._model = model

    @property
    def model(self) -> type[DeferredModel]:
        if isinstance(self._model, str):
            module, _, name = self._model.partition(":")
            with gcpause.paused():
                self._model = getattr(importlib.import_module(module), name)
        return self._model

    def _validate(self, value: Any) -> Any:
        _build_deferred()
        return self.model.model_validate(value)

    @staticmethod
    def _serialize(value: Any, info: core_schema.SerializationInfo) -> Any:
        _build_deferred()
        return value.model_dump(
            mode=info.mode,
            by_alias=bool(info.by_alias),
            exclude_unset=info.exclude_unset,
            exclude_defaults=info.exclude_defaults,
            exclude_none=info.exclude_none,
            round_trip=info.round_trip,
        )

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            self._validate,
            serialization=core_schema.plain_serializer_function_ser_schema(self._serialize, info_arg=True),
            metadata={DEFERRED_MARK: True},
        )

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> Any:
        _build_deferred()
        # Through the generator itself: the model is a definition of its own ($ref), as when nested.
        return handler.generate_json_schema.generate_inner(self.model.__pydantic_core_schema__)


def deferred(model: Union[type[DeferredModel], str]) -> Any:
    """``model`` as a field type whose validator is built on first use
    (:class:`DeferredModel`); given as ``"module:Name"``, the module is
    imported on first use as well (the field's type is then ``Any`` to type
    checkers)."""
    return Annotated[Any if isinstance(model, str) else model, _Deferred(model)]


# --------------------------------------------------------------------------
# Kinds of a union built on first use


class KindModel(Model):
    """A kind of a discriminated union (a traffic entry, a topology): its
    validator is built the first time a scenario has that kind
    (:func:`kinds`), not when the package is imported. A scenario uses one
    topology and a few traffic kinds; the others' validators are most of what
    importing the schema would build for nothing."""

    model_config = ConfigDict(defer_build=True)


def _built(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` with its validator and serializer built."""
    if not model.__pydantic_complete__:
        with gcpause.paused():
            model.model_rebuild()
    return model


class _Kinds:
    """Field type of a union of :class:`KindModel` classes told apart by their
    ``kind``: the entry is validated by its kind's own validator, built on
    first use, and serialized by its own serializer. Error paths, messages,
    dumps and the JSON Schema are those of pydantic's discriminated union of
    the same models (``Field(discriminator="kind")`` behind :func:`kind_of`)."""

    def __init__(self, models: tuple[type[KindModel], ...]) -> None:
        self.models = models
        self.by_kind = {tag: model for model in models for tag in get_args(model.model_fields["kind"].annotation)}
        self.check_kind = kind_of(*models).func

    def _validate(self, value: Any) -> Any:
        if isinstance(value, self.models):  # an instance, as the union takes one: as it is
            return value
        value = self.check_kind(value)
        if not isinstance(value, dict):
            raise issues_error(("", f"expected a mapping, got {show(value)}"))
        return _built(self.by_kind[value["kind"]]).model_validate(value)

    @staticmethod
    def _serialize(value: Any, info: core_schema.SerializationInfo) -> Any:
        return _built(type(value)).__pydantic_serializer__.to_python(
            value,
            mode=info.mode,
            by_alias=info.by_alias,
            exclude_unset=info.exclude_unset,
            exclude_defaults=info.exclude_defaults,
            exclude_none=info.exclude_none,
            round_trip=info.round_trip,
        )

    def union_schema(self) -> core_schema.CoreSchema:
        """The core schema of the discriminated union of the kinds (every kind built)."""
        return core_schema.tagged_union_schema(
            {tag: _built(model).__pydantic_core_schema__ for tag, model in self.by_kind.items()},
            discriminator="kind",
        )

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            self._validate,
            serialization=core_schema.plain_serializer_function_ser_schema(self._serialize, info_arg=True),
        )

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> Any:
        return handler(self.union_schema())


def kinds(*models: type[KindModel]) -> Any:
    """A field type accepting any of ``models`` by its ``kind`` (:class:`_Kinds`)."""
    return Annotated[Union[models], _Kinds(models)]  # type: ignore[valid-type]
