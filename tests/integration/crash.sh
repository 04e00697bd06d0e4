#!/usr/bin/env bash
# SIGKILL hetpoold 100 times mid-burst of submissions and cancellations;
# after each restart every job answered 201 is there and no device is
# held twice (tests/integration/crash.py; HP_CRASH_ROUNDS to change).
exec python3 "$(dirname "$0")/crash.py"
