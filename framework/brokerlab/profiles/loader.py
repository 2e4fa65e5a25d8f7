"""Load a profile: layer ``--set``, environment, file, includes and defaults, then validate.

Every layer is a mapping ``key -> (raw text, origin)``. The broker keys and each plugin's
``sim.<namespace>.*`` keys are validated in one pass; the layers reach a
:class:`~pydantic_settings.BaseSettings` model as one settings source each, so pydantic-settings
applies the precedence. Errors name the file, line, key, value and the allowed values.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
import os
import re
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from brokerlab.errors import Origin, PluginError, ProfileError, did_you_mean
from brokerlab.inputs import input_file_problem
from brokerlab.profiles.properties import PropertyLine, read_properties
from brokerlab.profiles.ready import ready_profile, ready_profile_beside, ready_profiles
from brokerlab.records import JAVA_INT, JavaType, SettingsRecord

__all__ = [
    "ENV_PREFIX",
    "INCLUDE_KEY",
    "KeyInfo",
    "Mode",
    "Profile",
    "allowed_values",
    "load_profile",
    "profile_from_values",
    "profile_keys",
    "property_text",
]

Mode = Literal["strict", "lenient"]
INCLUDE_KEY = "sim.include"
ENV_PREFIX = "BROKERLAB_"
_SET = Origin("--set")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
# Double.valueOf: decimal or hexadecimal with an optional f/d suffix, NaN, Infinity; no '_'.
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)"
)
# String.trim, which Pulsar and Kafka apply to values, removes every character up to U+0020 and
# nothing else: a no-break space stays (and makes a number invalid), unlike with str.strip().
_JAVA_TRIM = "".join(chr(code) for code in range(0x21))
_SEQUENCES = (list, tuple, set, frozenset)


# --- the keys a profile may set ----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class KeyInfo:
    """One key a profile may set: a broker field, or a plugin field under ``sim.<namespace>.``."""

    key: str
    name: str
    field: FieldInfo
    namespace: str | None = None

    @property
    def allowed(self) -> str:
        """The allowed values in words, e.g. ``a number from 0.0 to 1.0``."""
        return allowed_values(self.field)

    @property
    def description(self) -> str:
        return self.field.description or ""

    @property
    def section(self) -> str | None:
        """The ``section`` of ``json_schema_extra``, if the field has one."""
        extra = self.field.json_schema_extra
        section = extra.get("section") if isinstance(extra, dict) else None
        return str(section) if section else None

    @property
    def default(self) -> Any:
        """The default value (``None`` for a required field)."""
        if self.field.is_required():
            return None
        return self.field.get_default(call_default_factory=True)


def profile_keys(
    model: type[BaseModel] | None = None, plugin_settings: Sequence[SettingsRecord] = ()
) -> dict[str, KeyInfo]:
    """Every key a profile may set: the model's fields in order, then each plugin's fields."""
    return dict(_keys(_broker_model(model), tuple(plugin_settings)))


@functools.cache
def _keys(model: type[BaseModel], records: tuple[SettingsRecord, ...]) -> dict[str, KeyInfo]:
    keys: dict[str, KeyInfo] = {}
    for name, info in model.model_fields.items():
        keys[_field_key(name, info)] = KeyInfo(_field_key(name, info), name, info)
    namespaces: dict[str, SettingsRecord] = {}
    owners: dict[str | None, str] = {None: f"the broker settings {model.__qualname__}"}
    for record in records:
        if record.namespace in namespaces:
            first = namespaces[record.namespace].model.__qualname__
            raise PluginError(
                f"is claimed by two plugin settings models: {first} and "
                f"{record.model.__qualname__}",
                key=record.key_prefix,
            )
        namespaces[record.namespace] = record
        owners[record.namespace] = (
            f"the plugin settings namespace {record.namespace!r} ({record.model.__qualname__})"
        )
        for name, info in record.model.model_fields.items():
            key = f"{record.key_prefix}{_field_key(name, info)}"
            if key in keys:
                clash = keys[key]
                raise PluginError(
                    f"is defined twice: by {owners[clash.namespace]} (field {clash.name}) and by "
                    f"{owners[record.namespace]} (field {name})",
                    key=key,
                )
            keys[key] = KeyInfo(key, name, info, record.namespace)
    return keys


def _field_key(name: str, info: FieldInfo) -> str:
    return info.alias or name


def _broker_model(model: type[BaseModel] | None) -> type[BaseModel]:
    if model is not None:
        return model
    from brokerlab.profiles.model import BrokerSettings  # late: the model imports nothing of ours

    return BrokerSettings


# --- field types: allowed values, Pulsar spellings, text form ------------------------------------


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The type under ``Optional``/``Annotated``, and the metadata found on the way."""
    metadata: list[Any] = []
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *extra = get_args(annotation)
            metadata.extend(extra)
        elif origin in (Union, types.UnionType):
            args = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(args) != 1:
                return annotation, metadata
            annotation = args[0]
        else:
            return annotation, metadata


def _is_sequence(annotation: Any) -> bool:
    return annotation in _SEQUENCES or get_origin(annotation) in _SEQUENCES


def _kind_text(annotation: Any) -> str:
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer"
    if annotation is float:
        return "a number"
    if annotation is str:
        return "any text"
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(str(choice) for choice in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "one of " + ", ".join(str(member.value) for member in annotation)
    if _is_sequence(annotation):
        args = get_args(annotation)
        item = _unwrap(args[0])[0] if args else str
        each = "" if item is str else f", each {_kind_text(item)}"
        return f"a comma-separated list{each}"
    return getattr(annotation, "__name__", str(annotation))


def _bounds_text(metadata: Iterable[Any]) -> str:
    low = high = ""
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            low = f">= {item.ge}"
        elif isinstance(item, annotated_types.Gt):
            low = f"> {item.gt}"
        elif isinstance(item, annotated_types.Le):
            high = f"<= {item.le}"
        elif isinstance(item, annotated_types.Lt):
            high = f"< {item.lt}"
    if low.startswith(">=") and high.startswith("<="):
        return f"from {low[3:]} to {high[3:]}"
    return " and ".join(part for part in (low, high) if part)


def allowed_values(info: FieldInfo) -> str:
    """The values a field accepts, in words: ``an integer >= 0``, ``true or false``, ..."""
    annotation, metadata = _unwrap(info.annotation)
    items = [*info.metadata, *metadata]
    if annotation is int:
        # A bound at the limit of the key's Java type (a key Pulsar does not bound) adds nothing.
        java = _java_type(info, metadata)
        items = [item for item in items if not _at_java_limit(item, java)]
    bounds = _bounds_text(items)
    text = _kind_text(annotation)
    return f"{text} {bounds}" if bounds else text


def _at_java_limit(item: object, java: JavaType) -> bool:
    return (isinstance(item, annotated_types.Ge) and item.ge == java.low) or (
        isinstance(item, annotated_types.Le) and item.le == java.high
    )


class _Rejected:
    """Stands for a value Pulsar would not parse; no pydantic type accepts it, so it fails there."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return repr(self.text)


class _OutOfJavaRange(_Rejected):
    """An integer beyond the Java type Pulsar parses the key as: Pulsar fails to start on it."""

    def __init__(self, text: str, java: JavaType) -> None:
        super().__init__(text)
        self.java = java

    def allowed(self, info: FieldInfo) -> str:
        """The field's allowed values, bounded by its Java type on the side the value crossed."""
        high = int(self.text) > self.java.high
        bound = f"at most {self.java.high}" if high else f"at least {self.java.low}"
        return f"{allowed_values(info)}, {bound} (a Java {self.java.name})"


def _java_type(info: FieldInfo, metadata: Iterable[Any] = ()) -> JavaType:
    """The Java type an integer field is parsed as: ``int`` unless annotated (``JavaLong``)."""
    found = (item for item in [*info.metadata, *metadata] if isinstance(item, JavaType))
    return next(found, JAVA_INT)


def _coerce(raw: str, info: FieldInfo) -> object:
    """Turn profile text into what the field validates, accepting Pulsar's spellings only."""
    annotation, metadata = _unwrap(info.annotation)
    text = raw.strip(_JAVA_TRIM)
    if _is_sequence(annotation):
        args = get_args(annotation)
        item, item_metadata = _unwrap(args[0]) if args else (str, [])
        java = _java_type(info, [*metadata, *item_metadata])
        return [
            _coerce_scalar(part.strip(_JAVA_TRIM), item, java)
            for part in text.split(",")
            if part.strip(_JAVA_TRIM)
        ]
    return _coerce_scalar(text, annotation, _java_type(info, metadata))


def _coerce_scalar(text: str, annotation: Any, java: JavaType) -> object:
    # pydantic alone would take "yes" as true and "1_000" or "100.0" as integers; Pulsar does not.
    if annotation is bool:
        lowered = text.lower()
        return {"true": True, "false": False}.get(lowered, _Rejected(text))
    if annotation is int:
        if not _JAVA_INT.fullmatch(text):
            return _Rejected(text)
        if not java.low <= int(text) <= java.high:
            return _OutOfJavaRange(text, java)
    if annotation is float:
        # pydantic alone would take "1_000", "inf" and "nan", and refuse "0.5d" and "0x1p-1".
        if not _JAVA_DOUBLE.fullmatch(text):
            return _Rejected(text)
        number = text.rstrip("fFdD")
        if "x" not in number.lower():
            return float(number)
        try:
            return float.fromhex(number)
        except OverflowError:  # Java rounds a hexadecimal too large for a double to infinity
            return float("-inf" if number.startswith("-") else "inf")
    return text


def property_text(value: Any) -> str:
    """A value as a profile writes it: ``true``/``false``, comma lists, empty for ``None``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return property_text(value.value)
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(property_text(item) for item in value)
    return str(value)


# --- layers ------------------------------------------------------------------------------------

_Entries = dict[str, tuple[str, Origin]]


@dataclass(frozen=True)
class _Layer:
    """One source of values, lowest precedence first in a list; files, env and ``--set``."""

    kind: Literal["file", "env", "set"]
    entries: _Entries


def _is_set(raw: str) -> bool:
    return bool(raw.strip())  # an empty value means "not set here"


def _file_layers(path: Path) -> list[_Layer]:
    """The file and its includes, lowest precedence first (includes before their includer)."""
    layers: list[_Layer] = []
    cache: dict[Path, list[PropertyLine]] = {}

    def visit(shown: Path, stack: tuple[tuple[Path, Origin], ...]) -> None:
        real = shown.resolve()
        if real not in cache:
            cache[real] = read_properties(shown)
        lines = cache[real]
        include = next((line for line in lines if line.key == INCLUDE_KEY), None)
        if include is not None:
            here = (*stack, (real, include.origin))
            for item in (part.strip() for part in include.value.split(",")):
                if item:
                    child = Path(os.path.normpath(shown.parent / item))
                    # A ready profile by name (sim.include=pulsar-4.2) where no such file is.
                    child = ready_profile_beside(child, item)
                    _check_include(child, include, here)
                    visit(child, here)
        layers.append(_Layer("file", {line.key: (line.value, line.origin) for line in lines}))

    visit(path, ())
    return layers


def _check_include(
    child: Path, include: PropertyLine, stack: tuple[tuple[Path, Origin], ...]
) -> None:
    real = child.resolve()
    allowed = "comma-separated profile paths (relative to this file) or ready profile names"
    for index, (seen, _) in enumerate(stack):
        if seen == real:
            chain = " -> ".join([*(str(origin) for _, origin in stack[index:]), str(child)])
            raise ProfileError(
                f"forms an include cycle: {chain}",
                origin=include.origin,
                key=INCLUDE_KEY,
                value=include.value,
            )
    problem = input_file_problem(child, "profile file")
    if problem is not None:
        raise ProfileError(
            f"names {str(child)!r}, which {problem}",
            origin=include.origin,
            key=INCLUDE_KEY,
            value=include.value,
            allowed=allowed,
        )


def _env_layer(keys: Iterable[str], environ: Mapping[str, str]) -> _Layer:
    """``BROKERLAB_<key>``, ``BROKERLAB_<key, _ for .>``, then ``<key>``: first non-empty wins."""
    entries: _Entries = {}
    for key in keys:
        if key == INCLUDE_KEY:
            continue  # includes are a property of files
        names = (ENV_PREFIX + key, ENV_PREFIX + key.replace(".", "_"), key)
        for name in dict.fromkeys(names):
            value = environ.get(name)
            if value is not None and _is_set(value):
                entries[key] = (value, Origin(f"env {name}"))
                break
    return _Layer("env", entries)


def _set_layer(overrides: Mapping[str, str] | Iterable[str] | None) -> _Layer:
    """``--set`` values, as a mapping or as ``key=value`` strings."""
    if overrides is None:
        pairs: list[tuple[str, str]] = []
    elif isinstance(overrides, Mapping):
        pairs = [(str(key).strip(), str(value)) for key, value in overrides.items()]
    else:
        items = [overrides] if isinstance(overrides, str) else list(overrides)
        pairs = []
        for item in items:
            key, separator, value = item.partition("=")
            if not separator:
                raise ProfileError(
                    "is not of the form key=value", origin=_SET, value=item, allowed="key=value"
                )
            pairs.append((key.strip(), value))
    entries: _Entries = {}
    for key, value in pairs:
        if not key:
            raise ProfileError("has no key", origin=_SET, value=f"={value}", allowed="key=value")
        if key == INCLUDE_KEY:
            raise ProfileError("can only be set in a profile file", origin=_SET, key=key)
        entries[key] = (value, _SET)
    return _Layer("set", entries)


# --- validation --------------------------------------------------------------------------------


class _LayerSource(PydanticBaseSettingsSource):
    """One layer's values for one settings model, already keyed by alias."""

    def __init__(self, settings_cls: type[BaseSettings], values: Mapping[str, object]) -> None:
        super().__init__(settings_cls)
        self._values = dict(values)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        key = _field_key(field_name, field)
        return self._values.get(key), key, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._values)


def _validate(model: type[BaseModel], layers: Sequence[Mapping[str, object]]) -> BaseModel:
    """Validate layered values (lowest precedence first); raises pydantic's ValidationError."""
    if issubclass(model, BaseSettings):
        # Our layers are the only sources: the model's own env/dotenv sources would read
        # variables by other rules and lose every origin.
        sources = tuple(_LayerSource(model, values) for values in reversed(layers))
        return model(_build_sources=(sources, {}))
    merged: dict[str, object] = {}  # a plain pydantic model has no sources: same merge by hand
    for values in layers:
        merged.update(values)
    return model.model_validate(merged)


_PROBLEMS = {
    "int": "is not an integer",
    "float": "is not a number",
    "bool": "is not true or false",
    "literal_error": "is not one of the allowed values",
    "enum": "is not one of the allowed values",
    "greater_than": "is out of range",
    "greater_than_equal": "is out of range",
    "less_than": "is out of range",
    "less_than_equal": "is out of range",
    "finite_number": "is out of range",
    "missing": "must be set",
}


def _problem_text(error: Mapping[str, Any]) -> str:
    kind = str(error["type"])
    problem = _PROBLEMS.get(kind) or _PROBLEMS.get(kind.split("_")[0])
    return problem or "is invalid: " + str(error["msg"]).lower()


@dataclass(frozen=True)
class _Problem:
    order: tuple[int, int, int]
    error: ProfileError


# --- the profile -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """A validated profile: settings, plugin settings, where each value came from, unknown keys.

    ``settings`` is an instance of the model (``BrokerSettings`` unless another was given);
    ``plugin_settings`` maps each plugin namespace to its validated settings (defaults when
    unset); ``origins`` holds every key set explicitly; ``unmodelled`` the unknown keys of a
    lenient profile.
    """

    path: Path | None
    mode: Mode
    settings: Any
    plugin_settings: Mapping[str, BaseModel]
    origins: Mapping[str, Origin]
    unmodelled: Mapping[str, tuple[str, Origin]]
    _model: type[BaseModel] = field(repr=False, compare=False)
    _records: tuple[SettingsRecord, ...] = field(repr=False, compare=False)
    _layers: tuple[_Layer, ...] = field(repr=False, compare=False)

    def origin(self, key: str) -> Origin | None:
        """Where ``key`` was set, or ``None`` when it has its default."""
        if key in self.origins:
            return self.origins[key]
        unknown = self.unmodelled.get(key)
        return unknown[1] if unknown else None

    def namespaces_set(self) -> set[str | None]:
        """The owners of the keys set explicitly: plugin namespaces, ``None`` for broker keys."""
        keys = _keys(self._model, self._records)
        return {keys[key].namespace for key in self.origins if key in keys}

    def get(self, key: str) -> Any:
        """The effective value of a broker or plugin key, by its profile spelling."""
        info = _keys(self._model, self._records).get(key)
        if info is None:
            raise KeyError(key)
        owner = self.settings if info.namespace is None else self.plugin_settings[info.namespace]
        return getattr(owner, info.name)

    def case_typos(self) -> dict[str, str]:
        """Unmodelled keys that differ from a known key only in case, each with that key.

        Pulsar ignores such a key as silently as one it does not know, so a lenient profile
        loads it the same way; callers warn, since it is almost surely a typo.
        """
        known = {key.lower(): key for key in _keys(self._model, self._records)}
        return {key: known[key.lower()] for key in self.unmodelled if key.lower() in known}

    def resolved(self) -> dict[str, Any]:
        """Every known key and its effective value (JSON-ready): broker keys, then plugin keys."""
        dumps: dict[str | None, dict[str, Any]] = {None: self.settings.model_dump(mode="json")}
        for namespace, settings in self.plugin_settings.items():
            dumps[namespace] = settings.model_dump(mode="json")
        keys = _keys(self._model, self._records).values()
        broker = sorted(info.key for info in keys if info.namespace is None)
        plugin = sorted(info.key for info in keys if info.namespace is not None)
        by_key = {info.key: info for info in keys}
        return {key: dumps[by_key[key].namespace][by_key[key].name] for key in [*broker, *plugin]}

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the resolved settings: equal for profiles that behave the same."""
        canonical = json.dumps(self.resolved(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def with_overrides(self, overrides: Mapping[str, str] | Iterable[str]) -> Profile:
        """This profile with more ``--set`` values on top; files and environment are not re-read."""
        return _assemble(
            self.path, self.mode, self._model, self._records, (*self._layers, _set_layer(overrides))
        )


def load_profile(
    path: str | Path | None,
    overrides: Mapping[str, str] | Iterable[str] | None = None,
    *,
    plugin_settings: Sequence[SettingsRecord] = (),
    environ: Mapping[str, str] | None = None,
    mode: Mode | None = None,
    model: type[BaseModel] | None = None,
) -> Profile:
    """Load, layer and validate a profile.

    Precedence, highest first: ``overrides`` (``--set``; a mapping or ``key=value`` strings), the
    environment (``BROKERLAB_<key>``, ``BROKERLAB_<key with _ for .>``, or a variable named
    exactly as the key), the file at ``path``, its ``sim.include`` base profiles (the last listed
    wins), the model's defaults. An empty value in any layer falls through to the next.

    ``mode`` defaults to strict when the file (or an include) has a ``sim.`` key or there is no
    file, else lenient (a real broker.conf): lenient keeps unknown file keys in
    :attr:`Profile.unmodelled`. Unknown ``--set`` keys are always an error.

    Raises :class:`ProfileError` naming file, line, key, value and the allowed values; when there
    are several problems the first (in file order) is raised and the others are in its notes.
    """
    broker = _broker_model(model)
    records = tuple(plugin_settings)
    keys = _keys(broker, records)
    profile_path = None if path is None else ready_profile(path) or Path(path)
    if profile_path is not None and not profile_path.exists():
        raise ProfileError(
            "profile file not found",
            origin=Origin.file(profile_path),
            allowed="a profile file, or a ready profile by name: " + ", ".join(ready_profiles()),
        )
    files = [] if profile_path is None else _file_layers(profile_path)
    if mode is None:
        is_ours = any(key.startswith("sim.") for layer in files for key in layer.entries)
        mode = "strict" if is_ours or profile_path is None else "lenient"
    elif mode not in ("strict", "lenient"):
        raise ValueError(f"mode must be 'strict' or 'lenient', not {mode!r}")
    env = _env_layer(keys, os.environ if environ is None else environ)
    layers = (*files, env, _set_layer(overrides))
    return _assemble(profile_path, mode, broker, records, layers)


def profile_from_values(
    values: Mapping[str, str],
    *,
    plugin_settings: Sequence[SettingsRecord] = (),
    origin: str = "given values",
) -> Profile:
    """A strict profile whose set keys are ``values`` (profile text) on the model's defaults.

    No file and no environment is read; ``sim.include`` is taken as a value like any other (the
    files it names are not read), so the values of a profile's set keys rebuild a profile with
    its fingerprint. Raises :class:`ProfileError` like :func:`load_profile`.
    """
    where = Origin(origin)
    layer = _Layer("set", {str(key): (str(value), where) for key, value in values.items()})
    return _assemble(None, "strict", _broker_model(None), tuple(plugin_settings), (layer,))


def _assemble(
    path: Path | None,
    mode: Mode,
    model: type[BaseModel],
    records: tuple[SettingsRecord, ...],
    layers: tuple[_Layer, ...],
) -> Profile:
    keys = _keys(model, records)
    problems: list[_Problem] = []
    winners: dict[str, tuple[str, Origin, int]] = {}
    unmodelled: dict[str, tuple[str, Origin]] = {}
    for rank, layer in enumerate(layers):
        for key, (raw, origin) in layer.entries.items():
            if key in keys or key == INCLUDE_KEY:
                if _is_set(raw):
                    winners[key] = (raw, origin, rank)
            elif layer.kind == "file" and mode == "lenient":
                if _is_set(raw) or key not in unmodelled or not _is_set(unmodelled[key][0]):
                    unmodelled[key] = (raw, origin)
            else:
                where = "in --set" if layer.kind == "set" else "in a strict profile"
                error = ProfileError(
                    f"is not a known key {where}",
                    origin=origin,
                    key=key,
                    suggestions=did_you_mean(key, keys),
                )
                problems.append(_Problem((rank, origin.line or 0, 0), error))

    owners: dict[str | None, type[BaseModel]] = {None: model}
    owners.update({record.namespace: record.model for record in records})
    validated: dict[str | None, BaseModel] = {}
    for namespace, owner in owners.items():
        owned = {key: info for key, info in keys.items() if info.namespace == namespace}
        values = [_layer_values(layer, owned) for layer in layers]
        try:
            validated[namespace] = _validate(owner, values)
        except ValidationError as exc:
            problems.extend(_explain(exc, namespace, owned, winners, path))
        problems.extend(_covered_problems(owner, namespace, owned, layers, values, winners, path))
    if problems:
        problems.sort(key=lambda problem: problem.order)
        # A base included twice is two layers with the same lines: report each line once.
        unique = list({str(problem.error): problem.error for problem in problems}.values())
        first = unique[0]
        for other in unique[1:]:
            first.add_note(f"also: {other}")
        raise first

    settings = validated.pop(None)
    origins = {key: origin for key, (_, origin, _) in winners.items()}
    plugins = {namespace: value for namespace, value in validated.items() if namespace is not None}
    return Profile(path, mode, settings, plugins, origins, unmodelled, model, records, layers)


def _layer_values(layer: _Layer, owned: Mapping[str, KeyInfo]) -> dict[str, object]:
    """One layer's set values of the ``owned`` keys, keyed by alias, as the model validates them."""
    return {
        _field_key(info.name, info.field): _coerce(raw, info.field)
        for key, info in owned.items()
        if key in layer.entries and _is_set(raw := layer.entries[key][0])
    }


def _covered_problems(
    owner: type[BaseModel],
    namespace: str | None,
    owned: Mapping[str, KeyInfo],
    layers: Sequence[_Layer],
    values: Sequence[Mapping[str, object]],
    winners: Mapping[str, tuple[str, Origin, int]],
    path: Path | None,
) -> list[_Problem]:
    """Problems of the values a higher layer covers.

    pydantic-settings validates only the value that wins, but a bad value is an error wherever it
    is (a base profile, a file under ``--set``): each layer's covered values are validated alone,
    on the defaults, and only problems of those keys count (checks across keys need the winners).
    """
    problems: list[_Problem] = []
    for rank, (layer, layer_values) in enumerate(zip(layers, values, strict=True)):
        covered = {
            key: (raw, origin, rank)
            for key, (raw, origin) in layer.entries.items()
            if key in owned and _is_set(raw) and winners[key][2] != rank
        }
        if not covered:
            continue
        aliases = {_field_key(owned[key].name, owned[key].field) for key in covered}
        try:
            _validate(owner, [{a: v for a, v in layer_values.items() if a in aliases}])
        except ValidationError as exc:
            found = _explain(exc, namespace, owned, covered, path)
            problems.extend(problem for problem in found if problem.error.key in covered)
    return problems


def _namespace_key(namespace: str, owned: Mapping[str, KeyInfo]) -> str:
    """How a model-level problem names a plugin's keys: ``sim.<namespace>.*`` when they share
    that prefix, else the namespace (keys spelled in full, like Kafka's)."""
    prefix = f"sim.{namespace}."
    return f"{prefix}*" if all(key.startswith(prefix) for key in owned) else f"{namespace} keys"


def _explain(
    exc: ValidationError,
    namespace: str | None,
    owned: Mapping[str, KeyInfo],
    winners: Mapping[str, tuple[str, Origin, int]],
    path: Path | None,
) -> list[_Problem]:
    """Turn pydantic's errors into ProfileErrors located at the line that set each value."""
    by_alias = {_field_key(info.name, info.field): info for info in owned.values()}
    by_alias.update({info.name: info for info in owned.values()})
    last = 1 << 30  # problems without a line sort after those with one
    problems: list[_Problem] = []
    seen: set[str] = set()
    for error in exc.errors():
        loc = error["loc"]
        info = by_alias.get(str(loc[0])) if loc else None
        if info is None:  # a model-level check: no single key to blame
            where = None if path is None else Origin.file(path)
            text = str(error["msg"]).removeprefix("Value error, ")
            key = None if namespace is None else _namespace_key(namespace, owned)
            problems.append(
                _Problem((last, last, len(problems)), ProfileError(text, origin=where, key=key))
            )
            continue
        if info.key in seen:
            continue  # one problem per key (a union type reports once per member)
        seen.add(info.key)
        raw, origin, rank = winners.get(info.key, ("", None, last))
        bad = error.get("input")
        text = "is out of range" if isinstance(bad, _OutOfJavaRange) else _problem_text(error)
        allowed = bad.allowed(info.field) if isinstance(bad, _OutOfJavaRange) else info.allowed
        if len(loc) > 1 and isinstance(loc[1], int):
            text = f"has an invalid item {loc[1] + 1} ({bad!r}): it {text}"
        problem = ProfileError(
            text, origin=origin, key=info.key, value=raw.strip(_JAVA_TRIM), allowed=allowed
        )
        line = origin.line if origin is not None and origin.line is not None else 0
        problems.append(_Problem((rank, line, 0), problem))
    return problems
