"""Entry point: ``python -m ragcli`` and the ``ragcli`` console script."""

from __future__ import annotations


def main() -> None:
    from ragcli.cli import run

    run()


if __name__ == "__main__":
    main()
