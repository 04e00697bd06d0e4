"""openapi.py - the OpenAPI 3 document hetpoold serves at /v1/openapi.json:
structurally valid (the fields OpenAPI 3.0 requires, every $ref resolved,
every path parameter declared, responses keyed by status), the same as
daemon/openapi.json, and in step with the routes the server registers
(`hetpoold --routes`): each route is in it with the same role, and it
describes no route the server lacks.  docs/daemon.md names every route
too."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from hplib import *  # noqa: E402,F403

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}

with open(os.path.join(ROOT, "daemon", "openapi.json")) as f:
    doc = json.load(f)
d = Daemon([])
d.start()
r = d.get("/v1/openapi.json")
check("the served document is daemon/openapi.json", r.status == 200 and r.json() == doc)
d.cleanup()

errors = []


def err(msg):
    errors.append(msg)


def resolve(ref):
    if not ref.startswith("#/"):
        err("external $ref %s" % ref)
        return None
    node = doc
    for part in ref[2:].split("/"):
        if not isinstance(node, dict) or part not in node:
            err("$ref %s does not resolve" % ref)
            return None
        node = node[part]
    return node


def walk_schema(s, where):
    if not isinstance(s, dict):
        err("%s: a schema must be an object" % where)
        return
    if "$ref" in s:
        resolve(s["$ref"])
        return
    if "type" in s and s["type"] not in TYPES:
        err("%s: type %s" % (where, s["type"]))
    for k in ("properties",):
        for name, sub in s.get(k, {}).items():
            walk_schema(sub, where + "." + name)
    if "items" in s:
        walk_schema(s["items"], where + "[]")
    for k in ("allOf", "oneOf", "anyOf"):
        for i, sub in enumerate(s.get(k, [])):
            walk_schema(sub, "%s.%s[%d]" % (where, k, i))
    if s.get("type") == "array" and "items" not in s:
        err("%s: an array without items" % where)


if not str(doc.get("openapi", "")).startswith("3.0."):
    err("openapi is %s, not 3.0.x" % doc.get("openapi"))
for k in ("title", "version"):
    if not doc.get("info", {}).get(k):
        err("info.%s missing" % k)
if not isinstance(doc.get("paths"), dict) or not doc["paths"]:
    err("no paths")
for name, sch in doc.get("components", {}).get("schemas", {}).items():
    walk_schema(sch, "components.schemas." + name)
schemes = doc.get("components", {}).get("securitySchemes", {})
for req in doc.get("security", []):
    for k in req:
        if k not in schemes:
            err("security scheme %s undefined" % k)
described = {}
for path, item in doc.get("paths", {}).items():
    if not path.startswith("/"):
        err("path %s does not start with /" % path)
    params = set(re.findall(r"{([^}]+)}", path))
    for method, o in item.items():
        if method not in METHODS:
            err("%s: %s is not an HTTP method" % (path, method))
            continue
        where = "%s %s" % (method.upper(), path)
        described[where] = o.get("x-hetpool-role")
        if not o.get("responses"):
            err(where + ": no responses")
        for code, resp in o.get("responses", {}).items():
            if not (re.fullmatch(r"[1-5][0-9][0-9]", code) or code == "default"):
                err("%s: response key %s" % (where, code))
            if "$ref" in resp:
                resolve(resp["$ref"])
            elif not resp.get("description"):
                err("%s %s: no description" % (where, code))
            for ct, media in resp.get("content", {}).items():
                walk_schema(media.get("schema", {}), "%s %s %s" % (where, code, ct))
        declared = set()
        for p in o.get("parameters", []):
            if p.get("in") not in ("path", "query", "header", "cookie") or not p.get("name"):
                err("%s: bad parameter %s" % (where, p))
            if p.get("in") == "path":
                declared.add(p["name"])
                if p.get("required") is not True:
                    err("%s: path parameter %s not required" % (where, p["name"]))
            walk_schema(p.get("schema", {}), where + " param " + p.get("name", "?"))
        if declared != params:
            err("%s: path parameters %s declared as %s" % (where, sorted(params), sorted(declared)))
        rb = o.get("requestBody")
        if rb:
            if not rb.get("content"):
                err(where + ": requestBody without content")
            for ct, media in rb.get("content", {}).items():
                walk_schema(media.get("schema", {}), where + " body " + ct)
        if o.get("security") == [] and o.get("x-hetpool-role") != "none":
            err(where + ": public but has a role")
check("the document is structurally valid OpenAPI 3.0", not errors, errors[:8])

routes = {}
for line in subprocess.run([HETPOOLD, "--routes"], capture_output=True, text=True,
                           check=True).stdout.splitlines():
    method, pattern, role = line.split()[:3]
    routes["%s %s" % (method, pattern)] = "none" if role == "-" else role
missing = sorted(set(routes) - set(described))
extra = sorted(set(described) - set(routes))
check("every route the server registers is in the document", not missing, missing)
check("the document describes no route the server lacks", not extra, extra)
wrong = [k for k in routes if k in described and described[k] != routes[k]]
check("the document gives each route the server's role", not wrong, wrong)
with open(os.path.join(ROOT, "docs", "daemon.md")) as f:
    md = f.read()
undoc = [k for k in routes if ("`%s`" % k) not in md]
check("docs/daemon.md names every route", not undoc, undoc)
finish()
