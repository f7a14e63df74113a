"""``python -m plugin_sdk.store.schema write|docs`` (see the package docstring)."""

import sys

from plugin_sdk.store.schema import main

if __name__ == "__main__":
    raise SystemExit(main(iter(sys.argv[1:])))
