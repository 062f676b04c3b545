"""The body of a log stream answer, whole: a finished build's replay is one complete response, a live stream is
streamed (platform_app/api/deployments/deployments.py)."""


def sse_body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content
