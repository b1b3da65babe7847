"""One JSON object per event per line: a stable format for scripts (README: "JSON events").

The first line also carries ``"schema"``, the version of this format.
"""

from __future__ import annotations

import json

from ragcli.events import SCHEMA_VERSION, Event, event_to_dict


class JsonlRenderer:
    def __init__(self, out) -> None:
        self.out = out
        self.first = True

    def handle(self, event: Event) -> None:
        data = event_to_dict(event)
        if self.first:
            data = {"event": data.pop("event"), "schema": SCHEMA_VERSION, **data}
            self.first = False
        self.out.write(json.dumps(data, ensure_ascii=False) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.out.flush()
