"""The SDK version, kept in one place for the package metadata and the User-Agent header."""

__version__ = "0.2.0"
SDK_NAME = "bench-sdk-python"
