"""Entry point: ``python -m ragcli`` and the ``ragcli`` console script."""

from __future__ import annotations

import os
import sys


def main() -> None:
    from ragcli.cli import run

    try:
        run()
    except SystemExit as exc:
        _leave_now_if_a_search_is_out(exc.code)
        raise


def _leave_now_if_a_search_is_out(code: object) -> None:
    """A web search given up on (its deadline passed, or Ctrl-C) may still be waiting on the network
    in ddgs's thread pool, which Python joins at exit: the process would outlive its "interrupted" by
    up to --web-timeout. Leave at once then, with the same exit code."""
    web = sys.modules.get("ragcli.retrieval.web")
    if web is None or not web.abandoned_searches():
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


if __name__ == "__main__":
    main()
