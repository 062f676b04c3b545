"""The `/v1` API's JSON renderer: snake_case keys out as camelCase, as djangorestframework-camel-case does, with each
key's conversion kept (a list of twenty projects converted the same few dozen keys with a regex 460 times)."""
from functools import lru_cache

from django.utils.encoding import force_str
from django.utils.functional import Promise
from djangorestframework_camel_case.util import camelize_re, is_iterable, underscore_to_camel
from rest_framework.renderers import JSONRenderer


@lru_cache(maxsize=8192)
def _camel(key: str) -> str:
    return camelize_re.sub(underscore_to_camel, key)


def _key(key):
    if isinstance(key, Promise):
        key = force_str(key)
    return _camel(key) if isinstance(key, str) and "_" in key else key


def camelize(data):
    if data is None or isinstance(data, (str, int, float)):  # most values: no need to try iterating them
        return data
    if isinstance(data, Promise):
        return force_str(data)
    if isinstance(data, dict):
        return {_key(key): camelize(value) for key, value in data.items()}
    if is_iterable(data) and not isinstance(data, bytes):
        return [camelize(item) for item in data]
    return data


class CamelCaseJSONRenderer(JSONRenderer):
    def render(self, data, *args, **kwargs):
        return super().render(camelize(data), *args, **kwargs)
