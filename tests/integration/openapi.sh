#!/usr/bin/env bash
# The OpenAPI document: valid, served, and in step with the routes
# (tests/integration/openapi.py).
exec python3 "$(dirname "$0")/openapi.py"
