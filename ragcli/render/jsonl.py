"""One JSON object per event per line: a stable format for scripts."""

from __future__ import annotations

import json

from ragcli.events import Event, event_to_dict


class JsonlRenderer:
    def __init__(self, out) -> None:
        self.out = out

    def handle(self, event: Event) -> None:
        self.out.write(json.dumps(event_to_dict(event), ensure_ascii=False) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.out.flush()
