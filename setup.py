"""The one C extension, ragcli._speedups (the per-record work of indexing a JSONL corpus). Optional:
where no C compiler is found the build goes on without it, and ragcli uses the Python it mirrors.
Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ragcli._speedups", ["ragcli/_speedups.c", "ragcli/_speedups_json.c"],
                             depends=["ragcli/_nfc_safe.h", "ragcli/_speedups.h"], optional=True)])
