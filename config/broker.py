"""The broker's kombu transports, each the stock one with one change (CELERY_BROKER_TRANSPORT names them).

- Filesystem (the embedded broker of `make run`), with every message written atomically. The stock transport
  creates a message file and then writes into it; a worker polling the folder can move and read the file in
  between, find it empty and die. Here a message is written under a name no reader picks up (`.part`), then
  renamed into place: `os.replace` is atomic within one folder.
- Redis, with one client per channel. The stock channel builds a new redis-py client (over its connection pool)
  for every message it publishes, which cost about a quarter of a publish (docs/performance.md, "One-time codes").
"""
import os
import uuid
from contextlib import contextmanager
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class FilesystemChannel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = f"{final}.part"  # readers match `<queue>.msg` exactly
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class FilesystemTransport(filesystem.Transport):
    Channel = FilesystemChannel


class RedisChannel(redis.Channel):
    _client = None

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client is not None:
            yield client
            return
        # redis-py clients are thread-safe; a new one when the channel replaced its connection pool
        if self._client is None or self._client.connection_pool is not self.pool:
            self._client = self._create_client()
        yield self._client


class RedisTransport(redis.Transport):
    Channel = RedisChannel
