"""The errors of every operation, and request bodies as strict as the API, in each service's OpenAPI document
(assembled in config/schema.py; docs/api-testing.md).

`ServiceAutoSchema` (DRF's schema class, settings/api.py) adds, once for every operation, the errors it can
answer in its service's error body (config/errors.py), derived from what the operation declares:

- a request body or query/header parameters → 400; a request body → 413 as well;
- authentication classes (a credential that is sent is checked) → 401;
- a required scope, or a write that a cookie can authenticate (CSRF) → 403;
- path parameters → 404; a write → 409;
- anything else (402, 429, a 404 for an id in the body...) the view declares itself.

Request bodies of an `InputSerializer` (which refuses unknown fields and wrong JSON types) are published with
`additionalProperties: false` and its `schema_extra`, as declared even under PATCH; required text must hold more
than whitespace, numbers stay in the range config/parsers.py reads. An authentication class may list
`schema_write_parameters` (the warehouse's CSRF pair), added to every write it can authenticate.
"""
from django.core.validators import RegexValidator
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance
from drf_spectacular.utils import extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication

from config.errors import service_for_path

WRITES = ("POST", "PUT", "PATCH", "DELETE")
JSON_NUMBER_RANGE = {"integer": (-2**63, 2**63 - 1), "number": (-1.7976931348623157e308, 1.7976931348623157e308)}
# Some character that str.strip() keeps (DRF trims text, then refuses it when blank).
NOT_BLANK = "[^\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
DESCRIPTIONS = {
    "400": "The request is invalid (malformed JSON, a field or parameter out of its rules, an unknown field).",
    "401": "No credential, or one that is unknown, expired or revoked.",
    "402": "The balance does not cover this request.",
    "403": "The credential or role does not allow this, or a cookie-authenticated write lacks its CSRF token.",
    "404": "No such resource, or one the caller cannot see.",
    "409": "The request conflicts with the current state.",
    "413": "The request body is too large.",
    "422": "No channel can reach this recipient.",
    "429": "Too many requests; retry after `Retry-After` seconds.",
    "501": "The provider does not offer this yet.",
    "502": "An outside provider failed to answer.",
    "503": "A provider this operation needs is not configured, or is unavailable.",
}


# Error bodies (contract.md) -----------------------------------------------------------

@extend_schema_serializer(component_name="Error")
class PlatformErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.JSONField(allow_null=True, help_text="Per-field messages, or context; null when none.")
    status = serializers.IntegerField()


@extend_schema_serializer(component_name="OtpError")
class OtpErrorSerializer(serializers.Serializer):
    error = inline_serializer("OtpErrorBody", {"code": serializers.CharField(), "message": serializers.CharField()})


@extend_schema_serializer(component_name="WarehouseError")
class WarehouseErrorSerializer(serializers.Serializer):
    error = serializers.CharField(help_text="What went wrong, for people.")
    code = serializers.CharField()
    on_hand = serializers.IntegerField(required=False, help_text="Stock conflicts: the quantity on hand.")
    counter = serializers.DictField(required=False, help_text="Allowance exhausted: used, allowance, period.")


ERROR_SERIALIZERS = {"platform": PlatformErrorSerializer, "otp": OtpErrorSerializer,
                     "warehouse": WarehouseErrorSerializer}


def _strict_input(serializer) -> bool:
    """An input serializer that rejects unknown fields (`platform_app.api.base.InputSerializer` and its
    subclasses, which declare `schema_extra`): recognised by that attribute, so config imports no app."""
    return isinstance(getattr(type(serializer), "schema_extra", None), dict)


class ServiceAutoSchema(AutoSchema):
    def _map_serializer(self, serializer, direction, bypass_extensions=False):
        schema = super()._map_serializer(serializer, direction, bypass_extensions)
        serializer = force_instance(serializer)
        if direction == "request" and _strict_input(serializer):
            schema["additionalProperties"] = False
            schema.update(serializer.schema_extra)
            if type(serializer).__doc__ is None:
                schema.pop("description", None)  # InputSerializer's own docstring says nothing about this body
        return schema

    def _get_request_for_media_type(self, serializer, direction="request"):
        if self.method != "PATCH" or not _strict_input(force_instance(serializer)):
            return super()._get_request_for_media_type(serializer, direction)
        # the views validate a PATCH body with the serializer as declared (its optional fields are what may be
        # left out), not with DRF's partial copy: publish it as declared
        self.method = "PUT"
        try:
            return super()._get_request_for_media_type(serializer, direction)
        finally:
            self.method = "PATCH"

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "request" and schema.get("type") in JSON_NUMBER_RANGE:
            low, high = JSON_NUMBER_RANGE[schema["type"]]  # what config/parsers.py reads as a number
            schema.setdefault("minimum", low)
            schema.setdefault("maximum", high)
        # a required text is trimmed, then refused when blank: it must contain something besides whitespace
        if (direction == "request" and isinstance(field, serializers.CharField) and not field.allow_blank
                and field.trim_whitespace and schema.get("type") == "string"
                and not {"pattern", "enum", "format"} & set(schema)
                and not any(isinstance(v, RegexValidator) for v in field.validators)):
            schema["pattern"] = NOT_BLANK
        return schema

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        if self.method in WRITES:
            for authenticator in getattr(self.view, "authentication_classes", []):
                for parameter in getattr(authenticator, "schema_write_parameters", ()):
                    if parameter not in operation.setdefault("parameters", []):
                        operation["parameters"].append(parameter)
        error = ERROR_SERIALIZERS[service_for_path(path)]
        responses = operation["responses"]
        for status in sorted(self._error_statuses(operation)):
            if str(status) not in responses:
                responses[str(status)] = self._get_response_for_code(error, str(status))
        for status, response in responses.items():
            if status >= "400":
                response["description"] = response.get("description") or DESCRIPTIONS.get(status, "")
        if "429" in responses:
            responses["429"].setdefault("headers", {})["Retry-After"] = {
                "schema": {"type": "integer"}, "required": True, "description": "Seconds to wait."}
        return operation

    def get_operation_id(self):
        # a list answered in its envelope (see `page_of`) keeps the `_list` id of a bare list
        operation_id = super().get_operation_id()
        responses = self.get_response_serializers()
        ok = responses.get(200) if isinstance(responses, dict) else responses
        if operation_id.endswith("_retrieve") and getattr(ok, "is_page", False):
            return operation_id.removesuffix("_retrieve") + "_list"
        return operation_id

    def _error_statuses(self, operation) -> set:
        params = {p["in"] for p in operation.get("parameters", [])}
        body = "requestBody" in operation
        write = self.method in WRITES
        authenticators = list(getattr(self.view, "authentication_classes", []))
        statuses = set()
        if body or params & {"query", "header"}:
            statuses.add(400)
        if body:
            statuses.add(413)
        if authenticators:
            statuses.add(401)
        csrf = any(issubclass(a, SessionAuthentication) or hasattr(a, "schema_write_parameters")
                   for a in authenticators)
        if operation.get("x-required-scope") or (write and csrf):
            statuses.add(403)
        if "path" in params:
            statuses.add(404)
        if write:
            statuses.add(409)
        return statuses
