"""A sandbox's output, read as lines in bounded memory and linear time.

Tenant code decides what it prints: a line may never end. Output is read in chunks; a line longer than
LINE_BYTES keeps its first LINE_BYTES bytes and says how many it dropped (` …[cut: N bytes]`), and what is
dropped is counted, never kept.
"""
LINE_BYTES = 16 * 1024
CHUNK_BYTES = 64 * 1024


class LineSplitter:
    """`feed(chunk)` -> the lines it completed (text, without the newline); `end()` -> the last one, if any."""

    def __init__(self, limit: int = LINE_BYTES):
        self.limit = limit
        self.parts: list[bytes] = []   # the current line's bytes, at most `limit` in all
        self.kept = 0
        self.dropped = 0

    def feed(self, chunk: bytes) -> list[str]:
        lines, start = [], 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                self._add(chunk[start:])
                return lines
            self._add(chunk[start:end])
            lines.append(self._take())
            start = end + 1

    def end(self) -> str | None:
        return self._take() if self.parts or self.dropped else None

    def _add(self, piece: bytes) -> None:
        room = self.limit - self.kept
        if len(piece) > room:
            self.dropped += len(piece) - room
            piece = piece[:room]
        if piece:
            self.parts.append(piece)
            self.kept += len(piece)

    def _take(self) -> str:
        raw = b"".join(self.parts)
        text = raw.decode("utf-8", errors="replace").rstrip("\r").replace("\0", "\ufffd")
        if self.dropped:
            text += f" …[cut: {self.dropped} bytes]"
        self.parts, self.kept, self.dropped = [], 0, 0
        return text
