"""The one JSON reader of every API: bounded size, bounded depth, text the database can store.

- Size: at most the route's body limit is read (`request_body_limit`); more is 413 `payload_too_large`,
  also when `Content-Length` is absent or understated.
- Depth: arrays and objects nested deeper than `JSON_MAX_DEPTH` are refused before `json` recurses into
  them (deep input would otherwise be a RecursionError): 400 `malformed_json`.
- Values: NaN, Infinity and integers beyond 64 bits are not JSON a client means; strings (keys too) holding
  NUL or an unpaired surrogate cannot be stored (PostgreSQL text refuses NUL; UTF-8 refuses surrogates):
  400 `validation_error` naming the field.

`JSONParser` serves OTP and the warehouse (snake_case), `CamelCaseJSONParser` the platform.
"""
from __future__ import annotations

import inspect
import json
import re
from itertools import accumulate

from django.conf import settings
from djangorestframework_camel_case import parser as camel
from djangorestframework_camel_case.util import underscoreize
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from config.errors import PayloadTooLarge, ValidationFailed

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_INT64 = 2**63


def request_body_limit(view) -> int:
    """Bytes a route accepts (a view instance, class or function): `REQUEST_BODY_LIMITS` names the few views
    that need more than DATA_UPLOAD_MAX_MEMORY_SIZE."""
    default = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if view is None:
        return default
    if not isinstance(view, type) and not inspect.isfunction(view):
        view = type(view)
    return settings.REQUEST_BODY_LIMITS.get(f"{view.__module__}.{view.__qualname__}", default)


def _depth(text: str) -> int:
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(_STEP[c] for c in brackets), default=0)


def _int(raw: str) -> int:
    value = int(raw)
    if not -_INT64 <= value < _INT64:
        raise ValueError(f"integer out of range: {raw[:30]}")
    return value


def _float(raw: str) -> float:
    value = float(raw)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number out of range: {raw[:30]}")
    return value


def _constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _unstorable(value, path: str = "") -> str | None:
    """The path of the first string (or key) the database cannot store; the depth is already bounded."""
    if isinstance(value, str):
        return path or "body" if _UNSTORABLE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if _UNSTORABLE.search(key):
                return path or "body"
            found = _unstorable(item, here)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _unstorable(item, f"{path}[{index}]")
            if found:
                return found
    return None


def json_text_load(text: str):
    """Parse and check JSON text that did not come through a parser (a body a view reads itself, such as the
    analytics beacon): the depth and value rules of the module docstring. ValueError when it is not JSON or
    nested too deep; ValidationFailed naming the field for text the database cannot store."""
    max_depth = settings.JSON_MAX_DEPTH
    if _depth(text) > max_depth:
        raise ValueError(f"JSON nested deeper than {max_depth} levels.")
    try:
        data = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except ValueError as exc:
        raise ValueError(f"JSON parse error - {exc}") from None
    path = _unstorable(data)
    if path:
        raise ValidationFailed(f"`{path}` contains a NUL character or invalid Unicode.",
                               details={path: ["Contains a NUL character or invalid Unicode."]})
    return data


def json_load(stream, parser_context=None):
    """Read and check one JSON body (see the module docstring)."""
    parser_context = parser_context or {}
    limit = request_body_limit(parser_context.get("view"))
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise PayloadTooLarge(limit)
    try:
        text = raw.decode(parsers.get_encoding(parser_context))  # text codecs only (no bz2 bombs)
    except UnicodeDecodeError as exc:
        raise ParseError(f"JSON parse error - {exc}")
    try:
        return json_text_load(text)
    except ValidationFailed:
        raise
    except ValueError as exc:
        raise ParseError(str(exc))


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        return json_load(stream, parser_context)


class CamelCaseJSONParser(camel.CamelCaseJSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        return underscoreize(json_load(stream, parser_context), **self.json_underscoreize)
