#!/usr/bin/env bash
# The dashboard as hetpoold serves it (headers, CSP, caching, no path
# traversal), then end to end in headless chromium through Playwright
# (tests/integration/web.py, web/e2e/dashboard.mjs).
exec python3 "$(dirname "$0")/web.py"
