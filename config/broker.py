"""kombu's filesystem transport (the embedded broker of `make run`), with every message written atomically.

The stock transport creates a message file and then writes into it; a worker polling the folder can move and
read the file in between, find it empty and die. Here a message is written under a name no reader picks up
(`.part`), then renamed into place: `os.replace` is atomic within one folder.
"""
import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
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


class Transport(filesystem.Transport):
    Channel = Channel
