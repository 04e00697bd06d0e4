#!/usr/bin/env bash
# A restart with jobs running: re-attached, or failed with the reason
# (tests/integration/recovery.py).
exec python3 "$(dirname "$0")/recovery.py"
