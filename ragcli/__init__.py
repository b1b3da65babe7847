"""ragcli: active retrieval augmented generation over your own documents."""

__version__ = "0.1.0"
