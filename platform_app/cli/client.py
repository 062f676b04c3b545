"""The HTTP side: one httpx client, the platform's error shape turned into `ApiError`, and the SSE reader."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx

USER_AGENT = "svc-cli/1"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)


class CliError(Exception):
    """Anything the user should read as one line: printed without a traceback, then exit `exit_code`.

    Exit codes: 1 a failed build or a refused action, 2 usage or authentication."""

    def __init__(self, message: str, *, code: str = "error", exit_code: int = 1, status: int | None = None,
                 details=None, hint: str = ""):
        super().__init__(message)
        self.message, self.code, self.exit_code = message, code, exit_code
        self.status, self.details, self.hint = status, details, hint

    def as_json(self) -> dict:
        return {"error": {"code": self.code, "message": self.message, "status": self.status,
                          "details": self.details}}


class ApiError(CliError):
    """An error answer of the platform: `{"code","message","details","status"}` (or OAuth's `error`)."""

    @classmethod
    def from_response(cls, response: httpx.Response) -> "ApiError":
        try:
            body = response.json()
        except ValueError:
            body = None
        status = response.status_code
        if isinstance(body, dict) and isinstance(body.get("error"), str) and "code" not in body:  # OAuth shape
            code, message, details = body["error"], body.get("error_description") or body["error"], None
        elif isinstance(body, dict) and "code" in body:
            code, message, details = str(body.get("code")), str(body.get("message") or ""), body.get("details")
        else:
            code = {401: "not_authenticated", 404: "not_found", 413: "upload_too_large"}.get(status, "http_error")
            message = f"The platform answered {status} {response.reason_phrase}."
            details = None
        hint = ""
        if status == 403 and code == "insufficient_scope" and isinstance(details, dict):
            need, have = details.get("requiredScope"), details.get("tokenScopes")
            hint = f"This needs the scope `{need}`; the token has {', '.join(have or []) or 'none'}."
        elif status == 401:
            hint = "Sign in again with `svc login` (or give a valid token with --token / SVC_TOKEN)."
        elif isinstance(details, dict) and "limitBytes" in details:
            hint = f"The limit is {details['limitBytes']} bytes."
        elif isinstance(details, dict) and "limitFiles" in details:
            hint = f"The limit is {details['limitFiles']} files."
        exit_code = 2 if status == 401 else 1
        return cls(message, code=code, exit_code=exit_code, status=status, details=details, hint=hint)


@dataclass
class Api:
    base: str
    token: str | None = None
    _http: httpx.Client | None = field(default=None, repr=False)

    @property
    def http(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(base_url=self.base, timeout=TIMEOUT, follow_redirects=False,
                                      headers={"User-Agent": USER_AGENT, "Accept": "application/json"})
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def _headers(self, extra: dict | None, auth: bool) -> dict:
        headers = dict(extra or {})
        if auth:
            if not self.token:
                raise CliError("Not signed in.", code="not_signed_in", exit_code=2,
                               hint="Run `svc login`, or give a token with --token or SVC_TOKEN.")
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def send(self, method: str, path: str, *, auth: bool = True, headers: dict | None = None,
             **kwargs) -> httpx.Response:
        try:
            return self.http.request(method, path, headers=self._headers(headers, auth), **kwargs)
        except httpx.TimeoutException as exc:
            raise CliError(f"The platform at {self.base} did not answer in time.", code="timeout") from exc
        except httpx.TransportError as exc:
            raise CliError(f"Cannot reach the platform at {self.base} ({exc.__class__.__name__}: {exc}).",
                           code="unreachable", hint="Is the server running? Check --api or SVC_API_URL.") from exc

    def call(self, method: str, path: str, **kwargs):
        """The decoded JSON body of a 2xx answer; `ApiError` otherwise."""
        response = self.send(method, path, **kwargs)
        if response.status_code >= 400:
            raise ApiError.from_response(response)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise CliError(f"The platform at {self.base} answered something other than JSON "
                           f"({response.headers.get('content-type', 'no content type')}).",
                           code="bad_response") from exc

    def get(self, path: str, **kwargs):
        return self.call("GET", path, **kwargs)

    def post(self, path: str, **kwargs):
        return self.call("POST", path, **kwargs)

    def delete(self, path: str, **kwargs):
        return self.call("DELETE", path, **kwargs)

    def pages(self, path: str, *, params: dict | None = None, limit: int = 100, max_items: int = 10_000) -> list:
        """Every item of a cursor-paged list (`{"items", "nextCursor"}`), up to `max_items`."""
        items, cursor = [], None
        params = dict(params or {})
        while True:
            page = self.get(path, params={**params, "limit": limit, **({"cursor": cursor} if cursor else {})})
            if isinstance(page, list):  # a plain list route
                return page[:max_items]
            items.extend(page.get("items") or [])
            cursor = page.get("nextCursor")
            if not cursor or len(items) >= max_items:
                return items[:max_items]


# Server-sent events ---------------------------------------------------------------------------------------------

@dataclass
class Event:
    event: str
    data: str
    id: str | None


MAX_EVENT_BYTES = 1 << 20  # a line the platform sends is cut far below this; a bound on what we buffer


def parse_sse(lines: Iterator[str]) -> Iterator[Event]:
    """Events of a `text/event-stream` body given as lines (the WHATWG rules we need: comments, multi-line data,
    `event`, `id`)."""
    event, data, event_id, size = "message", [], None, 0
    for line in lines:
        if line == "":
            if data or event != "message":
                yield Event(event, "\n".join(data), event_id)
            event, data, event_id, size = "message", [], None, 0
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            size += len(value)
            if size > MAX_EVENT_BYTES:
                raise CliError("The log stream sent an event larger than 1 MiB.", code="bad_stream")
            data.append(value)
        elif name == "event":
            event = value or "message"
        elif name == "id":
            event_id = value


def follow_events(api: Api, path: str, *, last_id: str | None = None, retries: int = 8,
                  on_reconnect: Callable[[int], None] | None = None,
                  sleep: Callable[[float], None] = time.sleep) -> Iterator[Event]:
    """An SSE stream that survives dropped connections: it reconnects with `Last-Event-ID` (the last line seen), so
    no line is lost or repeated. It ends after the server's `end` or `revoked` event, or `retries` failures in a
    row."""
    failures = 0
    while True:
        headers = {"Accept": "text/event-stream"}
        if last_id:
            headers["Last-Event-ID"] = last_id
        try:
            with api.http.stream("GET", path, headers=api._headers(headers, True),
                                 timeout=httpx.Timeout(30.0, connect=10.0, read=90.0)) as response:
                if response.status_code >= 400:
                    response.read()
                    raise ApiError.from_response(response)
                for event in parse_sse(response.iter_lines()):
                    failures = 0
                    if event.id:
                        last_id = event.id
                    yield event
                    if event.event in ("end", "revoked"):
                        return
        except httpx.TransportError as exc:
            failures += 1
            if failures > retries:
                raise CliError(f"Lost the log stream from {api.base} ({exc.__class__.__name__}).",
                               code="unreachable") from exc
            if on_reconnect:
                on_reconnect(failures)
            sleep(min(2 ** (failures - 1), 10))
            continue
        # the body ended without `end`: the server closed it (a restart, a proxy's timeout); resume
        failures += 1
        if failures > retries:
            raise CliError("The log stream kept closing before the build ended.", code="bad_stream")
        if on_reconnect:
            on_reconnect(failures)
        sleep(min(2 ** (failures - 1), 10))

