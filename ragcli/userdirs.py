"""Where ragcli keeps its files: the user's config, data, cache and state folders (platformdirs,
imported when first asked, so ``ragcli --help`` never loads it), the default index folder and the
config file's path (``RAGCLI_CONFIG``, else config.toml in the config folder)."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "ragcli"


def user_config_dir() -> Path:
    from platformdirs import user_config_dir as _ucd

    return Path(_ucd(APP_NAME))


def user_data_dir() -> Path:
    from platformdirs import user_data_dir as _udd

    return Path(_udd(APP_NAME))


def user_cache_dir() -> Path:
    from platformdirs import user_cache_dir as _ucd

    return Path(_ucd(APP_NAME))


def user_state_dir() -> Path:
    from platformdirs import user_state_dir as _usd

    return Path(_usd(APP_NAME))


def default_index_dir() -> str:
    """``./index_data`` when it exists (running from the repository), else the user data dir."""
    local = Path("index_data")
    if local.is_dir():
        return str(local)
    return str(user_data_dir() / "index")


def config_file_path() -> Path:
    env = os.environ.get("RAGCLI_CONFIG")
    return Path(env).expanduser() if env else user_config_dir() / "config.toml"  # ("~/x.toml" from a .env file)
