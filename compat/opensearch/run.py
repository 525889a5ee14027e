#!/usr/bin/env python3
"""Runs OpenSearch's REST API YAML test suite against `quarry serve`.

The suite ships in the Maven artifact org.opensearch:rest-api-spec (its `rest-api-spec/`
holds `api/*.json`, each API's paths and parameters, and `test/<dir>/*.yml`, the tests; the
format is described in `test/README.md`). This runner starts one server with an admin token,
runs every test case of the chosen directories in order (setup, the test, teardown), then
deletes every tenant but `default` (OpenSearch's runners wipe the cluster between cases),
and prints a table of passes and failures per directory.

A case passes only when every step ran and held: a step the runner does not know, a feature
it does not implement, or a runner exception is a failure (or a skip naming the feature),
never a pass. `--selftest` checks the runner itself against cases whose outcome is known
(`selftest/*.yml`).

    run.py --quarry target/debug/quarry --spec target/opensearch-rest-api-spec

Needs Python 3.8+ and PyYAML.
"""

import argparse
import base64
import collections
import fnmatch
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULT_DIRS = [
    "search", "search.aggregation", "bulk", "msearch", "count", "scroll",
    "indices.create", "indices.get_mapping", "field_caps", "search.highlight", "index",
    "get", "info", "ping", "cluster.health", "indices.exists", "indices.delete",
    "indices.refresh", "mget", "delete", "exists",
]

# Quarry is measured as this OpenSearch version for `skip: version` ranges.
QUARRY_AS_VERSION = (2, 19, 0)

# `skip: features` this runner implements. `node_selector` is accepted and ignored (one
# node); `default_shards` holds (no randomised shard counts); `warnings` and
# `allowed_warnings` are accepted but expected warnings are not required (Quarry sends no
# deprecation warnings), while an unexpected Warning header still fails.
SUPPORTED_FEATURES = {
    "headers", "allowed_warnings", "warnings", "contains", "stash_in_path", "stash_in_key",
    "embedded_stash_key", "default_shards", "arbitrary_key", "node_selector",
    "catch_unauthorized", "transform_and_set",
}

CASE_TIMEOUT_SECONDS = 30.0
ADMIN_TOKEN = "opensearch-rest-suite"

# `catch` names and the status each means (`request`: any other 4xx/5xx, README.md).
CATCH_STATUS = {
    "bad_request": 400, "unauthorized": 401, "forbidden": 403, "missing": 404,
    "request_timeout": 408, "conflict": 409, "unavailable": 503,
}


class Failure(Exception):
    """A step that did not hold: the case fails with this message."""

    def __init__(self, message, cause=None):
        super().__init__(message)
        self.cause = cause


class Skip(Exception):
    pass


# --- YAML as OpenSearch's runner reads it -------------------------------------------------
#
# Jackson's YAML parser (what the Java runner uses) knows true/false, numbers and null, and
# reads everything else as a string. PyYAML's YAML 1.1 resolvers would turn `on`, `yes`,
# `no` into booleans, `2016-01-01` into a date and `010` into 8: this loader does not.

class SuiteLoader(yaml.SafeLoader):
    pass


SuiteLoader.yaml_implicit_resolvers = {}
SuiteLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))
SuiteLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
SuiteLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?[0-9]+[eE][-+]?[0-9]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))
SuiteLoader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
SuiteLoader.add_constructor(
    "tag:yaml.org,2002:int", lambda loader, node: int(loader.construct_scalar(node), 10))


def load_yaml_documents(path):
    with open(path, encoding="utf-8") as f:
        return [doc for doc in yaml.load_all(f, Loader=SuiteLoader) if doc]


# --- the API specs --------------------------------------------------------------------------

class Api:
    def __init__(self, name, spec):
        self.name = name
        self.paths = spec["url"]["paths"]
        self.params = set(spec.get("params", {}))
        body = spec.get("body")
        self.has_body = body is not None
        self.bulk_body = bool(body and body.get("serialize") == "bulk")

    def parts(self, path):
        return set(path.get("parts", {}))


def load_apis(dirs):
    apis, global_params = {}, set()
    for directory in dirs:
        for file in sorted(os.listdir(directory)):
            if not file.endswith(".json"):
                continue
            with open(os.path.join(directory, file), encoding="utf-8") as f:
                spec = json.load(f)
            if file == "_common.json":
                global_params |= set(spec.get("params", {}))
                continue
            for name, body in spec.items():
                apis[name] = Api(name, body)
    return apis, global_params


def format_param(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(format_param(v) for v in value)
    if isinstance(value, (dict,)):
        return json.dumps(value)
    return str(value)


# --- the server -------------------------------------------------------------------------------

class Response:
    def __init__(self, method, target, request_body, status, headers, raw):
        self.method = method
        self.target = target
        self.request_body = request_body
        self.status = status
        self.headers = headers
        self.raw = raw
        self.text = raw.decode("utf-8", errors="replace")
        if method == "HEAD":
            # As OpenSearch's client: a HEAD answers true (2xx) or false (404).
            self.body = 200 <= status < 300
        else:
            try:
                self.body = json.loads(self.text) if self.text.strip() else self.text
            except ValueError:
                self.body = self.text

    def describe(self, limit=400):
        request = f"{self.method} {self.target}"
        if self.request_body:
            request += " " + excerpt(self.request_body.decode("utf-8", "replace"), 300)
        return f"request: {request}\nresponse: {self.status} {excerpt(self.text, limit)}"


def excerpt(text, limit):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


class Server:
    """`quarry serve` on a loopback port of its own, with an admin token."""

    def __init__(self, binary):
        self.binary = binary
        self.process = None
        self.workdir = None
        self.restarts = 0
        self.crashes = []
        self.panics = []

    def start(self):
        self.workdir = tempfile.mkdtemp(prefix="quarry-opensearch-")
        self.out_path = os.path.join(self.workdir, "stdout")
        self.log_path = os.path.join(self.workdir, "server.log")
        out, log = open(self.out_path, "wb"), open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [self.binary, "serve", "--data", os.path.join(self.workdir, "data"),
             "--listen", "127.0.0.1:0", "--admin-token", ADMIN_TOKEN],
            stdout=out, stderr=log, stdin=subprocess.DEVNULL)
        out.close()
        log.close()
        deadline = time.monotonic() + 30
        while True:
            with open(self.out_path, encoding="utf-8", errors="replace") as f:
                found = re.search(r"https?://([0-9.]+:[0-9]+)", f.read())
            if found:
                host, port = found.group(1).rsplit(":", 1)
                self.host, self.port = host, int(port)
                return
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"quarry serve did not start: {self.log_tail()}")
            time.sleep(0.05)

    def stop(self):
        # A panic caught by the server (a 500 to one request) leaves the process up: the log
        # says so, and the run reports it.
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                self.panics += [line.strip() for line in f if "panicked" in line]
        except (OSError, AttributeError):
            pass
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        self.process = None

    def restart(self):
        self.stop()
        self.restarts += 1
        self.start()

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines=15):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def request(self, method, target, body=None, headers=None, timeout=CASE_TIMEOUT_SECONDS):
        all_headers = {"authorization": f"Bearer {ADMIN_TOKEN}", "accept": "application/json"}
        if body is not None:
            all_headers["content-type"] = "application/json"
        all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
        connection = http.client.HTTPConnection(self.host, self.port, timeout=max(timeout, 0.1))
        try:
            connection.request(method, target, body=body, headers=all_headers)
            answer = connection.getresponse()
            raw = answer.read()
            headers = [(k.lower(), v) for k, v in answer.getheaders()]
            return Response(method, target, body, answer.status, headers, raw)
        except (OSError, http.client.HTTPException) as error:
            kind = "timed out" if isinstance(error, TimeoutError) or "timed out" in str(error) \
                else f"failed ({error.__class__.__name__}: {error})"
            raise Failure(f"{method} {target} {kind}", cause=f"{method} request {kind.split(' (')[0]}")
        finally:
            connection.close()

    def wipe(self):
        """Deletes every tenant but `default`; restarts the server if `default` holds events
        (it cannot be deleted, and the next case must start from nothing)."""
        listing = self.request("GET", "/api/v1/tenants")
        if listing.status != 200 or not isinstance(listing.body, dict):
            raise RuntimeError(f"listing tenants: {listing.describe()}")
        for tenant in listing.body["tenants"]:
            name = tenant["name"]
            if name == "default":
                if tenant.get("events", 0) or tenant.get("blocks", 0):
                    self.restart()
                    return
                continue
            deleted = self.request("DELETE", "/api/v1/tenants/" + urllib.parse.quote(name, safe=""))
            if deleted.status != 200:
                raise RuntimeError(f"deleting tenant {name}: {deleted.describe()}")


# --- stash and paths --------------------------------------------------------------------------

STASH_NAME = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_.]*)$")
EMBEDDED_STASH = re.compile(r"\$\{([^}]+)\}")
MISSING = object()


def split_path(path):
    """`a.b\\.c.0` → ["a", "b.c", "0"]; the empty path is the whole value."""
    if path == "" or path is None:
        return []
    parts, current, i = [], "", 0
    while i < len(path):
        if path[i] == "\\" and i + 1 < len(path) and path[i + 1] == ".":
            current += "."
            i += 2
            continue
        if path[i] == ".":
            parts.append(current)
            current = ""
        else:
            current += path[i]
        i += 1
    parts.append(current)
    return parts


class Context:
    def __init__(self, server, apis, global_params, deadline):
        self.server = server
        self.apis = apis
        self.global_params = global_params
        self.deadline = deadline
        self.stash = {}
        self.response = None
        self.steps_run = 0

    # Stash values are themselves found by path: `$body.hits.total` is stash["body"]["hits"]...
    def unstash(self, name):
        value = navigate(self.stash, split_path(name), self)
        if value is MISSING:
            raise Failure(f"the stash has no ${name}", cause="runner: stash key missing")
        return value

    def substitute(self, value):
        """Replaces `$name` (the whole string) and `${name}` (within one) in values and keys."""
        if isinstance(value, str):
            whole = STASH_NAME.match(value)
            if whole:
                return self.unstash(whole.group(1))
            if "${" in value:
                return EMBEDDED_STASH.sub(lambda m: stash_text(self.unstash(m.group(1))), value)
            return value
        if isinstance(value, list):
            return [self.substitute(v) for v in value]
        if isinstance(value, dict):
            out = {}
            for key, v in value.items():
                new_key = self.substitute(key) if isinstance(key, str) else key
                out[new_key if isinstance(new_key, str) else stash_text(new_key)] = self.substitute(v)
            return out
        return value

    def path_parts(self, path):
        parts = []
        for part in split_path(path):
            whole = STASH_NAME.match(part)
            if whole:
                part = stash_text(self.unstash(whole.group(1)))
            elif "${" in part:
                part = EMBEDDED_STASH.sub(lambda m: stash_text(self.unstash(m.group(1))), part)
            parts.append(part)
        return parts

    def actual(self, path):
        """The value at `path` in the last response (`$body` or '' is the whole body)."""
        if self.response is None:
            raise Failure(f"no response to look up {path!r} in", cause="runner: no response")
        if path in ("$body", ""):
            return self.response.body
        if isinstance(path, str) and path.startswith("$"):
            return self.unstash(path[1:])
        return navigate(self.response.body, self.path_parts(path), self)


def navigate(value, parts, context):
    for part in parts:
        if isinstance(value, dict):
            if part == "_arbitrary_key_":
                if not value:
                    return MISSING
                return next(iter(value))
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, list):
            try:
                value = value[int(part)]
            except (ValueError, IndexError):
                return MISSING
        else:
            return MISSING
    return value


def stash_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def show(value):
    if value is MISSING:
        return "<missing>"
    return excerpt(json.dumps(value, ensure_ascii=False, default=str), 200)


# --- comparisons -----------------------------------------------------------------------------

def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_regex(value):
    if not isinstance(value, str):
        return False
    trimmed = value.strip()
    return len(trimmed) > 2 and trimmed.startswith("/") and trimmed.endswith("/")


def regex_of(value, flags=0):
    try:
        return re.compile(value.strip()[1:-1], flags)
    except re.error as error:
        raise Failure(f"regex {value!r} does not compile in Python: {error}",
                      cause="runner: regex not portable")


def equal(actual, expected):
    """Deep equality as the Java runner's: numbers compare by value (1 == 1.0), a boolean is
    not a number, maps and lists compare whole."""
    if is_number(actual) and is_number(expected):
        return actual == expected
    if type(actual) is not type(expected):
        if isinstance(actual, str) and isinstance(expected, str):
            return actual == expected
        return False
    if isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(
            equal(actual[k], expected[k]) for k in expected)
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(
            equal(a, e) for a, e in zip(actual, expected))
    return actual == expected


def first_difference(actual, expected, at=""):
    """Where two values differ, for the failure message."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            if key not in actual:
                return f"{at}.{key}: missing (expected {show(expected[key])})"
            if not equal(actual[key], expected[key]):
                return first_difference(actual[key], expected[key], f"{at}.{key}")
        extra = [k for k in actual if k not in expected]
        if extra:
            return f"{at}: unexpected keys {extra[:5]}"
    if isinstance(expected, list) and isinstance(actual, list):
        if len(actual) != len(expected):
            return f"{at}: {len(actual)} elements, expected {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            if not equal(a, e):
                return first_difference(a, e, f"{at}.{i}")
    return f"{at + ': ' if at else ''}got {show(actual)}, expected {show(expected)}"


def truthy(value):
    if value is MISSING or value is None or value is False:
        return False
    if is_number(value) and value == 0:
        return False
    if isinstance(value, str) and value in ("", "false", "0"):
        return False
    return True


def contains(actual, expected):
    if isinstance(expected, dict):
        return any(isinstance(item, dict) and all(
            k in item and equal(item[k], v) for k, v in expected.items()) for item in actual)
    return any(equal(item, expected) for item in actual)


# --- skips -----------------------------------------------------------------------------------

def parse_version(text):
    numbers = [int(n) for n in re.findall(r"\d+", text)[:3]]
    numbers += [0] * (3 - len(numbers))
    # Elasticsearch 5.x-7.x versions (the suite's legacy ranges) came before OpenSearch 1.0.
    legacy = numbers[0] in (5, 6, 7)
    return (0 if legacy else 1, *numbers)


def version_skipped(spec):
    spec = str(spec).strip()
    if spec == "all":
        return True
    current = (1, *QUARRY_AS_VERSION)
    for one in spec.split(","):
        low, _, high = one.partition("-")
        low, high = low.strip(), high.strip()
        if (not low or parse_version(low) <= current) and (not high or current <= parse_version(high)):
            return True
    return False


def skip_reason(steps):
    """Why the section's leading `skip` skips it, or None."""
    if not steps or "skip" not in steps[0]:
        return None
    skip = steps[0]["skip"] or {}
    features = skip.get("features", [])
    if isinstance(features, str):
        features = [f.strip() for f in features.split(",")]
    missing = [f for f in features if f not in SUPPORTED_FEATURES]
    if missing:
        return "runner lacks feature " + ", ".join(missing)
    if "version" in skip and version_skipped(skip["version"]):
        return f"version {str(skip['version']).strip()}: {skip.get('reason', '')}".strip()
    return None


# --- steps -----------------------------------------------------------------------------------

def run_steps(context, steps, section):
    for index, step in enumerate(steps or []):
        if not isinstance(step, dict) or len(step) != 1:
            raise Failure(f"{section}: malformed step {step!r}", cause="runner: malformed step")
        (kind, argument), = step.items()
        if kind == "skip":
            if index != 0:
                raise Failure(f"{section}: skip not first", cause="runner: skip not first")
            continue
        if time.monotonic() > context.deadline:
            raise Failure(f"case took longer than {CASE_TIMEOUT_SECONDS:.0f} s",
                          cause="case timed out")
        handler = STEP_HANDLERS.get(kind)
        if handler is None:
            raise Failure(f"{section}: unknown step {kind!r}", cause=f"runner: unknown step {kind}")
        try:
            handler(context, argument, section)
        except Failure as failure:
            if kind != "do" and context.response is not None and "\nrequest: " not in str(failure):
                raise Failure(f"{failure}\n{context.response.describe()}", failure.cause) from None
            raise
        context.steps_run += 1


def single_pair(argument, kind):
    if not isinstance(argument, dict) or len(argument) != 1:
        raise Failure(f"{kind}: expected one key, got {argument!r}", cause="runner: malformed step")
    return next(iter(argument.items()))


def do_step(context, argument, section):
    argument = dict(argument)
    catch = argument.pop("catch", None)
    headers = argument.pop("headers", None) or {}
    # Expected warnings are not required (Quarry sends no deprecation warnings); a Warning
    # header the case neither expects nor allows fails it, as in OpenSearch's runner.
    allowed_warnings = (argument.pop("warnings", None) or []) + (
        argument.pop("allowed_warnings", None) or [])
    argument.pop("node_selector", None)
    if len(argument) != 1:
        raise Failure(f"do: expected one API call, got {list(argument)}", cause="runner: malformed do")
    (api_name, params), = argument.items()
    api = context.apis.get(api_name)
    if api is None:
        raise Failure(f"do: no api spec named {api_name}", cause=f"runner: no api spec {api_name}")
    params = context.substitute(dict(params or {}))
    # Header names are case-insensitive: kept lowercase, so a case's own replace the defaults.
    headers = {str(k).lower(): stash_text(v) for k, v in context.substitute(headers).items()}
    body = params.pop("body", None)
    ignore = params.pop("ignore", None)
    ignore = set(ignore if isinstance(ignore, list) else [ignore] if ignore is not None else [])
    ignore = {int(status) for status in ignore}

    all_parts = set().union(*(api.parts(p) for p in api.paths))
    for name in [k for k in params if k in all_parts and format_param(params[k]) == ""]:
        # `index: []` names no index: the path without it, as OpenSearch's clients send.
        del params[name]
    candidates = [p for p in api.paths if api.parts(p) <= set(params)]
    if not candidates:
        raise Failure(f"do {api_name}: no path fits the parameters {sorted(params)}",
                      cause="runner: no path fits")
    path = max(candidates, key=lambda p: len(api.parts(p)))
    target = path["path"]
    for part in api.parts(path):
        value = format_param(params.pop(part))
        target = target.replace("{" + part + "}", urllib.parse.quote(value, safe=",*"))
    unknown = [k for k in params if k not in api.params and k not in context.global_params]
    if unknown:
        if catch == "param":
            context.response = None
            return
        raise Failure(f"do {api_name}: parameter {unknown} not in its api spec",
                      cause="runner: unknown parameter")
    if catch == "param":
        raise Failure(f"do {api_name}: expected a parameter error, all parameters are known",
                      cause=f"{api_name}: expected a parameter error")
    query = urllib.parse.urlencode({k: format_param(v) for k, v in params.items()})
    if query:
        target += "?" + query

    methods = path["methods"]
    encoded = None
    if body is not None:
        writes = [m for m in methods if m in ("POST", "PUT")]
        method = writes[0] if writes else methods[0]
        if api.bulk_body and isinstance(body, list):
            encoded = "".join(
                (line if isinstance(line, str) else json.dumps(line)) + "\n" for line in body)
            headers.setdefault("content-type", "application/x-ndjson")
        elif isinstance(body, str):
            encoded = body if not api.bulk_body or body.endswith("\n") else body + "\n"
            if api.bulk_body:
                headers.setdefault("content-type", "application/x-ndjson")
        else:
            encoded = json.dumps(body)
        encoded = encoded.encode("utf-8")
    else:
        method = "GET" if "GET" in methods else methods[0]

    timeout = context.deadline - time.monotonic()
    if timeout <= 0:
        raise Failure(f"case took longer than {CASE_TIMEOUT_SECONDS:.0f} s", cause="case timed out")
    response = context.server.request(method, target, encoded, headers, timeout)
    context.response = response
    context.stash["body"] = response.body
    template = f"{method} {path['path']}"

    warnings = [warning_text(v) for k, v in response.headers if k == "warning"]
    warnings = [w for w in warnings if w not in allowed_warnings]
    if warnings:
        raise Failure(f"do {api_name}: unexpected Warning headers {warnings}\n{response.describe()}",
                      cause=f"{api_name} ({template}): unexpected Warning header")
    is_error = response.status >= 400 and response.status not in ignore
    if method == "HEAD" and response.status == 404:
        is_error = False  # a HEAD answers false, as OpenSearch's client does
    if catch is None:
        if is_error:
            raise Failure(f"do {api_name}: {response.status}\n{response.describe()}",
                          cause=error_cause(api_name, template, response))
        return
    if not is_error:
        raise Failure(f"do {api_name}: expected error {catch!r}, got {response.status}\n"
                      f"{response.describe()}",
                      cause=f"{api_name} ({template}): expected {catch_label(catch)}, got {response.status}")
    if method != "HEAD" and not isinstance(response.body, dict):
        # OpenSearch answers every error with a JSON object; a bare 404 or 405 is a route the
        # server lacks, which must not pass for "document missing".
        raise Failure(f"do {api_name}: expected {catch!r}, got {response.status} without a JSON "
                      f"body\n{response.describe()}",
                      cause=f"{api_name} ({template}): {response.status} without a JSON body: no such route?")
    if catch in CATCH_STATUS:
        if response.status != CATCH_STATUS[catch]:
            raise Failure(f"do {api_name}: expected {catch} ({CATCH_STATUS[catch]}), got "
                          f"{response.status}\n{response.describe()}",
                          cause=f"{api_name} ({template}): expected {CATCH_STATUS[catch]}, got {response.status}")
    elif catch == "request":
        if response.status in CATCH_STATUS.values():
            raise Failure(f"do {api_name}: expected an unnamed 4xx/5xx, got {response.status}\n"
                          f"{response.describe()}",
                          cause=f"{api_name} ({template}): expected an unnamed 4xx/5xx, got {response.status}")
    elif is_regex(catch):
        if not regex_of(catch).search(response.text):
            raise Failure(f"do {api_name}: error body does not match {catch}\n{response.describe()}",
                          cause=f"{api_name} ({template}): error message differs ({response.status})")
    else:
        raise Failure(f"do: unknown catch {catch!r}", cause="runner: unknown catch")


def warning_text(header):
    """`299 OpenSearch-2.19.0 "the message" "date"` → `the message`."""
    quoted = re.search(r'"((?:[^"\\]|\\.)*)"', header)
    return quoted.group(1).replace('\\"', '"') if quoted else header


def catch_label(catch):
    if catch in CATCH_STATUS:
        return str(CATCH_STATUS[catch])
    return "an error" if is_regex(catch) else catch


def error_cause(api_name, template, response):
    """`indices.create (PUT /{index}): 400 unsupported type "ip"`: the API, the status and
    the error's reason with what varies between cases (field names, numbers) taken out."""
    why = ""
    error = response.body.get("error") if isinstance(response.body, dict) else None
    if isinstance(error, dict):
        why = str(error.get("reason") or error.get("type") or "")
    elif isinstance(error, str):
        why = error
    elif not isinstance(response.body, dict):
        why = "without a JSON body: no such route?"
    why = re.sub(r"\s*\([^)]*\)", "", why)
    why = re.sub(r"properties\.[^.\s:]+", "properties.*", why)
    why = re.sub(r"^aggs\.[^\s:]+", "aggs.*", why)
    why = re.sub(r'\b(tenant|index) ("[^"]*"|\[[^\]]*\])', r"\1 …", why)
    why = re.sub(r"\d+", "N", why)
    return f"{api_name} ({template}): {response.status} {excerpt(why, 100)}".rstrip()


def assertion_cause(context, kind, path):
    api = "response"
    if context.response is not None:
        api = f"{context.response.method} {re.sub(r'[?].*', '', context.response.target)}"
    shape = re.sub(r"\.\d+(?=\.|$)", ".N", str(path))
    return f"wrong answer: {kind} {shape} after {api_template(api)}"


def api_template(request):
    """`POST /test_1/_search` → `POST /{index}/_search` for grouping."""
    method, _, target = request.partition(" ")
    parts = target.split("/")
    out = []
    for i, part in enumerate(parts):
        if i == 1 and part and not part.startswith("_"):
            out.append("{index}")
        elif i >= 2 and part and not part.startswith("_") and out[-1] in ("_doc", "_create", "_update", "_source"):
            out.append("{id}")
        else:
            out.append(part)
    return f"{method} {'/'.join(out)}"


def match_step(context, argument, section):
    path, expected = single_pair(argument, "match")
    expected = context.substitute(expected)
    actual = context.actual(path)
    if is_regex(expected):
        if actual is MISSING or not regex_of(expected, re.X).search(stash_text(actual)):
            raise Failure(f"match {path}: {show(actual)} does not match {expected.strip()}",
                          cause=assertion_cause(context, "match", path))
        return
    if expected is None and actual is MISSING:
        # The Java runner reads a missing key as null (`ObjectPath` gives null for it) and
        # `match: {path: null}` asserts null: so a key sent as null and not returned passes.
        return
    if actual is MISSING or not equal(actual, expected):
        where = first_difference(actual, expected) if actual is not MISSING else "missing"
        raise Failure(f"match {path}: {where}", cause=assertion_cause(context, "match", path))


def length_step(context, argument, section):
    path, expected = single_pair(argument, "length")
    expected = context.substitute(expected)
    actual = context.actual(path)
    if not isinstance(actual, (list, dict, str)) or len(actual) != expected:
        size = len(actual) if isinstance(actual, (list, dict, str)) else show(actual)
        raise Failure(f"length {path}: {size}, expected {expected}",
                      cause=assertion_cause(context, "length", path))


def is_true_step(context, path, section):
    actual = context.actual(path)
    if not truthy(actual):
        raise Failure(f"is_true {path}: {show(actual)}", cause=assertion_cause(context, "is_true", path))


def is_false_step(context, path, section):
    actual = context.actual(path)
    if truthy(actual):
        raise Failure(f"is_false {path}: {show(actual)}", cause=assertion_cause(context, "is_false", path))


def compare_step(name, holds):
    def step(context, argument, section):
        path, expected = single_pair(argument, name)
        expected = context.substitute(expected)
        actual = context.actual(path)
        comparable = (is_number(actual) and is_number(expected)) or (
            isinstance(actual, str) and isinstance(expected, str))
        if not comparable or not holds(actual, expected):
            raise Failure(f"{name} {path}: {show(actual)} vs {expected}",
                          cause=assertion_cause(context, name, path))
    return step


def contains_step(context, argument, section):
    path, expected = single_pair(argument, "contains")
    expected = context.substitute(expected)
    actual = context.actual(path)
    if not isinstance(actual, list) or not contains(actual, expected):
        raise Failure(f"contains {path}: {show(actual)} lacks {show(expected)}",
                      cause=assertion_cause(context, "contains", path))


def set_step(context, argument, section):
    if not isinstance(argument, dict) or not argument:
        raise Failure(f"set: malformed {argument!r}", cause="runner: malformed step")
    for path, name in argument.items():
        actual = context.actual(path)
        if actual is MISSING:
            raise Failure(f"set {path}: not in the response", cause=assertion_cause(context, "set", path))
        context.stash[name] = actual


def transform_and_set_step(context, argument, section):
    for name, transform in argument.items():
        found = re.fullmatch(r"#base64EncodeCredentials\(([^,]+),([^)]+)\)", str(transform).strip())
        if not found:
            raise Failure(f"transform_and_set: unknown transform {transform!r}",
                          cause="runner: unknown transform")
        user, password = (context.actual(p.strip()) for p in found.groups())
        if user is MISSING or password is MISSING:
            raise Failure("transform_and_set: credentials not in the response",
                          cause=assertion_cause(context, "transform_and_set", name))
        context.stash[name] = base64.b64encode(
            f"{stash_text(user)}:{stash_text(password)}".encode()).decode()


STEP_HANDLERS = {
    "do": do_step,
    "match": match_step,
    "length": length_step,
    "is_true": is_true_step,
    "is_false": is_false_step,
    "gt": compare_step("gt", lambda a, e: a > e),
    "gte": compare_step("gte", lambda a, e: a >= e),
    "lt": compare_step("lt", lambda a, e: a < e),
    "lte": compare_step("lte", lambda a, e: a <= e),
    "contains": contains_step,
    "set": set_step,
    "transform_and_set": transform_and_set_step,
}


# --- cases -----------------------------------------------------------------------------------

class Case:
    def __init__(self, directory, file, name, setup, teardown, steps):
        self.directory = directory
        self.file = file
        self.name = name
        self.setup = setup
        self.teardown = teardown
        self.steps = steps
        self.id = f"{directory}/{file}/{name}"


def load_cases(test_root, directory):
    cases = []
    path = os.path.join(test_root, directory)
    for file in sorted(os.listdir(path)):
        if not file.endswith((".yml", ".yaml")):
            continue
        documents = load_yaml_documents(os.path.join(path, file))
        setup, teardown, tests = [], [], []
        for document in documents:
            for name, steps in document.items():
                if name == "setup":
                    setup = steps or []
                elif name == "teardown":
                    teardown = steps or []
                else:
                    tests.append((str(name), steps or []))
        for name, steps in tests:
            cases.append(Case(directory, file, name, setup, teardown, steps))
    return cases


class Result:
    def __init__(self, case, outcome, detail="", cause=""):
        self.case = case
        self.outcome = outcome  # pass, fail, skip, error
        self.detail = detail
        self.cause = cause


def run_case(server, apis, global_params, case):
    reason = skip_reason(case.setup) or skip_reason(case.steps) or skip_reason(case.teardown)
    if reason:
        return Result(case, "skip", reason)
    context = Context(server, apis, global_params, time.monotonic() + CASE_TIMEOUT_SECONDS)
    outcome = None
    try:
        try:
            run_steps(context, case.setup, "setup")
        except Failure as failure:
            raise Failure(f"in setup: {failure}", cause=failure.cause) from None
        run_steps(context, case.steps, "test")
        if context.steps_run == 0:
            raise Failure("the case has no steps", cause="runner: empty case")
        outcome = Result(case, "pass")
    except Failure as failure:
        outcome = Result(case, "fail", str(failure), failure.cause or "unknown")
    except Exception as error:  # a runner bug is a failure, never a pass
        outcome = Result(case, "error", f"runner error: {error.__class__.__name__}: {error}",
                         "runner error")
    try:
        context.deadline = time.monotonic() + CASE_TIMEOUT_SECONDS
        run_steps(context, case.teardown, "teardown")
    except Failure as failure:
        if outcome.outcome == "pass":
            outcome = Result(case, "fail", f"in teardown: {failure}", failure.cause or "unknown")
    except Exception as error:
        if outcome.outcome == "pass":
            outcome = Result(case, "error", f"runner error in teardown: {error}", "runner error")
    if not server.alive():
        server.crashes.append((case.id, server.log_tail()))
        outcome = Result(case, "error", f"quarry serve exited during the case:\n{server.log_tail()}",
                         "quarry serve crashed")
        server.restart()
        return outcome
    try:
        server.wipe()
    except (Failure, RuntimeError) as error:
        server.restart()
        if outcome.outcome == "pass":
            outcome = Result(case, "error", f"wiping after the case: {error}", "wipe failed")
    return outcome


# --- lists: skip.txt and known-failures.txt ------------------------------------------------

class PatternList:
    """Lines `PATTERN  # reason`: a test id, a file or directory prefix (`search/10_x.yml`,
    `scroll`), or a glob (`search/*/nested*`)."""

    def __init__(self, path):
        self.path = path
        self.entries = []  # (pattern, reason)
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    line = line.rstrip("\n")
                    if not line.strip() or line.lstrip().startswith("#"):
                        continue
                    pattern, _, reason = line.partition("  # ")
                    self.entries.append((pattern.strip(), reason.strip()))

    def reason(self, test_id):
        for pattern, reason in self.entries:
            if matches(pattern, test_id):
                return reason or "no reason given"
        return None


def matches(pattern, test_id):
    # The lists' lines are stripped, so a test name's own trailing blanks are not compared.
    test_id = test_id.rstrip()
    if test_id == pattern or test_id.startswith(pattern.rstrip("/") + "/"):
        return True
    return any(c in pattern for c in "*?") and fnmatch.fnmatchcase(test_id, pattern)


def write_known_failures(path, results, known):
    """Rewrites the list with the failures of this run, grouped by reason (the one the list
    gave, else the cause the runner saw); entries for cases not run are kept."""
    ran = {r.case.id for r in results}
    by_reason = collections.defaultdict(list)
    for pattern, reason in known.entries:
        if not any(matches(pattern, test_id) for test_id in ran):
            by_reason[reason].append(pattern)
    for result in results:
        if result.outcome in ("fail", "error"):
            reason = known.reason(result.case.id) or result.cause or "reason: unknown"
            by_reason[reason].append(result.case.id)
    with open(path, "w", encoding="utf-8") as f:
        f.write(
            "# OpenSearch REST YAML cases that fail against Quarry today, grouped by cause: the\n"
            "# to-do list. Format: `TEST-ID  # reason` (see run.py). A case listed here that fails\n"
            "# does not fail the run; one that passes is reported so the line can go.\n"
            "# Regenerate: run.py ... --update-known-failures (keeps the reasons written here).\n")
        for reason in sorted(by_reason, key=lambda r: (-len(by_reason[r]), r)):
            f.write(f"\n# {reason} ({len(by_reason[reason])})\n")
            for test_id in sorted(by_reason[reason]):
                f.write(f"{test_id}  # {reason}\n")


# --- reporting -------------------------------------------------------------------------------

def table(results, directories):
    rows = []
    totals = collections.Counter()
    for directory in directories:
        counts = collections.Counter(
            "fail" if r.outcome == "error" else r.outcome
            for r in results if r.case.directory == directory)
        run = counts["pass"] + counts["fail"]
        rows.append((directory, run, counts["pass"], counts["fail"], counts["skip"]))
        totals.update(counts)
    run = totals["pass"] + totals["fail"]
    rows.append(("total", run, totals["pass"], totals["fail"], totals["skip"]))
    return [(d, r, p, f, s, f"{100.0 * p / r:.1f}" if r else "-") for d, r, p, f, s in rows]


def format_table(rows):
    header = ("directory", "run", "passed", "failed", "skipped", "pass %")
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w)
                       for i, (x, w) in enumerate(zip(row, widths))) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(len(lines) - 1, lines[1])
    return "\n".join(lines)


def markdown(rows, failure_reasons, command):
    out = [f"Command: `{command}`", "",
           "| directory | run | passed | failed | skipped | pass % |",
           "|---|---:|---:|---:|---:|---:|"]
    for directory, run, passed, failed, skipped, percent in rows:
        name = f"**{directory}**" if directory == "total" else f"`{directory}`"
        out.append(f"| {name} | {run} | {passed} | {failed} | {skipped} | {percent} |")
    out += ["", "Failures by cause (from known-failures.txt, else the runner's reading):", "",
            "| cases | cause |", "|---:|---|"]
    causes = failure_reasons.most_common()
    for reason, count in causes[:MARKDOWN_CAUSES]:
        out.append(f"| {count} | {reason.replace('|', '&#124;')} |")
    rest = causes[MARKDOWN_CAUSES:]
    if rest:
        out.append(f"| {sum(c for _, c in rest)} | {len(rest)} other causes, each in "
                   "compat/opensearch/known-failures.txt |")
    return "\n".join(out) + "\n"


# The causes a markdown report lists (the rest are summed in one line).
MARKDOWN_CAUSES = 25


# --- main ------------------------------------------------------------------------------------

def internal_checks():
    """The runner's pieces that need no server, one line per case; returns what is wrong."""
    yaml_text = "on: yes\nd: 2016-01-01\no: 010\nf: 1.0\ne: 1e3\nt: true\nn: null\n"
    cases = [
        (split_path(r"a.b\.c.0"), ["a", "b.c", "0"]),
        (split_path(""), []),
        (yaml.load(yaml_text, Loader=SuiteLoader),
         {"on": "yes", "d": "2016-01-01", "o": 10, "f": 1.0, "e": 1000.0, "t": True, "n": None}),
        (version_skipped(" - 6.99.99"), False),
        (version_skipped(" - 7.10.2"), False),
        (version_skipped(" - 2.19.99"), True),
        (version_skipped("- 2.19.0"), True),
        (version_skipped("2.19.0 - "), True),
        (version_skipped("3.0.0 - "), False),
        (version_skipped("2.0.0 - 2.18.99"), False),
        (version_skipped("1.0.0 - 1.9.99, 2.10.0 - 2.19.1"), True),
        (version_skipped("all"), True),
        (equal(1, 1.0), True),
        (equal(True, 1), False),
        (equal(0, False), False),
        (equal("1", 1), False),
        (equal({"a": 1}, {"a": 1, "b": 2}), False),
        (equal({"a": [1, {"b": 2.0}]}, {"a": [1, {"b": 2}]}), True),
        (equal([1, 2], [2, 1]), False),
        (truthy(0), False), (truthy("false"), False), (truthy([]), True), (truthy(MISSING), False),
        (bool(regex_of("/ ^ a \\d+ $ /", re.X).search("a12")), True),
        (matches("search/10_x.yml", "search/10_x.yml/a case"), True),
        (matches("search", "search.aggregation/10_x.yml/a case"), False),
        (matches("search/*/*geo*", "search/10_x.yml/on geo_point"), True),
        (api_template("POST /test_1/_doc/7"), "POST /{index}/_doc/{id}"),
        (api_template("GET /_search"), "GET /_search"),
    ]
    return [f"internal check {i}: got {got!r}, expected {want!r}"
            for i, (got, want) in enumerate(cases) if got != want]


def run_selftest(args, apis, global_params):
    """Each case's name says its expected outcome: `pass: ...`, `fail: ...` or `skip: ...`."""
    problems = internal_checks()
    for problem in problems:
        print("SELFTEST WRONG:", problem)
    server = Server(args.quarry)
    server.start()
    wrong = []
    total = 0
    try:
        server.wipe()
        for case in load_cases(HERE, "selftest"):
            if args.only and not matches_only(args.only, case.id):
                continue
            total += 1
            expected = case.name.split(":", 1)[0]
            result = run_case(server, apis, global_params, case)
            got = "fail" if result.outcome == "error" else result.outcome
            line = f"{got:4}  {case.id}" + (f"\n      {result.detail.splitlines()[0]}" if result.detail else "")
            if args.verbose or got != expected:
                print(line)
            if got != expected:
                wrong.append((case.id, expected, got, result.detail))
    finally:
        server.stop()
    for test_id, expected, got, detail in wrong:
        print(f"SELFTEST WRONG: {test_id}: expected {expected}, got {got}\n  {detail}")
    print(f"selftest: {total - len(wrong)}/{total} cases had the expected outcome, "
          f"{len(problems)} internal check(s) wrong")
    return 1 if wrong or problems or total == 0 else 0


def matches_only(pattern, test_id):
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(test_id, pattern)
    return pattern in test_id


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quarry", required=True, help="the quarry binary")
    parser.add_argument("--spec", required=True, help="a directory holding api/ and test/")
    parser.add_argument("--dirs", help="comma-separated test directories (default: the supported set)")
    parser.add_argument("--only", help="only test ids matching this glob (or containing this text)")
    parser.add_argument("--skip-list", default=os.path.join(HERE, "skip.txt"))
    parser.add_argument("--known-failures", default=os.path.join(HERE, "known-failures.txt"))
    parser.add_argument("--update-known-failures", action="store_true",
                        help="rewrite the known-failures list with this run's failures")
    parser.add_argument("--markdown", help="also write the table and failure causes here")
    parser.add_argument("--selftest", action="store_true", help="check the runner on selftest/*.yml")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args()

    api_dirs = [os.path.join(args.spec, "api")]
    if args.selftest:
        # Quarry's tenant API as one more "api", for cases that need an index with documents.
        api_dirs.append(os.path.join(HERE, "selftest", "api"))
    apis, global_params = load_apis(api_dirs)
    if args.selftest:
        return run_selftest(args, apis, global_params)

    directories = args.dirs.split(",") if args.dirs else DEFAULT_DIRS
    skips = PatternList(args.skip_list)
    known = PatternList(args.known_failures)
    test_root = os.path.join(args.spec, "test")
    cases = []
    for directory in directories:
        cases += [c for c in load_cases(test_root, directory)
                  if not args.only or matches_only(args.only, c.id)]

    server = Server(args.quarry)
    server.start()
    results = []
    started = time.monotonic()
    try:
        server.wipe()
        for case in cases:
            reason = skips.reason(case.id)
            if reason:
                result = Result(case, "skip", f"skip.txt: {reason}")
            else:
                result = run_case(server, apis, global_params, case)
            results.append(result)
            if args.verbose or (result.outcome in ("fail", "error") and not known.reason(case.id)):
                print(f"{result.outcome.upper():5} {case.id}", flush=True)
                if result.outcome != "pass" and result.detail and (args.verbose or result.outcome != "skip"):
                    for line in result.detail.splitlines():
                        print(f"      {line}")
    finally:
        server.stop()
    elapsed = time.monotonic() - started

    failed = [r for r in results if r.outcome in ("fail", "error")]
    regressions = [r for r in failed if not known.reason(r.case.id)]
    fixed = [r for r in results if r.outcome == "pass" and known.reason(r.case.id)]
    rows = table(results, directories)
    reasons = collections.Counter(known.reason(r.case.id) or r.cause or "unknown" for r in failed)

    print()
    print(format_table(rows))
    print(f"\n{len(results)} cases in {elapsed:.0f} s; server restarts: {server.restarts}")
    if server.crashes:
        print(f"\nquarry serve EXITED during {len(server.crashes)} case(s):")
        for test_id, log in server.crashes:
            print(f"  {test_id}\n{log}")
    if server.panics:
        print(f"\nquarry serve logged {len(server.panics)} panic(s):")
        for line in server.panics[:20]:
            print(f"  {excerpt(line, 300)}")
    if fixed:
        print(f"\n{len(fixed)} known failure(s) now pass (remove them from known-failures.txt):")
        for r in fixed:
            print(f"  {r.case.id}")
    if args.markdown:
        command = ("python3 compat/opensearch/run.py --quarry target/debug/quarry "
                   "--spec target/opensearch-rest-api-spec")
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(markdown(rows, reasons, command))
    if args.update_known_failures:
        write_known_failures(args.known_failures, results, known)
        print(f"\nwrote {args.known_failures} ({len(failed)} failures)")
        return 0
    if regressions:
        print(f"\n{len(regressions)} REGRESSION(S): failing, not in known-failures.txt:")
        for r in regressions:
            print(f"  {r.case.id}\n      {r.detail.splitlines()[0] if r.detail else ''}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
