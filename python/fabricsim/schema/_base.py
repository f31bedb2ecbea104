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

from typing import Annotated, Any, Callable, Optional, Union, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from fabricsim import units
from fabricsim.errors import unknown_key, unknown_value

__all__ = [
    "ByteCount",
    "Duration",
    "FrameSize",
    "Load",
    "Model",
    "NodeList",
    "Overhead",
    "Rate",
    "Size",
    "Time",
    "U64_MAX",
    "as_time",
    "issues_error",
    "kind_of",
    "one_of",
    "quantity",
    "show",
    "validation_issues",
]

U64_MAX = 2**64 - 1

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


_TIME_TEXT = PlainSerializer(as_time, return_type=str)
_RATE_TEXT = PlainSerializer(units.format_rate, return_type=str)
_SIZE_TEXT = PlainSerializer(units.format_size, return_type=str)

Time = Annotated[int, quantity(units.parse_time, as_time, 0), _TIME_TEXT]
"""A time >= 0, held in picoseconds, written like ``500ns``."""
Duration = Annotated[int, quantity(units.parse_time, as_time, 1), _TIME_TEXT]
"""A time > 0, held in picoseconds."""
Rate = Annotated[int, quantity(units.parse_rate, units.format_rate, 1), _RATE_TEXT]
"""A data rate > 0, held in bit/s, written like ``100Gbps``."""
Size = Annotated[int, quantity(units.parse_size, units.format_size, 1), _SIZE_TEXT]
"""A size > 0, held in bytes, written like ``1MB``."""
Overhead = Annotated[int, quantity(units.parse_size, units.format_size, 0), _SIZE_TEXT]
"""A size >= 0, held in bytes."""
FrameSize = Annotated[int, quantity(units.parse_size, units.format_size, 64, 65535), _SIZE_TEXT]
"""An Ethernet frame size between 64 and 65535 bytes."""


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


NodeList = Annotated[list[str], BeforeValidator(_listify), Field(min_length=1)]
"""One node name or a non-empty list of them."""

ByteCount = Annotated[int, quantity(units.parse_size, units.format_size, 0), _SIZE_TEXT]
"""A size >= 0, held in bytes (thresholds, offsets)."""


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


Load = Annotated[float, PlainValidator(_load_fraction), PlainSerializer(units.format_percent, return_type=str)]
"""An offered load, written like ``60%``, held as a fraction in (0, 1]."""


# --------------------------------------------------------------------------
# The model base


class Model(BaseModel):
    """Strict model rejecting unknown keys with the list of allowed ones."""

    model_config = ConfigDict(extra="forbid", strict=True)

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
